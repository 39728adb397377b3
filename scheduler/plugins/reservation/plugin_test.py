"""Tests of the Reservation plugin in the scheduling loop (bindings in memory, Reservations fed
to its cache as the informer would) and of its arithmetic, after upstream's
``plugin_test.go`` / ``scoring_test.go`` cases: a matching pod lands in its Reservation and
is annotated with it; others cannot use reserved capacity; allocate-once Reservations serve
one pod; reusable ones count their consumers once; order and score pick the Reservation."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from api.extension.reservation import (
    ANNOTATION_EXACT_MATCH_RESERVATION_SPEC,
    ANNOTATION_RESERVATION_AFFINITY,
    ANNOTATION_RESERVATION_ALLOCATED,
)
from api.scheduling.v1alpha1.reservation import Reservation as ReservationObject
from pkg.features import default_feature_gate
from pkg.features.scheduler_features import OMIT_NODE_LABELS_FOR_RESERVATION
from pkg.util.reservation import new_reserve_pod
from scheduler.apis.config import load_scheduler_config
from scheduler.eventhandlers import EventHandlers
from scheduler.factory import build_scheduler
from scheduler.framework.binder import InMemoryBinder
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.plugins.defaultpreemption import DefaultPreemption
from scheduler.framework.status import is_success
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.reservation.cache import new_reservation_info
from scheduler.plugins.reservation.plugin import (
    ERR_REASON_AFFINITY,
    ERR_REASON_RESERVATION_NODE,
    MOST_PREFERRED_SCORE,
    STATE_KEY,
    Reservation,
    ReservationState,
    fits_node,
    fits_reservation,
    score_reservation,
)
from scheduler.plugins.reservation.testing import (
    SCHEDULER,
    make_node,
    make_pod,
    make_reservation,
    reservation_config,
)
from scheduler.scheduler import Scheduler

GI = 1024**3


@dataclass
class Cluster:
    sched: Scheduler
    handlers: EventHandlers
    binder: InMemoryBinder
    plugin: Reservation

    def node(self, name: str, cpu: str = "8") -> None:
        self.handlers.add_node(make_node(name, cpu))

    def reservation(self, r: ReservationObject) -> None:
        self.plugin.cache.update_reservation(r)

    def bound_pod(self, pod: dict[str, Any]) -> None:
        """A pod the informer reports bound."""
        self.handlers.add_pod_to_cache(pod)
        self.plugin.cache.on_pod(pod)

    def schedule(self, *pods: dict[str, Any]) -> dict[str, str]:
        """Queue the pods and run cycles until the queue is idle; the bindings."""
        for p in pods:
            self.handlers.add_pod_to_queue(p)
        while self.sched.schedule_one(timeout=0):
            assert self.sched.wait_for_bindings(5)
        return dict(self.binder.bindings)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    holder: list[Cluster] = []

    def on_bind(pod: dict[str, Any]) -> None:
        holder[0].bound_pod(pod)

    binder = InMemoryBinder(on_bind=on_bind)
    built = build_scheduler(load_scheduler_config(reservation_config()), binder=binder,
                            bind_workers=1)
    plugin = built.scheduler.profiles[SCHEDULER].plugin("Reservation")
    assert isinstance(plugin, Reservation)
    plugin.cache.adapter = built.handlers
    c = Cluster(built.scheduler, built.handlers, binder, plugin)
    holder.append(c)
    yield c
    built.scheduler.stop()


def test_a_matching_pod_lands_in_its_reservation_with_the_allocated_annotation(
        cluster: Cluster) -> None:
    cluster.node("n1")
    cluster.node("n2")
    cluster.reservation(make_reservation("web", node="n1"))
    assert cluster.schedule(make_pod("web-0", labels={"app": "web"})) == {"default/web-0": "n1"}
    assert cluster.binder.annotations["default/web-0"] == {
        ANNOTATION_RESERVATION_ALLOCATED: '{"name":"web","uid":"r-web"}'}


def test_reserved_capacity_is_taken_for_everyone_else(cluster: Cluster) -> None:
    cluster.node("n1")
    cluster.reservation(make_reservation("web", node="n1"))
    cluster.bound_pod(make_pod("filler", cpu="4", node="n1"))
    assert cluster.schedule(make_pod("other")) == {}
    assert cluster.schedule(make_pod("web-0", labels={"app": "web"})) == {"default/web-0": "n1"}


def test_deleting_a_reservation_gives_its_resources_back(cluster: Cluster) -> None:
    cluster.node("n1")
    r = make_reservation("web", node="n1")
    cluster.reservation(r)
    cluster.bound_pod(make_pod("filler", cpu="4", node="n1"))
    assert cluster.schedule(make_pod("other")) == {}
    cluster.plugin.cache.delete_reservation(r)
    assert cluster.schedule(make_pod("other-2")) == {"default/other-2": "n1"}


def test_an_allocate_once_reservation_serves_one_pod(cluster: Cluster) -> None:
    cluster.node("n1")
    cluster.reservation(make_reservation("web", node="n1"))
    cluster.bound_pod(make_pod("filler", cpu="4", node="n1"))
    web = {"app": "web"}
    assert cluster.schedule(make_pod("web-0", labels=web)) == {"default/web-0": "n1"}
    # The rest of the Reservation (2 cpu) stays reserved, for no one.
    assert cluster.schedule(make_pod("web-1", labels=web)) == {"default/web-0": "n1"}


def test_a_reusable_reservation_serves_pods_until_full_and_counts_them_once(
        cluster: Cluster) -> None:
    cluster.node("n1")
    cluster.reservation(make_reservation("web", node="n1", allocate_once=False))
    web = {"app": "web"}
    assert cluster.schedule(make_pod("web-0", labels=web), make_pod("web-1", labels=web)) == {
        "default/web-0": "n1", "default/web-1": "n1"}
    # 8 cpu: the Reservation's 4 (all consumed, not counted twice) leave 4 for others.
    assert cluster.schedule(make_pod("other", cpu="4")) == {
        "default/web-0": "n1", "default/web-1": "n1", "default/other": "n1"}


def test_a_consumer_of_a_partly_used_reservation_does_not_double_count(
        cluster: Cluster) -> None:
    cluster.node("n1")
    r = make_reservation("web", node="n1", allocate_once=False)
    cluster.reservation(r)
    cluster.bound_pod(make_pod("web-0", labels={"app": "web"}, node="n1", annotations={
        ANNOTATION_RESERVATION_ALLOCATED: '{"name":"web","uid":"r-web"}'}))
    info = cluster.plugin.cache.get("r-web")
    assert info is not None and info.allocated == {"cpu": 2000, "memory": 4 * GI}
    # Node: 8 cpu; Reservation 4 of which 2 used by web-0: 4 left for others.
    assert cluster.schedule(make_pod("other", cpu="4")) == {"default/other": "n1"}


def test_the_reservation_with_the_smallest_order_is_preferred(cluster: Cluster) -> None:
    for n in ("n1", "n2", "n3"):
        cluster.node(n)
    web = {"app": "web"}
    cluster.reservation(make_reservation("a", node="n1", owner_labels=web, order=2))
    cluster.reservation(make_reservation("b", node="n2", owner_labels=web, order=1))
    assert cluster.schedule(make_pod("web-0", labels=web)) == {"default/web-0": "n2"}
    assert cluster.binder.annotations["default/web-0"][ANNOTATION_RESERVATION_ALLOCATED] == \
        '{"name":"b","uid":"r-b"}'


def test_the_preferred_order_is_the_smallest_among_feasible_nodes(cluster: Cluster) -> None:
    for n in ("n1", "n2", "n3"):
        cluster.node(n)
    web = {"app": "web"}
    # Order 1 is on a node the pod does not fit (1 cpu reserved, the rest taken).
    cluster.reservation(make_reservation("a", node="n1", owner_labels=web, order=1, cpu="1",
                                         memory="1Gi"))
    cluster.bound_pod(make_pod("filler", cpu="7", memory="1Gi", node="n1"))
    cluster.reservation(make_reservation("b", node="n2", owner_labels=web, order=2))
    # Fuller (score 100) than b (50), but without order.
    cluster.reservation(make_reservation("c", node="n3", owner_labels=web, cpu="2",
                                         memory="4Gi"))
    assert cluster.schedule(make_pod("web-0", labels=web)) == {"default/web-0": "n2"}


def test_the_fullest_reservation_wins_without_order(cluster: Cluster) -> None:
    cluster.node("n1")
    cluster.node("n2")
    web = {"app": "web"}
    cluster.reservation(make_reservation("big", node="n1", owner_labels=web))
    cluster.reservation(make_reservation("exact", node="n2", owner_labels=web, cpu="2",
                                         memory="4Gi"))
    assert cluster.schedule(make_pod("web-0", labels=web)) == {"default/web-0": "n2"}


def test_a_pod_no_single_reservation_fits_is_unschedulable_by_node(
        cluster: Cluster) -> None:
    cluster.node("n1")
    web = {"app": "web"}
    for name in ("a", "b"):
        cluster.reservation(make_reservation(name, node="n1", cpu="2", memory="4Gi",
                                             owner_labels=web))
    cluster.bound_pod(make_pod("filler", cpu="4", node="n1"))
    # Together the two Reservations have 3 cpu, but a pod uses one of them.
    assert cluster.schedule(make_pod("web-0", cpu="3", memory="1Gi", labels=web)) == {}
    diagnosis = cluster.sched.diagnosis_of("default/web-0")
    assert diagnosis is not None
    assert diagnosis["message"].startswith("0/1 nodes are available: 1 Insufficient cpu by "
                                           "node.")
    # PostFilter says what became of the Reservations the pod's owners matched.
    assert diagnosis["message"].endswith(
        ", 2 Reservation(s) for node reason that Insufficient cpu by node, "
        "2 Reservation(s) matched owner total.")


def test_restricted_reservation_limits_the_pod_to_it_or_the_node_alone(
        cluster: Cluster) -> None:
    cluster.node("n1")
    cluster.reservation(make_reservation("web", node="n1", cpu="2", memory="4Gi",
                                         allocate_policy="Restricted"))
    web = {"app": "web"}
    # 3 cpu do not fit the Restricted Reservation of 2, but fit the node's 6 free.
    assert cluster.schedule(make_pod("web-0", cpu="3", labels=web)) == {"default/web-0": "n1"}
    assert ANNOTATION_RESERVATION_ALLOCATED not in cluster.binder.annotations.get(
        "default/web-0", {})


def test_a_pod_ignoring_reservations_may_use_what_they_hold(cluster: Cluster) -> None:
    cluster.node("n1")
    cluster.reservation(make_reservation("web", node="n1"))
    cluster.bound_pod(make_pod("filler", cpu="4", node="n1"))
    ignoring = make_pod("other", labels={"scheduling.koordinator.sh/reservation-ignored": "true"})
    assert cluster.schedule(ignoring) == {"default/other": "n1"}
    assert cluster.binder.annotations.get("default/other") is None
    info = cluster.plugin.cache.get("r-web")
    assert info is not None and info.assigned == {}


def test_pods_without_reservations_skip_the_plugin(cluster: Cluster) -> None:
    cluster.node("n1")
    cluster.reservation(make_reservation("web", node="n1"))
    plugin = cluster.plugin
    state = CycleState()
    pod = PodInfo(make_pod("other"))
    plugin.before_pre_filter(state, pod)
    _, status = plugin.pre_filter(state, pod, plugin.handle.snapshot)
    assert status is not None and status.code.name == "SKIP"


def test_filter_and_filter_nodes_agree(cluster: Cluster) -> None:
    for n in ("n1", "n2"):
        cluster.node(n)
    cluster.reservation(make_reservation("web", node="n1", cpu="2", memory="4Gi"))
    cluster.bound_pod(make_pod("filler", cpu="6", node="n1"))
    cluster.sched.cache.update_snapshot(cluster.sched.snapshot)
    plugin = cluster.plugin
    snap = plugin.handle.snapshot
    for cpu, expected in (("2", True), ("3", False)):
        cluster.sched.cache.update_snapshot(snap)
        state = CycleState()
        pod = PodInfo(make_pod("web-0", cpu=cpu, labels={"app": "web"}))
        plugin.before_pre_filter(state, pod)
        mask = plugin.filter_nodes(state, pod, snap)
        scalar = [is_success(plugin.filter(state, pod, ni)) for ni in snap.node_infos]
        assert (mask.tolist() if mask is not None else [True] * len(scalar)) == scalar
        assert scalar[snap.index["n1"]] is expected


def test_a_reserve_pod_pinned_by_its_template_fits_only_that_node(cluster: Cluster) -> None:
    plugin = cluster.plugin
    state = CycleState()
    state.write(STATE_KEY, ReservationState(reserve_pod=True))
    pod = PodInfo(new_reserve_pod(make_reservation("pinned", template_node="n2")))
    status = plugin.filter(state, pod, NodeInfo(make_node("n1")))
    assert status is not None and status.reasons == (ERR_REASON_RESERVATION_NODE,)
    assert plugin.filter(state, pod, NodeInfo(make_node("n2"))) is None


# ScoreReservation (upstream scoring_test.go) ------------------------------------------------


@pytest.mark.parametrize(("reservation", "consumer", "expected"), [
    (("4", "8Gi"), None, 50),
    (("2", "4Gi"), None, 100),
    (("2", "4Gi"), ("2", "3Gi"), 0),
])
def test_score_reservation(reservation: tuple[str, str], consumer: tuple[str, str] | None,
                           expected: int) -> None:
    info = new_reservation_info(make_reservation("r", node="n1", cpu=reservation[0],
                                                 memory=reservation[1]))
    if consumer is not None:
        info.assigned["c"] = info.masked(PodInfo(make_pod("c", *consumer)).requests)
    assert score_reservation(PodInfo(make_pod("p", "2", "4Gi")).requests, info) == expected


# Reservation affinity, exact match, taints (M3) ----------------------------------------------


def _affinity(**fields: Any) -> dict[str, str]:
    return {ANNOTATION_RESERVATION_AFFINITY: json.dumps(fields)}


def test_a_pod_naming_a_reservation_uses_that_one(cluster: Cluster) -> None:
    for n in ("n1", "n2"):
        cluster.node(n)
    web = {"app": "web"}
    cluster.reservation(make_reservation("a", node="n1", owner_labels=web, order=1))
    cluster.reservation(make_reservation("b", node="n2", owner_labels=web))
    pod = make_pod("web-0", labels=web, annotations=_affinity(name="b"))
    assert cluster.schedule(pod) == {"default/web-0": "n2"}
    assert cluster.binder.annotations["default/web-0"][ANNOTATION_RESERVATION_ALLOCATED] == \
        '{"name":"b","uid":"r-b"}'


def test_a_pod_with_affinity_and_no_reservation_to_match_is_unresolvable(
        cluster: Cluster) -> None:
    cluster.node("n1")
    cluster.reservation(make_reservation("web", node="n1"))
    pod = make_pod("web-0", labels={"app": "web"}, annotations=_affinity(name="other"))
    assert cluster.schedule(pod) == {}
    diagnosis = cluster.sched.diagnosis_of("default/web-0")
    assert diagnosis is not None
    assert ERR_REASON_AFFINITY in diagnosis["message"]
    assert diagnosis["message"].endswith(
        ", 1 Reservation(s) didn't match affinity rules, 1 Reservation(s) matched owner total.")


def test_a_reservation_selector_picks_reservations_by_label(cluster: Cluster) -> None:
    for n in ("n1", "n2"):
        cluster.node(n)
    web = {"app": "web"}
    plain = make_reservation("plain", node="n1", owner_labels=web, order=1)
    gpu = make_reservation("gpu", node="n2", owner_labels=web)
    gpu.metadata.labels = {"pool": "gpu"}
    cluster.reservation(plain)
    cluster.reservation(gpu)
    pod = make_pod("web-0", labels=web, annotations=_affinity(reservationSelector={
        "pool": "gpu"}))
    assert cluster.schedule(pod) == {"default/web-0": "n2"}



def test_a_reservation_selector_sees_node_labels_unless_omit_node_labels_is_on(
        cluster: Cluster) -> None:
    cluster.node("n1")
    web = {"app": "web"}
    cluster.reservation(make_reservation("plain", node="n1", owner_labels=web,
                                         allocate_once=False))
    by_node = _affinity(reservationSelector={"kubernetes.io/hostname": "n1"})
    assert cluster.schedule(make_pod("web-0", labels=web, annotations=by_node)) == {
        "default/web-0": "n1"}
    default_feature_gate.set_enabled(OMIT_NODE_LABELS_FOR_RESERVATION, True)
    try:
        bound = cluster.schedule(make_pod("web-1", labels=web, annotations=by_node))
        assert "default/web-1" not in bound
    finally:
        default_feature_gate.reset()
    diagnosis = cluster.sched.diagnosis_of("default/web-1")
    assert diagnosis is not None and ERR_REASON_AFFINITY in diagnosis["message"]

def test_an_affinity_pod_too_big_for_its_reservations_keeps_every_reason(
        cluster: Cluster) -> None:
    cluster.node("n1", cpu="16")
    cluster.reservation(make_reservation("web", node="n1", cpu="2", memory="4Gi",
                                         allocate_policy="Restricted"))
    pod = make_pod("web-0", cpu="3", labels={"app": "web"}, annotations=_affinity(name="web"))
    assert cluster.schedule(pod) == {}
    diagnosis = cluster.sched.diagnosis_of("default/web-0")
    assert diagnosis is not None
    assert "Reservation(s) Insufficient cpu" in diagnosis["message"]


def test_exact_match_leaves_a_reservation_of_another_size_unmatched(cluster: Cluster) -> None:
    cluster.node("n1")
    cluster.reservation(make_reservation("web", node="n1"))
    cluster.bound_pod(make_pod("filler", cpu="4", node="n1"))
    exact = {ANNOTATION_EXACT_MATCH_RESERVATION_SPEC: '{"resourceNames":["cpu"]}'}
    assert cluster.schedule(make_pod("web-0", labels={"app": "web"},
                                     annotations=exact)) == {}
    assert cluster.schedule(make_pod("web-1", cpu="4", labels={"app": "web"},
                                     annotations=exact)) == {"default/web-1": "n1"}


def test_an_unschedulable_reservation_serves_only_pods_tolerating_it(
        cluster: Cluster) -> None:
    cluster.node("n1")
    r = make_reservation("web", node="n1")
    r.spec.unschedulable = True
    cluster.reservation(r)
    cluster.bound_pod(make_pod("filler", cpu="4", node="n1"))
    web = {"app": "web"}
    assert cluster.schedule(make_pod("web-0", labels=web)) == {}
    tolerating = _affinity(tolerations=[{"key": "node.kubernetes.io/unschedulable",
                                         "operator": "Exists", "effect": "NoSchedule"}])
    assert cluster.schedule(make_pod("web-1", labels=web, annotations=tolerating)) == {
        "default/web-1": "n1"}


# Reserve pods -------------------------------------------------------------------------------


class FakeReservationClient:
    """Reservations by name, as dicts; ``update_status`` replaces the status."""

    def __init__(self, *reservations: ReservationObject) -> None:
        self.objects = {r.metadata.name: r.to_dict() for r in reservations}

    def get(self, resource: Any, name: str, namespace: str | None = None) -> Any:
        return copy.deepcopy(self.objects[name])

    def update_status(self, resource: Any, obj: Any, namespace: str | None = None) -> Any:
        self.objects[obj["metadata"]["name"]]["status"] = copy.deepcopy(obj["status"])
        return copy.deepcopy(self.objects[obj["metadata"]["name"]])

    def patch(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("no patch expected")

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("no delete expected")


def test_a_reserve_pod_is_bound_by_writing_its_reservation_available(
        cluster: Cluster) -> None:
    cluster.node("n1", cpu="2")
    cluster.node("n2")
    r = make_reservation("web")
    client = FakeReservationClient(r)
    cluster.plugin.client = client
    cluster.handlers.add_pod_to_queue(new_reserve_pod(r))
    while cluster.sched.schedule_one(timeout=0):
        assert cluster.sched.wait_for_bindings(5)
    assert cluster.binder.bindings == {}  # DefaultBinder left it alone
    status = client.objects["web"]["status"]
    assert (status["phase"], status["nodeName"]) == ("Available", "n2")
    assert status["allocatable"] == {"cpu": "4", "memory": "8Gi"}
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("Scheduled", "True", "Scheduled"), ("Ready", "True", "Available")]
    # The assumed reserve pod holds the node until the informer reports it Available.
    assert cluster.sched.cache.is_assumed(f"default/{r.metadata.uid}")


def test_a_failed_reservation_is_not_bound(cluster: Cluster) -> None:
    cluster.node("n1")
    r = make_reservation("web")
    client = FakeReservationClient(r)
    client.objects["web"]["status"] = {"phase": "Failed"}
    cluster.plugin.client = client
    state = CycleState()
    status = cluster.plugin.bind(state, PodInfo(new_reserve_pod(r)), "n1")
    assert status is not None and status.message() == "reservation is not active"
    skipped = cluster.plugin.bind(state, PodInfo(make_pod("p")), "n1")
    assert skipped is not None and skipped.code.name == "SKIP"


class PatchRecorder:
    def __init__(self) -> None:
        self.patches: list[tuple[str, Any]] = []

    def patch(self, resource: Any, name: str, patch: Any, namespace: str | None = None,
              **kwargs: Any) -> Any:
        self.patches.append((name, patch))
        return {}


def test_without_a_binding_to_carry_it_the_annotation_is_patched_and_taken_back(
        cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster.node("n1")
    cluster.reservation(make_reservation("web", node="n1"))
    plugin = cluster.plugin
    client = PatchRecorder()
    plugin.client = client  # type: ignore[assignment]
    monkeypatch.setattr(plugin.handle, "defer_to_binding", lambda state, annotations: False)
    cluster.sched.cache.update_snapshot(cluster.sched.snapshot)
    state, pod = CycleState(), PodInfo(make_pod("web-0", labels={"app": "web"}))
    plugin.before_pre_filter(state, pod)
    assert plugin.reserve(state, pod, "n1") is None
    assert plugin.pre_bind(state, pod, "n1") is None
    plugin.unreserve(state, pod, "n1")
    assert client.patches == [
        ("web-0", {"metadata": {"annotations": {
            ANNOTATION_RESERVATION_ALLOCATED: '{"name":"web","uid":"r-web"}'}}}),
        ("web-0", {"metadata": {"annotations": {ANNOTATION_RESERVATION_ALLOCATED: None}}})]
    assert cluster.plugin.cache.get("r-web").assigned == {}  # type: ignore[union-attr]


# Fit arithmetic (upstream TestFitsNode / TestFitsReservation cases) --------------------------


def _node_with(reservation_cpu: str, other_cpu: str) -> tuple[NodeInfo, Any]:
    ni = NodeInfo(make_node("n1", cpu="8", memory="16Gi"))
    r = new_reservation_info(make_reservation("r", node="n1", cpu=reservation_cpu,
                                              memory="4Gi"))
    ni.add_pod(PodInfo(r.cache_pod()))
    ni.add_pod(PodInfo(make_pod("other", cpu=other_cpu, memory="1Gi", node="n1")))
    return ni, r


@pytest.mark.parametrize(("request_cpu", "expected"), [
    ("4", []),  # the Reservation's 2 and the node's free 2
    ("5", ["cpu"]),
])
def test_fits_node_counts_the_reservation_left_and_the_free_node(
        request_cpu: str, expected: list[str]) -> None:
    ni, r = _node_with("2", "4")
    requests = PodInfo(make_pod("p", cpu=request_cpu, memory="1Gi")).requests
    assert fits_node(requests, ni, r.available, 1) == expected
    # Without the Reservation only the node's free 2 cpu are there.
    assert fits_node(requests, ni, {}, 1) == ["cpu"]


def test_fits_node_counts_pods_without_the_matched_reserve_pods() -> None:
    ni = NodeInfo({"metadata": {"name": "n1"}, "status": {"allocatable": {
        "cpu": "8", "memory": "16Gi", "pods": "2"}}})
    r = new_reservation_info(make_reservation("r", node="n1", cpu="1", memory="1Gi"))
    ni.add_pod(PodInfo(r.cache_pod()))
    ni.add_pod(PodInfo(make_pod("other", cpu="1", memory="1Gi", node="n1")))
    requests = PodInfo(make_pod("p", cpu="1", memory="1Gi")).requests
    assert fits_node(requests, ni, r.available, 1) == []
    assert fits_node(requests, ni, r.available, 0) == ["pods"]


def test_fits_reservation_restricted() -> None:
    r = new_reservation_info(make_reservation("r", node="n1", cpu="2", memory="4Gi",
                                              allocate_policy="Restricted"))
    fits = PodInfo(make_pod("p", cpu="2", memory="4Gi")).requests
    assert fits_reservation(fits, r) == []
    r.assigned = {"c": {"cpu": 1000}}
    assert fits_reservation(fits, r) == ["Reservation(s) Insufficient cpu"]
    r.allocatable = {**r.allocatable, "pods": 1}
    assert fits_reservation(fits, r) == ["Reservation(s) Too many pods",
                                         "Reservation(s) Insufficient cpu"]


def test_normalize_score_makes_the_preferred_node_100(cluster: Cluster) -> None:
    scores = np.array([MOST_PREFERRED_SCORE, 50, 0], dtype=np.int64)
    assert cluster.plugin.normalize_score(CycleState(), PodInfo(make_pod("p")), scores) is None
    assert scores.tolist() == [100, 5, 0]


@dataclass
class FakeLister:
    objects: dict[str, ReservationObject]

    def get(self, name: str) -> ReservationObject | None:
        return self.objects.get(name)


@dataclass
class FakeInformer:
    lister: FakeLister


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def eventf(self, regarding: Any, related: Any, type_: str, reason: str, action: str,
               note: str, *args: Any) -> None:
        self.events.append((regarding.metadata.name, reason, note % args))


def test_a_failed_reserve_pod_is_reported_on_its_reservation_once(
        cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = cluster.plugin
    r = make_reservation("web")
    lister = FakeLister({"web": r})
    client = FakeReservationClient(r)
    recorder = Recorder()
    plugin.client = client
    plugin._reservations = FakeInformer(lister)  # type: ignore[assignment]
    monkeypatch.setattr(plugin.handle, "_recorder", recorder)
    pod = PodInfo(new_reserve_pod(r))
    assert plugin.still_pending(pod)
    message = "0/1 nodes are available: 1 Insufficient cpu."
    plugin.report_failure(pod, "Unschedulable", message)
    conditions = client.objects["web"]["status"]["conditions"]
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in conditions] == [
        ("Scheduled", "False", "Unschedulable", message)]
    assert recorder.events == [("web", "FailedScheduling", message)]
    # The informer now has the condition: a repeated failure writes nothing.
    lister.objects["web"] = ReservationObject.model_validate(client.objects["web"])
    client.objects["web"]["status"]["conditions"] = []
    plugin.report_failure(pod, "Unschedulable", message)
    assert client.objects["web"]["status"]["conditions"] == []
    # Scheduled meanwhile, or replaced by a new Reservation of that name: not pending.
    lister.objects["web"] = make_reservation("web", node="n1")
    assert not plugin.still_pending(pod)
    lister.objects["web"] = ReservationObject.model_validate(
        {**r.to_dict(), "metadata": {"name": "web", "uid": "other"}})
    assert not plugin.still_pending(pod)


def test_a_reserve_pod_is_never_a_preemption_victim(cluster: Cluster) -> None:
    preemption = cluster.sched.profiles[SCHEDULER].plugin("DefaultPreemption")
    assert isinstance(preemption, DefaultPreemption)
    reserve_pod = new_reserve_pod(make_reservation("web", node="n1"))
    reserve_pod["spec"]["priority"] = 0
    preemptor = make_pod("important")
    preemptor["spec"]["priority"] = 1000
    ni = NodeInfo(make_node("n1"))
    low = make_pod("low", node="n1")
    assert preemption.is_preemption_allowed(ni, PodInfo(low), PodInfo(preemptor))
    assert not preemption.is_preemption_allowed(ni, PodInfo(reserve_pod), PodInfo(preemptor))


# The informer wiring (register_scheduler_handlers) -----------------------------------------


class FakeFactory:
    """Informers whose handlers the test calls as the informer would."""

    def __init__(self) -> None:
        self.handlers: dict[str, list[Any]] = {}

    def informer_for(self, resource: Any, *, typed: bool | None = None) -> Any:
        factory = self

        class _Informer:
            def add_event_handler(self, handler: Any) -> object:
                factory.handlers.setdefault(resource.plural, []).append(handler)
                return handler

        return _Informer()

    def add(self, plural: str, obj: Any) -> None:
        for h in self.handlers.get(plural, ()):
            h.on_add(obj, False)

    def update(self, plural: str, old: Any, new: Any) -> None:
        for h in self.handlers.get(plural, ()):
            h.on_update(old, new)

    def delete(self, plural: str, obj: Any) -> None:
        for h in self.handlers.get(plural, ()):
            h.on_delete(obj)


def test_pending_reservations_are_queued_and_available_ones_cached(cluster: Cluster) -> None:
    factory = FakeFactory()
    cluster.plugin.register_scheduler_handlers(cluster.handlers, factory)
    cluster.node("n1")
    pending = make_reservation("web")
    other = make_reservation("other", scheduler="someone-else")
    factory.add("reservations", pending)
    factory.add("reservations", other)
    queued = cluster.sched.queue.pending_pods()
    assert queued["active"] == 1 and "r-web" in str(queued["pods"])
    available = make_reservation("web", node="n1")
    factory.update("reservations", pending, available)
    assert cluster.sched.queue.pending_pods()["active"] == 0
    assert cluster.sched.cache.get_pod("default/r-web") is not None
    assert cluster.plugin.cache.get("r-web") is not None
    # A consumer seen by the pod informer is counted in the Reservation.
    consumer = make_pod("web-0", labels={"app": "web"}, node="n1", annotations={
        ANNOTATION_RESERVATION_ALLOCATED: '{"name":"web","uid":"r-web"}'})
    factory.add("pods", consumer)
    assert list(cluster.plugin.cache.get("r-web").assigned) == ["uid-web-0"]  # type: ignore[union-attr]
    expired = make_reservation("web", node="n1", phase="Failed")
    factory.update("reservations", available, expired)
    assert cluster.sched.cache.get_pod("default/r-web") is None
    assert cluster.plugin.cache.get("r-web") is None
