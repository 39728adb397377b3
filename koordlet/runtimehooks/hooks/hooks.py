"""Stages, hook order and failure policy (upstream `hooks/hooks.go`).

Within a stage hooks run sorted by name (byte order); later hooks overwrite fields set by
earlier ones. With policy `Fail` the first error stops the stage and is returned along with what
the earlier hooks set; with `Ignore` it is logged and the rest run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from koordlet.runtimehooks.hooks import batchresource, cpuset, groupidentity
from koordlet.runtimehooks.protocol import HookRequest, Resources, Stage
from koordlet.runtimehooks.rule import Rules

logger = logging.getLogger(__name__)

HookFn = Callable[[HookRequest, Rules], Resources]


class FailurePolicy(StrEnum):
    FAIL = "Fail"
    IGNORE = "Ignore"


_REGISTERED: dict[Stage, dict[str, HookFn]] = {
    Stage.PRE_RUN_POD_SANDBOX: {
        batchresource.NAME: batchresource.batch_resource,
        cpuset.NAME: cpuset.cpuset,
        groupidentity.NAME: groupidentity.group_identity,
    },
    Stage.PRE_CREATE_CONTAINER: {
        batchresource.NAME: batchresource.batch_resource,
        cpuset.NAME: cpuset.cpuset,
    },
    Stage.PRE_UPDATE_CONTAINER_RESOURCES: {
        batchresource.NAME: batchresource.batch_resource,
        cpuset.NAME: cpuset.cpuset,
    },
}


def stage_hooks(stage: Stage) -> list[tuple[str, HookFn]]:
    return sorted(_REGISTERED.get(stage, {}).items())


def stages_with_hooks() -> list[Stage]:
    """The stages koordlet registers for in koordlet.json."""
    return [stage for stage in Stage if _REGISTERED.get(stage)]


@dataclass(slots=True)
class StageResult:
    resources: Resources = field(default_factory=Resources)
    error: Exception | None = None  # set only under policy Fail


def run_hooks(
    stage: Stage, req: HookRequest, rules: Rules, policy: FailurePolicy
) -> StageResult:
    result = StageResult()
    for name, hook in stage_hooks(stage):
        try:
            result.resources.merge(hook(req, rules))
        except Exception as exc:  # a hook's bug must not take the server down
            logger.error("hook %s failed in stage %s for pod %s/%s: %s",
                         name, stage, req.pod_namespace, req.pod_name, exc)
            if policy is FailurePolicy.FAIL:
                result.error = RuntimeError(f"hook {name} failed: {exc}")
                return result
    return result
