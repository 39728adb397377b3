"""NodeUnschedulable: cordoned nodes (spec.unschedulable) take only pods that tolerate it.

Corresponds to kubernetes ``pkg/scheduler/framework/plugins/nodeunschedulable``, v1.35 with
SchedulerQueueingHints on. A pod tolerating the ``node.kubernetes.io/unschedulable:NoSchedule``
taint also tolerates ``spec.unschedulable``; any other pod is rejected as
UnschedulableAndUnresolvable. The vectorised Filter reads the cordoned-node mask from the
snapshot memo (it depends on node objects only) and the pod's verdict from its memo.

Registered events: Node Add and UpdateNodeTaint (a node added schedulable, or uncordoned) and
Pod UpdatePodToleration (the pod itself now tolerating the taint).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pkg.util.nodeaffinity import NO_SCHEDULE, tolerates
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from scheduler.framework.interface import EnqueueExtensions, FilterPlugin
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Status, unresolvable
from scheduler.framework.types import NodeInfo, PodInfo

NAME = "NodeUnschedulable"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
_UNSCHEDULABLE_TAINT = {"key": TAINT_NODE_UNSCHEDULABLE, "effect": NO_SCHEDULE}


def tolerates_unschedulable(pod: dict[str, Any]) -> bool:
    return tolerates((pod.get("spec") or {}).get("tolerations"), _UNSCHEDULABLE_TAINT)


def _unschedulable(node: Any) -> bool:
    return bool((node.get("spec") or {}).get("unschedulable"))


def _schedulable(snapshot: Snapshot) -> np.ndarray | None:
    cordoned = np.array([ni.unschedulable for ni in snapshot.node_infos], dtype=bool)
    return ~cordoned if cordoned.any() else None


class NodeUnschedulable(FilterPlugin, EnqueueExtensions):
    name = NAME

    def _tolerates(self, pod: PodInfo) -> bool:
        verdict = pod.memo.get(self.name)
        if verdict is None:
            verdict = pod.memo[self.name] = tolerates_unschedulable(pod.pod)
        return verdict

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        if not node_info.unschedulable or self._tolerates(pod):
            return None
        return unresolvable(ERR_REASON_UNSCHEDULABLE)

    def filter_nodes(self, state: CycleState, pod: PodInfo,
                     snapshot: Snapshot) -> np.ndarray | None:
        # The schedulable-node mask, None when no node is cordoned (the common case: no
        # reduction over every node per pod).
        schedulable = snapshot.memoized((self.name, "schedulable"), lambda: _schedulable(
            snapshot))
        if schedulable is None or self._tolerates(pod):
            return None
        return schedulable

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                                 is_schedulable_after_node_change),
            ClusterEventWithHint(ClusterEvent(POD, ActionType.UPDATE_POD_TOLERATION),
                                 is_schedulable_after_pod_toleration_change),
        ]


def is_schedulable_after_node_change(pod: dict[str, Any], old: Any, new: Any) -> QueueingHint:
    if not _unschedulable(new) and (old is None or _unschedulable(old)):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def is_schedulable_after_pod_toleration_change(pod: dict[str, Any], old: Any,
                                               new: Any) -> QueueingHint:
    same = (new.get("metadata") or {}).get("uid") == (pod.get("metadata") or {}).get("uid")
    if same and tolerates_unschedulable(new):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
