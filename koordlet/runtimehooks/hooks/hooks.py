"""What a hook declares, and how a stage runs the hooks (upstream `hooks/hooks.go`, with the
levels of `reconciler/reconciler.go` and the parse functions of `rule/rule.go`).

Each hook's module declares one :class:`RuntimeHook`: its upstream name, the proxy stages it runs
at, the levels the reconciler applies it at (kube-QoS dirs, pods, containers; and, for a hook
upstream registers with `RegisterHostAppReconciler`, its function for host applications), and
how it updates its part of the node-wide :class:`Rules` from NodeSLO and node metadata.
`koordlet.runtimehooks.registry` lists them.

Hooks run in the order they are given (the registry's: by name, byte order); later hooks
overwrite fields set by earlier ones. With policy `Fail` the first error stops the stage and is
returned along with what the earlier hooks set; with `Ignore` it is logged and the rest run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from api.extension.objects import KubeDict
from api.extension.qos import KubeQoSClass
from api.slo.v1alpha1 import NodeSLOSpec
from koordlet.runtimehooks.protocol import HookRequest, HostAppRequest, Resources, Stage

if TYPE_CHECKING:
    # rule.Rules is made of the hooks' own rules, so it imports the hook modules.
    from koordlet.runtimehooks.rule import Rules

logger = logging.getLogger(__name__)


class FailurePolicy(StrEnum):
    FAIL = "Fail"
    IGNORE = "Ignore"


class Level(StrEnum):
    """Where the reconciler applies a hook to running pods (upstream `ReconcilerLevel`)."""

    KUBE_QOS = "kubeqos"
    POD = "pod"
    CONTAINER = "container"


# The stages whose requests carry the pod's or a container's resources.
RESOURCE_STAGES = frozenset({Stage.PRE_RUN_POD_SANDBOX, Stage.PRE_CREATE_CONTAINER,
                             Stage.PRE_UPDATE_CONTAINER_RESOURCES})


@dataclass(slots=True, frozen=True)
class RuntimeHook:
    """A hook as its module declares it. ``host_app`` is what the reconciler applies to each
    host application's cgroup. ``on_node_slo`` and ``on_node_metadata`` update the hook's part
    of the rules and say whether it changed; ``kube_qos`` gives the values of a kube-QoS dir,
    for a hook with the ``KUBE_QOS`` level."""

    name: str
    fn: Callable[[HookRequest, Rules], Resources]
    stages: frozenset[Stage] = frozenset()
    levels: frozenset[Level] = frozenset()
    host_app: Callable[[HostAppRequest, Rules], Resources] | None = None
    on_node_slo: Callable[[Rules, NodeSLOSpec], bool] | None = None
    on_node_metadata: Callable[[Rules, KubeDict], bool] | None = None
    kube_qos: Callable[[KubeQoSClass, Rules], Resources] | None = None


def stages_with_hooks(hooks: Collection[RuntimeHook]) -> list[Stage]:
    """The stages koordlet registers for in koordlet.json, in `Stage` order."""
    return [stage for stage in Stage if any(stage in hook.stages for hook in hooks)]


@dataclass(slots=True)
class StageResult:
    resources: Resources = field(default_factory=Resources)
    error: Exception | None = None  # set only under policy Fail


def run_hooks(hooks: Collection[RuntimeHook], stage: Stage, req: HookRequest, rules: Rules,
              policy: FailurePolicy) -> StageResult:
    result = StageResult()
    for hook in hooks:
        if stage not in hook.stages:
            continue
        try:
            result.resources.merge(hook.fn(req, rules))
        except Exception as exc:  # a hook's bug must not take the server down
            logger.error("hook %s failed in stage %s for pod %s/%s: %s",
                         hook.name, stage, req.pod_namespace, req.pod_name, exc)
            if policy is FailurePolicy.FAIL:
                result.error = RuntimeError(f"hook {hook.name} failed: {exc}")
                return result
    return result
