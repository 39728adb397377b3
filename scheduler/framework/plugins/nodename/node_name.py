"""NodeName: a pod that names a node (spec.nodeName) fits only that node.

Corresponds to kubernetes ``pkg/scheduler/framework/plugins/nodename`` (``NodeName``), v1.35
with SchedulerQueueingHints on: the only registered event is Node Add, for the named node.
The vectorised Filter is O(1) Python: nothing to do without spec.nodeName, else the one node
found through ``Snapshot.index``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import (
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from scheduler.framework.interface import EnqueueExtensions, FilterPlugin
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Status, unresolvable
from scheduler.framework.types import NodeInfo, PodInfo

NAME = "NodeName"
ERR_REASON = "node(s) didn't match the requested node name"


def fits(node_name: str, node: str) -> bool:
    return not node_name or node_name == node


class NodeName(FilterPlugin, EnqueueExtensions):
    name = NAME

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        return None if fits(pod.node_name, node_info.name) else unresolvable(ERR_REASON)

    def filter_nodes(self, state: CycleState, pod: PodInfo,
                     snapshot: Snapshot) -> np.ndarray | None:
        if not pod.node_name:
            return None
        mask = np.zeros(len(snapshot.node_infos), dtype=bool)
        i = snapshot.index.get(pod.node_name)
        if i is not None:
            mask[i] = True
        return None if mask.all() else mask

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD),
                                     is_schedulable_after_node_add)]


def is_schedulable_after_node_add(pod: dict[str, Any], old: Any, new: Any) -> QueueingHint:
    node_name = (pod.get("spec") or {}).get("nodeName") or ""
    added = (new.get("metadata") or {}).get("name", "")
    return QueueingHint.QUEUE if fits(node_name, added) else QueueingHint.QUEUE_SKIP
