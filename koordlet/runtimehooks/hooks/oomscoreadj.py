"""OOMScoreAdj hook (upstream `hooks/oomscoreadj`): a container's oom_score_adj target from
`koordinator.sh/oom-score-adj-spec`, else `koordinator.sh/oom-score-adj`."""

from __future__ import annotations

import logging

from api.errors import MalformedValueError
from api.extension.pod_qos import parse_oom_score_adj, parse_oom_score_adj_spec
from koordlet.runtimehooks.protocol import HookRequest, Resources
from koordlet.runtimehooks.rule import Rules

logger = logging.getLogger(__name__)

NAME = "OOMScoreAdj"


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
