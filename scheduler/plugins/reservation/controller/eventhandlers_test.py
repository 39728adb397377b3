"""What makes the Reservation controller look at a Reservation again, as upstream's
pod/reservation/node event handler tests: a bound pod carrying (or losing) the
reservation-allocated annotation, a Reservation added or deleted or changing generation, phase
or node (not a label), and the deletion of its node. Informers run over in-memory sources."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from api.extension.reservation import ANNOTATION_RESERVATION_ALLOCATED
from pkg.client.informers.factory import default_indexers, model_transform
from pkg.client.informers.fake import FakeListerWatcher
from pkg.client.informers.informer import SharedInformer
from pkg.client.resources import NODES, PODS, RESERVATIONS, Resource
from pkg.util.clock import FakeClock
from scheduler.apis.config.koord_args import ReservationArgs
from scheduler.plugins.reservation.controller import ReservationController
from test.e2e.cluster import wait_for


class Informers:
    """An informer factory over in-memory list/watch sources."""

    def __init__(self) -> None:
        self.sources: dict[str, FakeListerWatcher] = {}
        self.informers: dict[str, SharedInformer] = {}

    def informer_for(self, resource: Resource, *, typed: bool | None = None) -> SharedInformer:
        if resource.plural not in self.informers:
            source = self.sources[resource.plural] = FakeListerWatcher()
            self.informers[resource.plural] = SharedInformer(
                source, name=resource.plural, namespaced=resource.namespaced,
                indexers=default_indexers(resource),
                transform=model_transform(resource) if resource.model and typed is not False
                else None)
        return self.informers[resource.plural]


@pytest.fixture
def env() -> Iterator[tuple[Informers, ReservationController]]:
    informers = Informers()
    ctl = ReservationController(client=None,  # type: ignore[arg-type] # never written to
                                informer_factory=informers, args=ReservationArgs(),
                                clock=FakeClock())
    for inf in informers.informers.values():
        inf.start()
    assert wait_for(lambda: all(i.has_synced() for i in informers.informers.values()), 10)
    yield informers, ctl
    for inf in informers.informers.values():
        inf.stop()


def expect(ctl: ReservationController, keys: set[str]) -> None:
    """The queue gets exactly ``keys`` (taken off it). Handlers see one informer's events in
    order, so a key enqueued by a later event vouches for the earlier ones."""
    queue = ctl.controller.queue
    wait_for(lambda: len(queue) >= len(keys), 10, what=f"{sorted(keys)} queued")
    got = set()
    while len(queue):
        key, _ = queue.get(timeout=1)
        got.add(key)
        queue.done(key)
    assert got == keys


def pod(name: str, node: str = "", reservation: str = "") -> dict[str, Any]:
    annotations = {ANNOTATION_RESERVATION_ALLOCATED: f'{{"name":"{reservation}","uid":"u-'
                                                     f'{reservation}"}}'} if reservation else {}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"u-{name}",
                         "annotations": annotations},
            "spec": {"nodeName": node, "containers": [{"name": "c"}]}}


def reservation(name: str, node: str = "n1", phase: str = "Available",
                **labels: str) -> dict[str, Any]:
    return {"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Reservation",
            "metadata": {"name": name, "uid": f"u-{name}", "generation": 1, "labels": labels},
            "spec": {"owners": [{"object": {"name": "x"}}], "template": {}},
            "status": {"phase": phase, "nodeName": node}}


def test_bound_pods_with_the_allocated_annotation_enqueue_their_reservation(
        env: tuple[Informers, ReservationController]) -> None:
    informers, ctl = env
    pods = informers.sources[PODS.plural]
    pods.add(pod("pending", reservation="r-pending"))  # not bound: upstream skips it
    pods.add(pod("plain", node="n1"))
    pods.add(pod("consumer", node="n1", reservation="r1"))
    expect(ctl, {"r1"})

    # The annotation taken away: the Reservation it named must drop the pod.
    pods.modify(pod("consumer", node="n1"))
    expect(ctl, {"r1"})
    pods.modify(pod("plain", node="n1", reservation="r2"))
    expect(ctl, {"r2"})
    pods.delete(pod("plain", node="n1", reservation="r2"))
    expect(ctl, {"r2"})


def test_reservation_changes_that_matter_enqueue_it(
        env: tuple[Informers, ReservationController]) -> None:
    informers, ctl = env
    source = informers.sources[RESERVATIONS.plural]
    source.add(reservation("r1"))
    expect(ctl, {"r1"})

    source.modify(reservation("r1", team="a"))  # a label: nothing the controller reads
    source.add(reservation("later"))
    expect(ctl, {"later"})
    source.modify(reservation("r1", phase="Failed", team="a"))
    expect(ctl, {"r1"})
    source.modify(reservation("r1", node="n2", phase="Failed", team="a"))
    expect(ctl, {"r1"})
    source.delete(reservation("r1"))
    expect(ctl, {"r1"})


def test_a_deleted_node_enqueues_the_reservations_on_it(
        env: tuple[Informers, ReservationController]) -> None:
    informers, ctl = env
    for name, node in (("on-n1", "n1"), ("also-n1", "n1"), ("on-n2", "n2")):
        informers.sources[RESERVATIONS.plural].add(reservation(name, node))
    expect(ctl, {"on-n1", "also-n1", "on-n2"})
    nodes = informers.sources[NODES.plural]
    nodes.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    nodes.delete({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    expect(ctl, {"on-n1", "also-n1"})
