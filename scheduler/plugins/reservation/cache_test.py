"""Tests of the Reservation cache: owner index, consumers (also seen before their
Reservation), what the scheduler cache is told, allocate-once matchability."""

from __future__ import annotations

from typing import Any

from api.extension.reservation import ANNOTATION_RESERVATION_ALLOCATED
from pkg.util.podresources import pod_requests
from scheduler.framework.types import PodInfo
from scheduler.plugins.reservation.cache import ReservationCache
from scheduler.plugins.reservation.testing import make_pod, make_reservation

GI = 1024**3


class FakeAdapter:
    """Records what the scheduler cache is told, by reserve pod key."""

    def __init__(self) -> None:
        self.pods: dict[str, dict[str, int]] = {}
        self.cache = self

    def _put(self, pod: dict[str, Any]) -> None:
        self.pods[pod["metadata"]["name"]] = pod_requests(pod)

    def responsible_for(self, pod: Any) -> bool:
        return True

    def add_pod_to_cache(self, pod: dict[str, Any]) -> None:
        self._put(pod)

    def update_pod_in_cache(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self._put(new)

    def update_pod(self, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
        self._put(new)

    def delete_pod_from_cache(self, obj: Any) -> None:
        del self.pods[obj["metadata"]["name"]]

    def is_assumed(self, key: str) -> bool:
        return False


def consumer(name: str, reservation: str, cpu: str = "1") -> dict[str, Any]:
    return make_pod(name, cpu=cpu, memory="1Gi", labels={"app": "web"}, node="n1", annotations={
        ANNOTATION_RESERVATION_ALLOCATED: f'{{"name":"{reservation}","uid":"r-{reservation}"}}'})


def test_matching_uses_the_owner_index() -> None:
    cache = ReservationCache()
    cache.update_reservation(make_reservation("web", node="n1", owner_labels={"app": "web"}))
    cache.update_reservation(make_reservation("db", node="n2", owner_labels={"app": "db"}))
    web = PodInfo(make_pod("w", labels={"app": "web", "tier": "x"}))
    assert [r.name for r in cache.matching(web)] == ["web"]
    assert cache.matching(PodInfo(make_pod("o", labels={"app": "other"}))) == []
    assert [r.name for r in cache.on_node("n2")] == ["db"]


def test_the_scheduler_cache_holds_what_is_left_of_a_reservation() -> None:
    cache, adapter = ReservationCache(), FakeAdapter()
    cache.adapter = adapter  # type: ignore[assignment]
    cache.update_reservation(make_reservation("web", node="n1", allocate_once=False))
    assert adapter.pods["r-web"] == {"cpu": 4000, "memory": 8 * GI}
    cache.on_pod(consumer("c1", "web", cpu="3"))
    assert adapter.pods["r-web"] == {"cpu": 1000, "memory": 7 * GI}
    cache.on_pod(consumer("c2", "web", cpu="2"))  # beyond the Reservation: never below 0
    assert adapter.pods["r-web"] == {"cpu": 0, "memory": 6 * GI}
    cache.on_pod_delete(consumer("c1", "web"))
    assert adapter.pods["r-web"] == {"cpu": 2000, "memory": 7 * GI}
    info = cache.get("r-web")
    assert info is not None and info.allocated == {"cpu": 2000, "memory": GI}


def test_consumers_seen_before_their_reservation_count() -> None:
    cache = ReservationCache()
    cache.on_pod(consumer("c1", "web"))
    cache.update_reservation(make_reservation("web", node="n1"))
    info = cache.get("r-web")
    assert info is not None and list(info.assigned) == ["uid-c1"]
    # Allocate-once and consumed: no longer for anyone.
    assert not info.matchable()
    assert cache.matching(PodInfo(make_pod("w", labels={"app": "web"}))) == []


def test_a_pending_pod_update_keeps_an_assumed_consumer() -> None:
    cache = ReservationCache()
    cache.update_reservation(make_reservation("web", node="n1"))
    cache.assign("r-web", "uid-w", {"cpu": 1000})
    cache.on_pod(make_pod("w", labels={"app": "web"}))  # still pending in the informer
    info = cache.get("r-web")
    assert info is not None and list(info.assigned) == ["uid-w"]
    cache.unassign("uid-w")
    assert cache.get("r-web").assigned == {}  # type: ignore[union-attr]


def test_a_reservation_no_longer_available_leaves_the_caches() -> None:
    cache, adapter = ReservationCache(), FakeAdapter()
    cache.adapter = adapter  # type: ignore[assignment]
    cache.update_reservation(make_reservation("web", node="n1"))
    cache.update_reservation(make_reservation("web", node="n1", phase="Failed"))
    assert adapter.pods == {} and len(cache) == 0
    assert cache.matching(PodInfo(make_pod("w", labels={"app": "web"}))) == []
