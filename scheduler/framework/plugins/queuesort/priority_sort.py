"""PrioritySort: activeQ pops higher-priority pods first, then those queued earlier.

Corresponds to kubernetes ``pkg/scheduler/framework/plugins/queuesort`` (``PrioritySort``).
``less`` takes the queue's QueuedPodInfo; a pod's priority is ``spec.priority`` (0 when unset,
as ``corev1helpers.PodPriority``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler.framework.interface import QueueSortPlugin

if TYPE_CHECKING:
    from scheduler.framework.queue import QueuedPodInfo

NAME = "PrioritySort"


class PrioritySort(QueueSortPlugin):
    name = NAME

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        pa, pb = a.pod_info.priority, b.pod_info.priority
        return pa > pb or (pa == pb and a.timestamp < b.timestamp)
