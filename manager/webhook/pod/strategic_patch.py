"""Strategic merge patch of a pod, for ClusterColocationProfile ``spec.patch``.

Corresponds to the ``strategicpatch.StrategicMergePatch`` call in upstream
``pkg/webhook/pod/mutating/cluster_colocation_profile.go``. Lists of the pod spec that have a
merge key upstream are merged element by element on it; every other list is replaced; a
``null`` value deletes the key, as in a merge patch.
"""

from __future__ import annotations

import copy
from typing import Any

# list field → merge key, as in k8s.io/api/core/v1 (patchMergeKey).
MERGE_KEYS = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name",
    "volumes": "name", "env": "name", "imagePullSecrets": "name", "volumeMounts": "mountPath",
    "ports": "containerPort", "hostAliases": "ip", "readinessGates": "conditionType",
}


def _merge_list(original: list[Any], patch: list[Any], key: str) -> list[Any]:
    out = copy.deepcopy(original)
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            out.append(copy.deepcopy(item))
            continue
        at = next((i for i, o in enumerate(out) if isinstance(o, dict) and
                   o.get(key) == item[key]), None)
        if at is None:
            out.append(copy.deepcopy(item))
        else:
            out[at] = strategic_merge(out[at], item)
    return out


def strategic_merge(original: Any, patch: Any) -> Any:
    """``original`` with ``patch`` applied; neither argument is modified."""
    if not isinstance(patch, dict) or not isinstance(original, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(original)
    for name, value in patch.items():
        if value is None:
            out.pop(name, None)
        elif name in MERGE_KEYS and isinstance(value, list) and \
                isinstance(out.get(name), list):
            out[name] = _merge_list(out[name], value, MERGE_KEYS[name])
        elif isinstance(value, dict) and isinstance(out.get(name), dict):
            out[name] = strategic_merge(out[name], value)
        else:
            out[name] = copy.deepcopy(value)
    return out


__all__ = ["strategic_merge"]
