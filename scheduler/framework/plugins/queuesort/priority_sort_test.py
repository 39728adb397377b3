from __future__ import annotations

import functools
from typing import Any

from scheduler.framework.plugins.queuesort.priority_sort import PrioritySort
from scheduler.framework.queue import QueuedPodInfo
from scheduler.frameworkext.testing import new_handle


def queued(name: str, priority: int | None, timestamp: float) -> QueuedPodInfo:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if priority is not None:
        spec["priority"] = priority
    pod = {"metadata": {"name": name, "namespace": "default", "uid": name}, "spec": spec}
    return QueuedPodInfo(pod=pod, key=f"default/{name}", uid=name, timestamp=timestamp)


def order(*pods: QueuedPodInfo) -> list[str]:
    less = PrioritySort(None, new_handle()).less

    def cmp(a: QueuedPodInfo, b: QueuedPodInfo) -> int:
        return -1 if less(a, b) else (1 if less(b, a) else 0)

    return [p.uid for p in sorted(pods, key=functools.cmp_to_key(cmp))]


def test_higher_priority_first_then_earlier() -> None:
    assert order(queued("low-early", 1, 1.0), queued("high-late", 10, 3.0),
                 queued("high-early", 10, 2.0), queued("unset", None, 0.5)) == [
        "high-early", "high-late", "low-early", "unset"]


def test_equal_pods_are_not_less_either_way() -> None:
    a, b = queued("a", 3, 1.0), queued("b", 3, 1.0)
    less = PrioritySort(None, new_handle()).less
    assert not less(a, b) and not less(b, a)
