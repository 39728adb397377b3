"""Which nodes count for a constraint: its nodeAffinityPolicy and nodeTaintsPolicy.

Corresponds to kube-scheduler ``plugins/podtopologyspread/common.go``
(``matchNodeInclusionPolicies``): with ``nodeAffinityPolicy: Honor`` (the default) only nodes
matching the pod's nodeSelector and required node affinity count, with ``nodeTaintsPolicy:
Honor`` only nodes whose NoSchedule/NoExecute taints the pod tolerates. The per-node answer
for every node of the snapshot is memoised (it depends only on node objects).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from pkg.util.nodeaffinity import (
    DO_NOT_SCHEDULE_EFFECTS,
    RequiredNodeAffinity,
    find_untolerated_taint,
)
from scheduler.framework.plugins.nodeaffinity.columns import required_mask
from scheduler.framework.plugins.podtopologyspread.common import HONOR, NAME, Constraint
from scheduler.framework.plugins.tainttoleration.taint_groups import taint_groups
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.types import NodeInfo

_NO_REQUIREMENT = RequiredNodeAffinity()


@dataclass(frozen=True, slots=True)
class NodeInclusion:
    """What of the incoming pod the policies read."""

    required: RequiredNodeAffinity
    tolerations: tuple[Mapping[str, Any], ...]
    # Stands for the tolerations in the snapshot memo.
    toleration_key: tuple[tuple[str, str, str, str], ...]

    @classmethod
    def of(cls, pod: Mapping[str, Any]) -> NodeInclusion:
        tolerations = tuple((pod.get("spec") or {}).get("tolerations") or ())
        key = tuple(sorted({(t.get("key") or "", t.get("operator") or "Equal",
                             t.get("value") or "", t.get("effect") or "")
                            for t in tolerations}))
        return cls(RequiredNodeAffinity.from_pod(pod), tolerations, key)

    def includes(self, c: Constraint, node_info: NodeInfo) -> bool:
        if (c.node_affinity_policy == HONOR
                and not self.required.matches(node_info.labels, node_info.name)):
            return False
        return c.node_taints_policy != HONOR or find_untolerated_taint(
            node_info.taints, self.tolerations, DO_NOT_SCHEDULE_EFFECTS) is None

    def mask(self, c: Constraint, snapshot: Snapshot) -> np.ndarray | None:
        """Per node of the snapshot, ``includes``; None when every node is included."""
        mask = None
        if c.node_affinity_policy == HONOR and self.required != _NO_REQUIREMENT:
            mask = required_mask(snapshot, self.required)
        if c.node_taints_policy == HONOR:
            groups = taint_groups(snapshot)
            if groups.any_with(DO_NOT_SCHEDULE_EFFECTS):
                tolerated = snapshot.memoized(
                    (NAME, "tolerated", self.toleration_key),
                    lambda: groups.tolerated(self.tolerations, DO_NOT_SCHEDULE_EFFECTS))
                mask = tolerated if mask is None else mask & tolerated
        return mask
