"""Which victims matter more: priority first, then how long they have been running.

Corresponds to kube-scheduler ``pkg/scheduler/util`` (``MoreImportantPod``, ``GetPodStartTime``,
``GetEarliestPodStartTime``). Times are POSIX seconds; a pod without ``status.startTime``
(assumed, or bound but not started) counts as starting ``now``, as upstream.
"""

from __future__ import annotations

from collections.abc import Sequence

from api.meta import parse_time
from scheduler.framework.types import PodInfo


def pod_start_time(pod: PodInfo, now: float) -> float:
    start = (pod.pod.get("status") or {}).get("startTime")
    if start:
        try:
            return parse_time(start).timestamp()
        except ValueError:
            pass
    return now


def importance_key(pod: PodInfo, now: float) -> tuple[int, float]:
    """Sort key putting more important pods first (MoreImportantPod): higher priority, then
    the earlier start."""
    return -pod.priority, pod_start_time(pod, now)


def earliest_start_of_highest_priority(pods: Sequence[PodInfo], now: float) -> float:
    """The earliest start among the pods of the highest priority (GetEarliestPodStartTime)."""
    top = max(p.priority for p in pods)
    return min(pod_start_time(p, now) for p in pods if p.priority == top)
