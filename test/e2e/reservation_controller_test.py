"""The Reservation controller end to end: against the embedded API server with the chart's
RBAC, running as koord-scheduler's ServiceAccount on real time. Reservations are written
Available through the status subresource as the scheduler's Bind does; the controller expires
one by its ttl (Failed, Ready=False reason Expired), makes an allocate-once one Succeeded once a
consumer pod (bound, with the reservation-allocated annotation) appears, keeps a reusable one
Available with its consumer listed, and garbage-collects what finished gcDurationSeconds ago or
whose node went away. ``kubectl get reservation`` prints upstream's columns.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest

from pkg.client.errors import is_not_found
from pkg.client.informers import SharedInformerFactory
from pkg.client.informers.handlers import EventHandlerFuncs, deleted_object
from pkg.client.resources import NODES, RESERVATIONS
from pkg.client.rest import Client
from pkg.util.clock import REAL_CLOCK
from scheduler.apis.config.koord_args import ReservationArgs
from scheduler.plugins.reservation.controller import ReservationController
from scheduler.plugins.reservation.controller.testing import (
    available,
    create_consumer,
    create_reservation,
)
from test.apiserver import ServerHandle
from test.apiserver.testing import Kubectl
from test.e2e.cluster import wait_for
from test.e2e.conftest import KubeconfigOf

DEADLINE = 30.0


pytestmark = pytest.mark.without_webhooks


class History:
    """Every (phase, Ready reason) each Reservation went through, from a watch of its own, and
    which were deleted: GC may remove a finished Reservation before a poll would see it."""

    def __init__(self, client: Client) -> None:
        self.lock = threading.Lock()
        self.states: dict[str, list[tuple[str, str]]] = defaultdict(list)
        self.owners: dict[str, list[str]] = {}
        self.deleted: set[str] = set()
        self.factory = SharedInformerFactory(client)
        self.factory.informer_for(RESERVATIONS, typed=False).add_event_handler(
            EventHandlerFuncs(add=self._seen, update=lambda _, new: self._seen(new),
                              delete=self._gone))
        self.factory.start()

    def _seen(self, obj: dict[str, Any]) -> None:
        status = obj.get("status") or {}
        ready = next((c.get("reason") or "" for c in status.get("conditions") or ()
                      if c.get("type") == "Ready"), "")
        with self.lock:
            self.states[obj["metadata"]["name"]].append((status.get("phase") or "", ready))
            if status.get("currentOwners"):
                self.owners[obj["metadata"]["name"]] = [
                    o["name"] for o in status["currentOwners"]]

    def _gone(self, obj: Any) -> None:
        with self.lock:
            self.deleted.add(deleted_object(obj)["metadata"]["name"])

    def went_through(self, name: str, state: tuple[str, str]) -> bool:
        with self.lock:
            return state in self.states[name]

    def gone(self, name: str) -> bool:
        with self.lock:
            return name in self.deleted


@pytest.fixture
def controller(kubeconfig_of: KubeconfigOf, client: Client) -> Iterator[ReservationController]:
    sched = Client.from_kubeconfig(kubeconfig_of("koord-scheduler"))
    factory = SharedInformerFactory(sched)
    ctl = ReservationController(
        sched, factory, ReservationArgs(gc_interval_seconds=1, gc_duration_seconds=2),
        REAL_CLOCK)
    factory.start()
    assert ctl.start(sync_timeout=20)
    yield ctl
    ctl.stop()
    factory.shutdown()
    sched.close()


@pytest.fixture
def history(client: Client) -> Iterator[History]:
    h = History(client)
    yield h
    h.factory.shutdown()


def _exists(client: Client, name: str) -> bool:
    try:
        client.get(RESERVATIONS, name)
    except Exception as err:  # noqa: BLE001 - only NotFound is expected
        if is_not_found(err):
            return False
        raise
    return True


def test_ttl_expiry_allocate_once_success_and_gc(srv: ServerHandle, client: Client,
                                                 history: History,
                                                 controller: ReservationController) -> None:
    srv.add_nodes(2)
    create_reservation(client, "expiring", ttl="2s", status=available("node-0"))
    once = create_reservation(client, "once", ttl="1h", status=available("node-0"))
    create_consumer(client, "rollout-0", once, "node-0")

    wait_for(partial(history.went_through, "expiring", ("Failed", "Expired")), DEADLINE,
             what="Reservation expiring Failed (Expired)")
    wait_for(partial(history.went_through, "once", ("Succeeded", "Succeeded")), DEADLINE,
             what="Reservation once Succeeded")
    assert history.owners["once"] == ["rollout-0"]
    assert "expiring" not in history.owners  # its owner never came
    # Finished 2 s ago (gcDurationSeconds): collected.
    for name in ("expiring", "once"):
        wait_for(partial(history.gone, name), DEADLINE, what=f"{name} garbage-collected")
        assert not _exists(client, name)


def test_reusable_reservation_lists_its_consumer_until_its_node_goes(
        srv: ServerHandle, client: Client, history: History,
        controller: ReservationController) -> None:
    srv.add_nodes(1, prefix="pool-")
    reusable = create_reservation(client, "reusable", ttl="0s", allocateOnce=False,
                                  status=available("pool-0", cpu="4", memory="8Gi"))
    create_consumer(client, "web-0", reusable, "pool-0", cpu="1", memory="2Gi")

    def listed() -> dict[str, Any] | None:
        status = client.get(RESERVATIONS, "reusable").get("status") or {}
        return status if status.get("currentOwners") else None
    status = wait_for(listed, DEADLINE, what="the consumer in currentOwners")
    assert status["phase"] == "Available"
    assert [o["name"] for o in status["currentOwners"]] == ["web-0"]
    assert status["allocated"] == {"cpu": "1", "memory": "2Gi"}

    kubectl = Kubectl(srv)
    try:
        out = kubectl.run("get", "reservation", "reusable").stdout.splitlines()
    finally:
        kubectl.close()
    assert out[0].split() == ["NAME", "PHASE", "AGE", "NODE", "TTL", "EXPIRES"]
    name, phase, _age, node, ttl = out[1].split()
    assert (name, phase, node, ttl) == ("reusable", "Available", "pool-0", "0s")

    client.delete(NODES, "pool-0")
    wait_for(lambda: history.went_through("reusable", ("Failed", "Expired")), DEADLINE,
             what="the Reservation of a deleted node expired")
    wait_for(lambda: not _exists(client, "reusable"), DEADLINE,
             what="the Reservation of a deleted node garbage-collected")
