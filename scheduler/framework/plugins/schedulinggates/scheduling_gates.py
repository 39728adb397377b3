"""SchedulingGates: a pod with spec.schedulingGates waits outside activeQ until they are gone.

Corresponds to kubernetes ``pkg/scheduler/framework/plugins/schedulinggates``, v1.35 with
SchedulerQueueingHints on: PreEnqueue rejects a gated pod as UnschedulableAndUnresolvable
("waiting for scheduling gates: [a b]", Go's %v of the names), and the pod's own
UpdatePodSchedulingGatesEliminated event lets it in again.
"""

from __future__ import annotations

from typing import Any

from scheduler.framework.events import (
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from scheduler.framework.interface import EnqueueExtensions, PreEnqueuePlugin
from scheduler.framework.status import Status, unresolvable
from scheduler.framework.types import PodInfo

NAME = "SchedulingGates"


class SchedulingGates(PreEnqueuePlugin, EnqueueExtensions):
    name = NAME

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        gates = pod.spec.get("schedulingGates")
        if not gates:
            return None
        names = " ".join(g.get("name", "") for g in gates)
        return unresolvable(f"waiting for scheduling gates: [{names}]")

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(
            ClusterEvent(POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
            is_schedulable_after_gates_eliminated)]


def is_schedulable_after_gates_eliminated(pod: dict[str, Any], old: Any,
                                          new: Any) -> QueueingHint:
    uid = (pod.get("metadata") or {}).get("uid")
    if (new.get("metadata") or {}).get("uid") != uid:
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE
