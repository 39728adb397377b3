"""PrioritySort: activeQ pops higher-priority pods first, then those queued earlier.

Corresponds to kubernetes ``pkg/scheduler/framework/plugins/queuesort`` (``PrioritySort``).
``less`` takes the queue's QueuedPodInfo (duck-typed: ``pod_info``, ``pod``, ``timestamp``);
a pod's priority is ``spec.priority`` (0 when unset, as ``corev1helpers.PodPriority``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler.framework.interface import QueueSortPlugin
from scheduler.framework.types import PodInfo

if TYPE_CHECKING:
    from scheduler.framework.queue import QueuedPodInfo

NAME = "PrioritySort"


def pod_priority(queued: QueuedPodInfo) -> int:
    if isinstance(queued.pod_info, PodInfo):
        return queued.pod_info.priority
    return (queued.pod.get("spec") or {}).get("priority") or 0


class PrioritySort(QueueSortPlugin):
    name = NAME

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        pa, pb = pod_priority(a), pod_priority(b)
        return pa > pb or (pa == pb and a.timestamp < b.timestamp)
