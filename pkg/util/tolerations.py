"""Does a pod's toleration tolerate a node's taint?

Corresponds to ``k8s.io/api/core/v1`` ``Toleration.ToleratesTaint`` and kubernetes
``pkg/apis/core/v1/helper`` ``TolerationsTolerateTaint``, used by the scheduler's
NodeUnschedulable and TaintToleration plugins and by the descheduler. Tolerations and taints
are the parsed JSON dicts of ``spec.tolerations`` and ``spec.taints``.

A toleration tolerates a taint when its effect is empty or equal to the taint's, its key is
empty or equal to the taint's, and its operator is ``Exists`` or ``Equal`` (the default) with
an equal value. Any other operator tolerates nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

EQUAL = "Equal"
EXISTS = "Exists"

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"

# The taint a cordoned node (spec.unschedulable) carries.
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"


def tolerates_taint(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    effect = toleration.get("effect") or ""
    if effect and effect != (taint.get("effect") or ""):
        return False
    key = toleration.get("key") or ""
    if key and key != (taint.get("key") or ""):
        return False
    operator = toleration.get("operator") or EQUAL
    if operator == EXISTS:
        return True
    if operator == EQUAL:
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def tolerations_tolerate_taint(tolerations: Iterable[Mapping[str, Any]] | None,
                               taint: Mapping[str, Any]) -> bool:
    return any(tolerates_taint(t, taint) for t in tolerations or ())
