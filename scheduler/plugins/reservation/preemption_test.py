"""Preemption of and by Reservation consumers (§7.10), after upstream's ``preemption_test.go``
and the preemption cases of ``plugin_test.go``: the PreFilter extensions count what victims
free inside and outside each Reservation, so that DefaultPreemption evicts the lower-priority
consumer of a full Reservation for a higher-priority owner, which then lands in it, and never
evicts a consumer whose resources would only go back to a Reservation the preemptor cannot
use; with ``enablePreemption`` the plugin preempts itself, sparing disable-preemptible pods."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from api.extension.preemption import LABEL_DISABLE_PREEMPTIBLE
from api.extension.reservation import (
    ANNOTATION_RESERVATION_ALLOCATED,
    format_reservation_allocated,
)
from api.scheduling.v1alpha1.reservation import Reservation as ReservationObject
from pkg.util.clock import FakeClock
from pkg.util.reservation import new_reserve_pod
from scheduler.apis.config import KubeSchedulerConfiguration, load_scheduler_config
from scheduler.bench.inprocess import shipped_config
from scheduler.factory import build_scheduler
from scheduler.framework.binder import InMemoryBinder
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import NodeToStatus
from scheduler.framework.plugins.defaultpreemption.testing import FakeClient, FakeRecorder
from scheduler.framework.status import Code, is_success
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.reservation.cache import new_reservation_info
from scheduler.plugins.reservation.plugin import (
    ERR_REASON_PREEMPTION_FAILED,
    STATE_KEY,
    Reservation,
    ReservationState,
    fits_reservation,
    score_reservation,
)
from scheduler.plugins.reservation.preemption import ReservationPreemption
from scheduler.plugins.reservation.testing import (
    SCHEDULER,
    make_node,
    make_pod,
    make_reservation,
    reservation_config,
)

GI = 1024**3
WEB = {"app": "web"}


def pod(name: str, priority: int, *, cpu: str = "2", node: str = "",
        labels: dict[str, str] | None = None, consumes: str = "") -> dict[str, Any]:
    annotations = ({ANNOTATION_RESERVATION_ALLOCATED: format_reservation_allocated(
        consumes, f"r-{consumes}")} if consumes else None)
    p = make_pod(name, cpu=cpu, labels=labels, node=node, annotations=annotations)
    p["spec"]["priority"] = priority
    return p


class PreemptCluster:
    """The scheduler with the Reservation plugin (``reservation_config``), in-memory bindings,
    a fake clock and a client that records evictions."""

    def __init__(self, config: KubeSchedulerConfiguration | None = None) -> None:
        self.clock = FakeClock()
        self.client = FakeClient()
        self.recorder = FakeRecorder()
        self.binder = InMemoryBinder(on_bind=self.bound_pod)
        built = build_scheduler(
            config or load_scheduler_config(reservation_config()), binder=self.binder,
            clock=self.clock, client=self.client,
            recorder_factory=lambda _name: self.recorder, bind_workers=1)
        self.sched = built.scheduler
        self.handlers = built.handlers
        plugin = self.sched.profiles[SCHEDULER].plugin("Reservation")
        assert isinstance(plugin, Reservation)
        plugin.cache.adapter = built.handlers
        self.plugin = plugin
        self.pods: dict[str, dict[str, Any]] = {}

    def reservation(self, r: ReservationObject) -> None:
        self.plugin.cache.update_reservation(r)

    def bound_pod(self, p: dict[str, Any]) -> None:
        self.pods[p["metadata"]["name"]] = p
        self.plugin.cache.on_pod(p)
        self.handlers.add_pod_to_cache(p)

    def delete(self, name: str) -> None:
        """The informer reports the (evicted) pod gone."""
        p = self.pods.pop(name)
        self.plugin.cache.on_pod_delete(p)
        self.handlers.delete_pod_from_cache(p)

    def schedule(self, *pods: dict[str, Any]) -> dict[str, str]:
        """Queue the pods, let backoffs end, run cycles until the queue is idle; bindings."""
        for p in pods:
            self.handlers.add_pod_to_queue(p)
        self.clock.step(11)
        self.sched.queue.flush_backoff_completed()
        while self.sched.schedule_one(timeout=0):
            assert self.sched.wait_for_bindings(5)
        return dict(self.binder.bindings)

    def node_info(self, name: str) -> NodeInfo:
        """A copy of the node as a cycle starting now sees it."""
        self.sched.cache.update_snapshot(self.sched.snapshot)
        ni = self.sched.snapshot.get(name)
        assert ni is not None
        return ni.clone()

    def nominated(self, node: str) -> list[str]:
        return [p.name for p in self.sched.queue.nominator.nominated_pods_for_node(node)]

    def stop(self) -> None:
        self.sched.stop()


@pytest.fixture
def cluster() -> Iterator[PreemptCluster]:
    c = PreemptCluster()
    yield c
    c.stop()


@pytest.fixture
def preempting() -> Iterator[PreemptCluster]:
    c = PreemptCluster(load_scheduler_config(reservation_config(enable_preemption=True)))
    yield c
    c.stop()


def full_reservation(c: PreemptCluster, consumer_labels: dict[str, str] | None = None) -> None:
    """n1 (4 cpu): a reusable 2-cpu Reservation "web" full with the priority-0 consumer
    web-low; the other 2 cpu taken by "other" (priority 100)."""
    c.handlers.add_node(make_node("n1", cpu="4"))
    c.reservation(make_reservation("web", node="n1", cpu="2", memory="4Gi",
                                   allocate_once=False))
    c.bound_pod(pod("other", 100, node="n1"))
    c.bound_pod(pod("web-low", 0, node="n1", labels={**WEB, **(consumer_labels or {})},
                    consumes="web"))


def test_default_preemption_evicts_the_consumer_and_the_preemptor_lands_in_the_reservation(
        cluster: PreemptCluster) -> None:
    full_reservation(cluster)
    assert cluster.schedule(pod("web-high", 10, labels=WEB)) == {}
    assert cluster.client.deleted() == ["web-low"]
    assert cluster.nominated("n1") == ["web-high"]
    assert ("web-low", "web-high", "Normal", "Preempted", "Preempting",
            "Preempted by pod uid-web-high on node n1") in cluster.recorder.events

    cluster.delete("web-low")
    assert cluster.schedule() == {"default/web-high": "n1"}
    assert cluster.binder.annotations["default/web-high"] == {
        ANNOTATION_RESERVATION_ALLOCATED: '{"name":"web","uid":"r-web"}'}


def test_with_the_shipped_profile_default_preemption_evicts_the_consumer() -> None:
    """Upstream's shipped profile: PostFilter Reservation (no preemption), Coscheduling,
    ElasticQuota, DefaultPreemption."""
    cluster = PreemptCluster(shipped_config())
    try:
        full_reservation(cluster)
        assert cluster.schedule(pod("web-high", 10, labels=WEB)) == {}
        assert cluster.client.deleted() == ["web-low"]
        cluster.delete("web-low")
        assert cluster.schedule() == {"default/web-high": "n1"}
        assert cluster.binder.annotations["default/web-high"][
            ANNOTATION_RESERVATION_ALLOCATED] == '{"name":"web","uid":"r-web"}'
    finally:
        cluster.stop()


def test_a_victim_inside_a_reservation_frees_nothing_for_a_pod_that_cannot_use_it(
        cluster: PreemptCluster) -> None:
    """Evicting web-low would only give its 2 cpu back to "web": the plain pod needs them on
    the node, so there is nothing to preempt."""
    full_reservation(cluster)
    assert cluster.schedule(pod("plain", 10)) == {}
    assert cluster.client.deleted() == []
    assert cluster.nominated("n1") == []


def test_a_victim_outside_reservations_still_makes_room(cluster: PreemptCluster) -> None:
    full_reservation(cluster)
    assert cluster.schedule(pod("plain", 200)) == {}
    # "other" (priority 100) is outside any Reservation: evicting it frees 2 cpu.
    assert cluster.client.deleted() == ["other"]


def test_with_enable_preemption_the_plugin_preempts(preempting: PreemptCluster) -> None:
    assert isinstance(preempting.plugin.preemption, ReservationPreemption)
    full_reservation(preempting)
    assert preempting.schedule(pod("web-high", 10, labels=WEB)) == {}
    assert preempting.client.deleted() == ["web-low"]
    preempting.delete("web-low")
    assert preempting.schedule() == {"default/web-high": "n1"}
    assert preempting.binder.annotations["default/web-high"] == {
        ANNOTATION_RESERVATION_ALLOCATED: '{"name":"web","uid":"r-web"}'}


def test_a_disable_preemptible_consumer_is_spared(preempting: PreemptCluster) -> None:
    full_reservation(preempting, {LABEL_DISABLE_PREEMPTIBLE: "true"})
    assert preempting.schedule(pod("web-high", 10, labels=WEB)) == {}
    assert preempting.client.deleted() == []
    diagnosis = preempting.sched.diagnoses.get("default/web-high")
    assert diagnosis is not None
    message = diagnosis["message"]
    assert "preemption: 0/1 nodes are available: 1 No preemption victims found for " \
           "incoming pod." in message
    assert message.endswith("1 Reservation(s) matched owner total.")


def test_without_enable_preemption_the_plugin_only_diagnoses(cluster: PreemptCluster) -> None:
    assert cluster.plugin.preemption is None
    state = CycleState()
    state.write(STATE_KEY, ReservationState(owner_matched=2))
    result, status = cluster.plugin.post_filter(state, PodInfo(pod("p", 1)), NodeToStatus())
    assert result is None and status is not None
    assert status.reasons == ("2 Reservation(s) matched owner total",)


def test_post_filter_says_why_preemption_did_not_run_then_the_diagnosis(
        preempting: PreemptCluster) -> None:
    never = pod("p", 1)
    never["spec"]["preemptionPolicy"] = "Never"
    state = CycleState()
    state.write(STATE_KEY, ReservationState(owner_matched=3))
    _, status = preempting.plugin.post_filter(state, PodInfo(never), NodeToStatus())
    assert status is not None and status.code == Code.UNSCHEDULABLE
    assert status.reasons == ("preemption: not eligible due to preemptionPolicy=Never.",
                              "3 Reservation(s) matched owner total")


def test_a_reserve_pod_preempts_lower_priority_pods(preempting: PreemptCluster) -> None:
    preempting.handlers.add_node(make_node("n1", cpu="4"))
    preempting.bound_pod(pod("low", 0, cpu="4", node="n1"))
    r = make_reservation("rsv", cpu="2", memory="1Gi")
    reserve_pod = new_reserve_pod(r)
    reserve_pod["spec"]["priority"] = 100
    preempting.handlers.add_pod_to_queue(reserve_pod)
    preempting.schedule()
    assert preempting.client.deleted() == ["low"]
    assert preempting.nominated("n1") == [reserve_pod["metadata"]["name"]]
    # While its victim terminates on the nominated node, the reserve pod waits for it.
    preemption = preempting.plugin.preemption
    assert preemption is not None
    assert preemption.nominated_node_of(PodInfo(reserve_pod)) == "n1"


# The PreFilter extensions and the arithmetic ------------------------------------------------


def test_removed_pods_are_counted_inside_their_reservation_and_outside(
        cluster: PreemptCluster) -> None:
    full_reservation(cluster)
    cluster.handlers.add_node(make_node("n2"))
    state = CycleState()
    preemptor = PodInfo(pod("web-high", 10, labels=WEB))
    ni = cluster.node_info("n1")
    cluster.plugin.before_pre_filter(state, preemptor)
    victim, other = PodInfo(cluster.pods["web-low"]), PodInfo(cluster.pods["other"])
    clone = state.clone()
    plugin = cluster.plugin
    assert plugin.remove_pod(clone, preemptor, victim, ni) is None
    assert plugin.remove_pod(clone, preemptor, other, ni) is None
    s = clone.read(STATE_KEY)
    assert s.preemptible_in_rrs == {"n1": {"r-web": {"cpu": 2000, "memory": 4 * GI}}}
    assert s.preemptible == {"n1": {"cpu": 2000, "memory": 4 * GI, "pods": 2}}
    # The clone's counts are its own; a reprieved victim takes its share back.
    assert state.read(STATE_KEY).preemptible == {}
    plugin.add_pod(clone, preemptor, victim, ni)
    assert s.preemptible_in_rrs["n1"]["r-web"] == {"cpu": 0, "memory": 0}
    assert s.preemptible["n1"]["pods"] == 1
    # Nodes without Reservations are NodeResourcesFit's alone.
    n2 = cluster.node_info("n2")
    plugin.remove_pod(clone, preemptor, other, n2)
    assert "n2" not in s.preemptible


def test_filter_lets_the_preemptor_reuse_what_victims_inside_the_reservation_free(
        cluster: PreemptCluster) -> None:
    full_reservation(cluster)
    plugin = cluster.plugin
    victim = PodInfo(cluster.pods["web-low"])
    for preemptor, fits in ((PodInfo(pod("web-high", 10, labels=WEB)), True),
                            (PodInfo(pod("plain", 10)), False)):
        ni = cluster.node_info("n1")
        state = CycleState()
        plugin.before_pre_filter(state, preemptor)
        _, status = plugin.pre_filter(state, preemptor, cluster.sched.snapshot)
        assert status is None  # a consumer exists: no Skip even for the plain pod
        # Before the simulation: the owner does not fit its full Reservation; the plain
        # pod is NodeResourcesFit's to reject.
        assert is_success(plugin.filter(state, preemptor, ni)) is not fits
        ni.remove_pod(victim.key)
        plugin.remove_pod(state, preemptor, victim, ni)
        status = plugin.filter(state, preemptor, ni)
        if fits:
            assert is_success(status)
        else:
            assert status is not None and status.reasons == (ERR_REASON_PREEMPTION_FAILED,)


def test_fits_reservation_and_score_count_what_victims_free() -> None:
    r = make_reservation("web", node="n1", cpu="4", memory="8Gi", allocate_policy="Restricted")
    info = new_reservation_info(r, {"a": {"cpu": 2000, "memory": 4 * GI},
                                    "b": {"cpu": 2000, "memory": 4 * GI}})
    requests = {"cpu": 2000, "memory": 4 * GI}
    assert fits_reservation(requests, info) == ["Reservation(s) Insufficient cpu",
                                                "Reservation(s) Insufficient memory"]
    assert fits_reservation(requests, info, {"cpu": 2000, "memory": 4 * GI}) == []
    assert score_reservation(requests, info) == 0
    assert score_reservation(requests, info, {"cpu": 2000, "memory": 4 * GI}) == 100
