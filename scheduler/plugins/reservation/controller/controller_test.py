"""The Reservation controller against the embedded API server, time on a fake clock: upstream's
controller_test.go and garbage_collection_test.go cases (finished Reservations left alone;
expiry by ttl, by expires and by a missing node, a pending one included; the next look in 3 to
15 s; currentOwners/allocated synced and allocate-once Succeeded, with the phase and utilization
gauges; GC of what finished a day ago or lost its node), plus ttl 0, reusable Reservations, and
a status write that loses a race."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from api.scheduling.v1alpha1.reservation import Reservation
from pkg.client.errors import is_not_found
from pkg.client.informers import SharedInformerFactory
from pkg.client.resources import NODES, PODS, RESERVATIONS, Resource
from pkg.client.rest import Client
from pkg.controller.controller import Result
from pkg.util.clock import FakeClock
from pkg.util.reservation import (
    set_reservation_expired,
    set_reservation_succeeded,
)
from scheduler.apis.config.koord_args import ReservationArgs
from scheduler.metrics.metrics import SchedulerMetrics
from scheduler.plugins.reservation.controller.controller import (
    MAX_RETRY_AFTER_SECONDS,
    MIN_RETRY_AFTER_SECONDS,
    ReservationController,
    next_sync_time,
)
from scheduler.plugins.reservation.controller.testing import (
    available,
    create_consumer,
    create_reservation,
)
from test.apiserver import ServerHandle, start
from test.e2e.cluster import install_crds, wait_for

NODE = "test-node"
DAY = 24 * 3600


def _sample(metrics: SchedulerMetrics, metric: str, labels: dict[str, str]) -> float | None:
    gauge = {"scheduler_reservation_status_phase": metrics.reservation_status_phase,
             "scheduler_reservation_resource_allocated": metrics.reservation_resource_allocated}
    for family in gauge[metric].collect():
        for sample in family.samples:
            if sample.labels == labels:
                return float(sample.value)
    return None


class RacingClient:
    """The real client, except that before the first status write someone else updates the
    Reservation (so that write meets a 409 Conflict)."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.raced = 0

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Any:
        return self.client.get(resource, name, namespace)

    def update_status(self, resource: Resource, obj: Any, namespace: str | None = None) -> Any:
        if not self.raced:
            self.raced += 1
            self.client.patch(RESERVATIONS, obj.metadata.name,
                              {"metadata": {"labels": {"touched": "yes"}}})
        return self.client.update_status(resource, obj, namespace)

    def delete(self, resource: Resource, name: str, namespace: str | None = None) -> Any:
        return self.client.delete(resource, name, namespace)


@dataclass
class Env:
    srv: ServerHandle
    client: Client
    clock: FakeClock
    ctl: ReservationController
    metrics: SchedulerMetrics

    def gauge(self, metric: str, **labels: str) -> float | None:
        return _sample(self.metrics, metric, labels)

    def get(self, name: str) -> dict[str, Any]:
        return self.client.get(RESERVATIONS, name)

    def exists(self, name: str) -> bool:
        try:
            self.get(name)
        except Exception as err:  # noqa: BLE001 - only NotFound is expected
            if is_not_found(err):
                return False
            raise
        return True

    def cached(self, name: str) -> None:
        """Wait until the controller's informers hold the server's state."""
        def fresh() -> bool:
            held = self.ctl.reservations.indexer.get_by_key(name)
            stored = self.get(name)["metadata"]["resourceVersion"]
            return held is not None and held.metadata.resource_version == stored
        wait_for(fresh, 10, what=f"Reservation {name} in the informer cache")

    def pods_cached(self, count: int) -> None:
        wait_for(lambda: len(self.ctl.pods.indexer.list()) == count, 10,
                 what=f"{count} pods in the informer cache")

    def sync(self, name: str) -> Result | None:
        self.cached(name)
        return self.ctl.sync(name)

    def phase(self, name: str) -> str:
        return str((self.get(name).get("status") or {}).get("phase"))

    def ready(self, name: str) -> dict[str, Any]:
        return next(c for c in self.get(name)["status"]["conditions"] if c["type"] == "Ready")


def make_env(client_wrapper: Any = None) -> Iterator[Env]:
    srv = start()
    client = Client.from_kubeconfig(srv.kubeconfig, qps=-1)
    install_crds(client)
    client.create(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}})
    factory = SharedInformerFactory(client)
    # The fake clock starts at the server's time: Reservations are created "now".
    clock = FakeClock(start=time.time())
    metrics = SchedulerMetrics(CollectorRegistry())
    ctl = ReservationController(client_wrapper(client) if client_wrapper else client, factory,
                                ReservationArgs(gc_duration_seconds=DAY), clock, metrics)
    factory.start()
    assert factory.wait_for_cache_sync(10)
    try:
        yield Env(srv, client, clock, ctl, metrics)
    finally:
        factory.shutdown()
        client.close()
        srv.stop()


@pytest.fixture
def env() -> Iterator[Env]:
    yield from make_env()


def test_failed_or_succeeded_reservations_are_left_alone(env: Env) -> None:
    failed = create_reservation(env.client, "failed", ttl="1m",
                                status={"phase": "Failed", "nodeName": "missing-node"})
    succeeded = create_reservation(env.client, "succeeded", ttl="1m",
                                   status={"phase": "Succeeded", "nodeName": NODE})
    env.clock.step(3600)
    for r in (failed, succeeded):
        assert env.sync(r["metadata"]["name"]) is None
        assert env.get(r["metadata"]["name"]) == r


def test_active_reservations_expire_by_ttl_expires_or_a_missing_node(env: Env) -> None:
    create_reservation(env.client, "should-expire", ttl="1m", status=available(NODE))
    create_reservation(env.client, "pending", ttl="1m",
                       status={"phase": "Pending", "nodeName": NODE})
    create_reservation(env.client, "normal", ttl="10m", status=available(NODE))
    create_reservation(env.client, "missing-node", ttl="0s", status=available("missing-node"))
    create_reservation(env.client, "past-expires", ttl="10m",
                       expires="2020-01-01T00:00:00Z", status=available(NODE))
    env.clock.step(5 * 60)

    for name in ("should-expire", "pending", "missing-node", "past-expires"):
        assert env.sync(name) is None
        assert env.phase(name) == "Failed"
        ready = env.ready(name)
        assert (ready["status"], ready["reason"]) == ("False", "Expired")
        assert "message" not in ready  # upstream writes none

    before = env.get("normal")
    assert env.sync("normal") == Result(requeue_after=MAX_RETRY_AFTER_SECONDS)
    assert env.get("normal") == before


def test_ttl_zero_disables_expiry_even_with_expires_past(env: Env) -> None:
    create_reservation(env.client, "forever", ttl="0s", expires="2020-01-01T00:00:00Z",
                       status=available(NODE))
    env.clock.step(365 * DAY)
    # Upstream still looks again in 3 s (the expiry time is past), but never expires it.
    assert env.sync("forever") == Result(requeue_after=MIN_RETRY_AFTER_SECONDS)
    assert env.phase("forever") == "Available"


def test_expired_keeps_an_unready_reservations_transition_time(env: Env) -> None:
    r = Reservation.model_validate({"metadata": {"name": "r"}, "spec": {}, "status": {
        "phase": "Available", "conditions": [
            {"type": "Ready", "status": "False", "reason": "Unschedulable",
             "lastProbeTime": "2026-01-01T00:00:00Z",
             "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
    set_reservation_expired(r, env.clock.now())
    assert r.status is not None and r.status.conditions is not None
    ready = r.status.conditions[0]
    assert (r.status.phase, ready.reason) == ("Failed", "Expired")
    assert ready.last_transition_time == "2026-01-01T00:00:00Z"
    assert ready.last_probe_time != "2026-01-01T00:00:00Z"

    fresh = Reservation.model_validate({"metadata": {"name": "r"}, "spec": {}})
    set_reservation_succeeded(fresh, env.clock.now())
    assert fresh.status is not None and fresh.status.conditions is not None
    assert [(c.type, c.status, c.reason) for c in fresh.status.conditions] == [
        ("Ready", "False", "Succeeded")]


@pytest.mark.parametrize(("ttl", "left", "after"), [
    ("1m", 59, MAX_RETRY_AFTER_SECONDS),
    ("1m", 10, 10),
    ("1m", 1, MIN_RETRY_AFTER_SECONDS),
    ("0s", 59, 0),
])
def test_next_look_is_the_time_left_clamped_to_3_to_15_seconds(
        ttl: str, left: float, after: float) -> None:
    r = Reservation.model_validate({"metadata": {"name": "r",
                                                 "creationTimestamp": "2026-01-01T00:00:00Z"},
                                    "spec": {"ttl": ttl}})
    created = 1767225600.0  # 2026-01-01T00:00:00Z
    assert next_sync_time(r, created + 60 - left) == after


def test_allocate_once_reservation_succeeds_with_its_consumers(env: Env) -> None:
    r = create_reservation(env.client, "once", ttl="1m", allocateOnce=True,
                           status=available(NODE, cpu="10000m", memory="10Gi"))
    for i in range(4):
        create_consumer(env.client, f"pod-{i}", r, NODE, cpu="2000m", memory="2Gi")
    env.pods_cached(4)

    assert env.sync("once") is None
    status = env.get("once")["status"]
    assert status["phase"] == "Succeeded"
    # Masked to allocatable's names: the pods' ephemeral-storage is left out.
    assert status["allocated"] == {"cpu": "8", "memory": "8Gi"}
    pods = {p["metadata"]["name"]: p["metadata"]["uid"]
            for p in env.client.list(PODS, "default")["items"]}
    assert status["currentOwners"] == sorted(
        ({"namespace": "default", "name": n, "uid": u} for n, u in pods.items()),
        key=lambda o: o["uid"])
    ready = env.ready("once")
    assert (ready["status"], ready["reason"]) == ("False", "Succeeded")
    # Its Scheduled condition stays as Bind wrote it.
    assert status["conditions"][0]["reason"] == "Scheduled"
    phases = {p: env.gauge("scheduler_reservation_status_phase", name="once", phase=p)
              for p in ("Pending", "Available", "Succeeded", "Failed")}
    assert phases == {"Pending": 0, "Available": 0, "Succeeded": 1, "Failed": 0}
    assert [env.gauge("scheduler_reservation_resource_allocated", name="once", resource=r)
            for r in ("cpu", "memory")] == [0.8, 0.8]


def test_reusable_reservation_follows_its_consumers_and_stays_available(env: Env) -> None:
    r = create_reservation(env.client, "reusable", ttl="1h", allocateOnce=False,
                           status=available(NODE, cpu="4", memory="8Gi"))
    other = create_reservation(env.client, "other", ttl="1h", status=available(NODE))
    create_consumer(env.client, "mine", r, NODE, cpu="500m", memory="1Gi")
    create_consumer(env.client, "not-mine", other, NODE)
    env.pods_cached(2)

    assert env.sync("reusable") == Result(requeue_after=MAX_RETRY_AFTER_SECONDS)
    status = env.get("reusable")["status"]
    assert status["phase"] == "Available"
    assert status["allocated"] == {"cpu": "500m", "memory": "1Gi"}
    assert [o["name"] for o in status["currentOwners"]] == ["mine"]

    env.client.delete(PODS, "mine", "default")
    env.pods_cached(1)
    env.sync("reusable")
    status = env.get("reusable")["status"]
    assert (status["phase"], status.get("allocated"), status.get("currentOwners")) == (
        "Available", None, None)


def test_a_status_write_that_loses_a_race_is_retried_on_the_servers_copy() -> None:
    racing: list[RacingClient] = []

    def wrap(client: Client) -> RacingClient:
        racing.append(RacingClient(client))
        return racing[0]

    for env in make_env(wrap):
        r = create_reservation(env.client, "raced", ttl="1h", status=available(NODE))
        create_consumer(env.client, "consumer", r, NODE)
        env.pods_cached(1)
        env.sync("raced")
        stored = env.get("raced")
        assert racing[0].raced == 1
        assert stored["metadata"]["labels"] == {"touched": "yes"}  # the other write stays
        assert stored["status"]["phase"] == "Succeeded"
        assert [o["name"] for o in stored["status"]["currentOwners"]] == ["consumer"]


def test_gc_deletes_what_finished_a_day_ago_or_lost_its_node(env: Env) -> None:
    long_ago = "2020-01-01T00:00:00Z"
    create_reservation(env.client, "should-expire", ttl="1m", status=available(NODE))
    create_reservation(env.client, "succeeded", ttl="1h", status={
        "phase": "Succeeded", "nodeName": NODE, "conditions": [
            {"type": "Ready", "status": "False", "reason": "Succeeded",
             "lastProbeTime": long_ago, "lastTransitionTime": long_ago}]})
    create_reservation(env.client, "normal", ttl="0s", status=available(NODE))
    create_reservation(env.client, "missing-node", ttl="0s", status=available("missing-node"))
    env.clock.step(120)
    for name in ("should-expire", "normal", "missing-node"):
        env.sync(name)
        env.cached(name)

    assert sorted(env.ctl.gc_reservations()) == ["missing-node", "succeeded"]
    assert [env.exists(n) for n in ("should-expire", "normal")] == [True, True]

    env.clock.step(DAY + 1)
    assert env.ctl.gc_reservations() == ["should-expire"]
    assert env.exists("normal")
