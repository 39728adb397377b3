"""OOMScoreAdj hook (upstream `pkg/koordlet/runtimehooks/hooks/oomscoreadj`): a container's
oom_score_adj target from `koordinator.sh/oom-score-adj-spec`, else `koordinator.sh/oom-score-adj`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from api.errors import MalformedValueError
from api.extension.pod_qos import parse_oom_score_adj, parse_oom_score_adj_spec
from koordlet.runtimehooks.hooks.hooks import Level, RuntimeHook
from koordlet.runtimehooks.protocol import HookRequest, Resources

if TYPE_CHECKING:
    from koordlet.runtimehooks.rule import Rules

logger = logging.getLogger(__name__)


def oom_score_adj(req: HookRequest, rules: Rules) -> Resources:
    """Out-of-range or unparsable values are skipped, as upstream (logged, not an error)."""
    if req.is_pod:
        return Resources()
    try:
        spec = parse_oom_score_adj_spec(req.annotations)
        target = spec.get(req.container_name or "") if spec is not None else None
        if target is None:
            target = parse_oom_score_adj(req.annotations)
    except MalformedValueError as exc:
        logger.info("skip oom_score_adj of %s/%s: %s", req.pod_namespace, req.pod_name, exc)
        return Resources()
    return Resources(oom_score_adj=target)


# Reconciler only, as upstream: the value goes to the processes of a running container.
HOOK = RuntimeHook(name="OOMScoreAdj", fn=oom_score_adj, levels=frozenset({Level.CONTAINER}))
