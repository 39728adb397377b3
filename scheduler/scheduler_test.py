"""Tests of the scheduling loop (``scheduler/scheduler.py`` and the cycles of
``scheduler/schedule_one.py``) driven as the informers would, through ``EventHandlers``, with
bindings kept in memory: placement, unschedulable pods and their diagnosis, requeueing by
cluster events, failures after the pod was assumed, preemption and profiles chosen by
``schedulerName``."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from pkg.events.events import NOTE_LENGTH_LIMIT
from pkg.util.clock import FakeClock
from scheduler.apis.config import load_scheduler_config
from scheduler.factory import Built, build_scheduler
from scheduler.framework.binder import InMemoryBinder
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import (
    FilterPlugin,
    NodeToStatus,
    Plugin,
    PostFilterPlugin,
    PostFilterResult,
    PreFilterPlugin,
    PreFilterResult,
    ReservePlugin,
)
from scheduler.framework.plugins.defaultpreemption.testing import FakeClient, FakeRecorder
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status, unschedulable
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.interface import ExtendedHandle
from scheduler.plugins.registry import new_registry
from scheduler.schedule_one import truncate_note

HEADER = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
"""


class FailReserve(ReservePlugin):
    """Rejects at Reserve the pods labelled ``fail-reserve``."""

    name = "FailReserve"

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return unschedulable("reservation lost") if "fail-reserve" in pod.labels else None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        pass


class Hook(PreFilterPlugin):
    """Runs ``during`` once, in the middle of a scheduling cycle (an informer event racing
    with the cycle)."""

    name = "Hook"

    def __init__(self, args: object, handle: ExtendedHandle) -> None:
        super().__init__(None, handle)
        self.during: Callable[[], None] | None = None

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   snapshot: Snapshot) -> tuple[PreFilterResult | None, Status | None]:
        if self.during is not None:
            self.during()
            self.during = None
        return None, None


class OnlyN2(FilterPlugin):
    name = "OnlyN2"

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        return None if node_info.name == "n2" else unschedulable("node(s) are not n2")


class BrokenPostFilter(PostFilterPlugin):
    name = "BrokenPostFilter"

    def post_filter(self, state: CycleState, pod: PodInfo,
                    statuses: NodeToStatus) -> tuple[PostFilterResult | None, Status | None]:
        return None, Status(Code.ERROR, "etcd is down")


REGISTRY: dict[str, type[Plugin]] = {
    **new_registry(), FailReserve.name: FailReserve, OnlyN2.name: OnlyN2,
    BrokenPostFilter.name: BrokenPostFilter, Hook.name: Hook}


class Binder(InMemoryBinder):
    """Binds in memory; pods named in ``fail`` raise, after ``release`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.fail: set[str] = set()
        self.release = threading.Event()
        self.release.set()

    def bind(self, pod: PodInfo, node_name: str,
             annotations: Mapping[str, str] | None = None) -> None:
        self.release.wait(5)
        if pod.name in self.fail:
            raise RuntimeError(f"pods {pod.name!r} is being deleted")
        super().bind(pod, node_name, annotations)


def make_node(name: str, cpu: str = "4") -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}}}


def make_pod(name: str, cpu: str = "1", *, priority: int = 0, node: str = "",
             scheduler: str | None = None, labels: Mapping[str, str] | None = None
             ) -> dict[str, Any]:
    spec: dict[str, Any] = {"priority": priority, "nodeName": node, "containers": [
        {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}
    if scheduler:
        spec["schedulerName"] = scheduler
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                         "labels": dict(labels or {})},
            "spec": spec, "status": {"phase": "Pending"}}


class Cluster:
    """A scheduler built from ``config`` (profiles YAML), fed through its event handlers."""

    def __init__(self, config: str = "", **kw: Any) -> None:
        self.clock = FakeClock()
        self.binder = Binder()
        self.built: Built = build_scheduler(load_scheduler_config(HEADER + config),
                                            binder=self.binder, clock=self.clock,
                                            registry=REGISTRY, bind_workers=2, **kw)
        self.sched = self.built.scheduler
        self.handlers = self.built.handlers

    def schedule(self, times: int = 1) -> None:
        """Run ``times`` scheduling cycles (each must pop a pod) and let bindings finish."""
        for _ in range(times):
            assert self.sched.schedule_one(timeout=0), "no pod was ready"
        assert self.sched.wait_for_bindings(5)

    def after_backoff(self) -> None:
        self.clock.step(11)
        self.sched.queue.flush_backoff_completed()

    def queued(self) -> dict[str, dict[str, Any]]:
        return {p["pod"]: p for p in self.sched.queue.pending_pods()["pods"]}

    def cpu_counted(self, node: str) -> int:
        ni = self.sched.cache.node_info(node)
        assert ni is not None
        return ni.requested_of("cpu")


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    c = Cluster()
    yield c
    c.sched.stop()


def test_a_pod_is_bound_to_the_only_node_that_fits(cluster: Cluster) -> None:
    for n in (make_node("small", "1"), make_node("big", "8"), make_node("mid", "2")):
        cluster.handlers.add_node(n)
    cluster.handlers.add_pod_to_queue(make_pod("p", cpu="4"))
    cluster.schedule()
    assert cluster.binder.bindings == {"default/p": "big"}
    assert cluster.cpu_counted("big") == 4000  # assumed until the informer confirms it
    assert cluster.sched.cache.is_assumed("default/p")
    assert cluster.queued() == {}


def test_an_unschedulable_pod_waits_with_its_diagnosis_until_a_node_fits(
        cluster: Cluster) -> None:
    cluster.handlers.add_node(make_node("small", "1"))
    cluster.handlers.add_pod_to_queue(make_pod("p", cpu="4"))
    cluster.schedule()
    assert cluster.binder.bindings == {}
    entry = cluster.queued()["default/p"]
    assert (entry["queue"], entry["unschedulablePlugins"]) == ("unschedulable",
                                                               ["NodeResourcesFit"])
    kept = cluster.sched.diagnosis_of("default/p")
    assert kept is not None
    assert kept["reason"] == "Unschedulable"
    assert kept["message"] == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
        "1 Preemption is not helpful for scheduling..")  # upstream's double period
    assert kept["diagnosis"]["pluginRejections"]["NodeResourcesFit"]["nodes"] == 1
    assert kept["diagnosis"]["nearestMiss"]["node"] == "small"

    # A node too small for it does not wake it; one that fits does.
    cluster.handlers.add_node(make_node("tiny", "2"))
    assert cluster.queued()["default/p"]["queue"] == "unschedulable"
    cluster.handlers.add_node(make_node("big", "8"))
    assert cluster.queued()["default/p"]["queue"] in ("backoff", "active")
    cluster.after_backoff()
    cluster.schedule()
    assert cluster.binder.bindings == {"default/p": "big"}
    assert cluster.sched.diagnosis_of("default/p") is None


def test_a_bind_failure_forgets_the_pod_and_retries_it(cluster: Cluster) -> None:
    cluster.handlers.add_node(make_node("n1"))
    cluster.binder.fail.add("p")
    cluster.handlers.add_pod_to_queue(make_pod("p", cpu="3"))
    cluster.schedule()
    assert not cluster.sched.cache.is_assumed("default/p")
    assert cluster.cpu_counted("n1") == 0
    entry = cluster.queued()["default/p"]
    assert entry["queue"] == "backoff"  # an error, not a rejection
    kept = cluster.sched.diagnosis_of("default/p")
    assert kept is not None and kept["reason"] == "SchedulerError"
    assert "is being deleted" in kept["message"]
    cluster.binder.fail.clear()
    cluster.after_backoff()
    cluster.schedule()
    assert cluster.binder.bindings == {"default/p": "n1"}


def test_a_failed_binding_frees_room_for_the_pods_it_had_blocked(cluster: Cluster) -> None:
    cluster.handlers.add_node(make_node("n1"))
    cluster.binder.fail.add("first")
    cluster.binder.release.clear()
    cluster.handlers.add_pod_to_queue(make_pod("first", cpu="3", priority=10))
    cluster.handlers.add_pod_to_queue(make_pod("second", cpu="3"))
    assert cluster.sched.schedule_one(timeout=0)  # first: assumed, binding held back
    assert cluster.sched.schedule_one(timeout=0)  # second: no room left
    assert cluster.queued()["default/second"]["queue"] == "unschedulable"
    cluster.binder.release.set()
    assert cluster.sched.wait_for_bindings(5)
    # Forgetting the assumed pod is a pod deletion for the others, as upstream.
    assert cluster.queued()["default/second"]["queue"] in ("backoff", "active")
    cluster.after_backoff()
    cluster.binder.fail.clear()
    cluster.schedule(2)
    assert sorted(cluster.binder.bindings) == ["default/first"]
    assert cluster.queued()["default/second"]["queue"] == "unschedulable"


RESERVE = """profiles:
- schedulerName: default-scheduler
  plugins:
    reserve:
      enabled: [{name: LoadAwareScheduling}, {name: FailReserve}]
"""


def test_a_reserve_rejection_forgets_the_pod_everywhere_and_requeues_it() -> None:
    cluster = Cluster(RESERVE)
    try:
        forgotten: list[str] = []
        cluster.sched.profiles["default-scheduler"].register_forget_pod_handler(
            lambda pod: forgotten.append(pod.key))
        cluster.handlers.add_node(make_node("n1"))
        cluster.handlers.add_pod_to_queue(make_pod("p", cpu="3", labels={"fail-reserve": ""}))
        cluster.schedule()
        assert cluster.binder.bindings == {}
        assert not cluster.sched.cache.is_assumed("default/p")
        assert cluster.cpu_counted("n1") == 0
        assert forgotten == ["default/p"]
        assert cluster.queued()["default/p"]["unschedulablePlugins"] == ["FailReserve"]
        kept = cluster.sched.diagnosis_of("default/p")
        assert kept is not None
        # Upstream reports a Reserve rejection as a FitError on the chosen node.
        assert kept["message"] == "0/1 nodes are available: 1 reservation lost."
    finally:
        cluster.sched.stop()


def test_preemption_deletes_the_victim_and_nominates_the_node() -> None:
    client = FakeClient()
    cluster = Cluster(client=client)
    try:
        h = cluster.handlers
        h.add_node(make_node("n1"))
        victim = make_pod("victim", cpu="3", node="n1")
        h.add_pod_to_cache(victim)
        h.add_pod_to_queue(make_pod("vip", cpu="3", priority=100))
        cluster.schedule()
        assert client.deleted() == ["victim"]
        kept = cluster.sched.diagnosis_of("default/vip")
        assert kept is not None and kept["nominatedNodeName"] == "n1"
        nominated = cluster.sched.queue.nominator.nominated_pods_for_node("n1")
        assert [p.name for p in nominated] == ["vip"]
        # The API server deletes the victim; the informer tells the scheduler.
        h.delete_pod_from_cache(victim)
        cluster.after_backoff()
        cluster.schedule()
        assert cluster.binder.bindings == {"default/vip": "n1"}
    finally:
        cluster.sched.stop()


BROKEN_POSTFILTER = """profiles:
- schedulerName: default-scheduler
  plugins:
    postFilter:
      disabled: [{name: "*"}]
      enabled: [{name: BrokenPostFilter}]
"""


def test_a_postfilter_error_is_reported_with_the_fit_error() -> None:
    cluster = Cluster(BROKEN_POSTFILTER)
    try:
        cluster.handlers.add_node(make_node("small", "1"))
        cluster.handlers.add_pod_to_queue(make_pod("p", cpu="4"))
        cluster.schedule()
        kept = cluster.sched.diagnosis_of("default/p")
        assert kept is not None
        assert kept["message"] == "0/1 nodes are available: 1 Insufficient cpu. etcd is down."
        assert cluster.queued()["default/p"]["unschedulablePlugins"] == ["NodeResourcesFit"]
    finally:
        cluster.sched.stop()


PROFILES = """profiles:
- schedulerName: default-scheduler
- schedulerName: koord-scheduler
  plugins:
    filter:
      enabled: [{name: OnlyN2}]
"""


def test_each_pod_is_scheduled_by_the_profile_it_names() -> None:
    cluster = Cluster(PROFILES)
    try:
        h = cluster.handlers
        assert h.responsible_for(make_pod("a"))
        assert h.responsible_for(make_pod("b", scheduler="koord-scheduler"))
        assert not h.responsible_for(make_pod("c", scheduler="other-scheduler"))
        h.add_node(make_node("n1", "16"))
        h.add_node(make_node("n2", "2"))
        h.add_pod_to_queue(make_pod("a"))
        h.add_pod_to_queue(make_pod("b", scheduler="koord-scheduler"))
        cluster.schedule(2)
        assert cluster.binder.bindings == {"default/a": "n1", "default/b": "n2"}
    finally:
        cluster.sched.stop()


def test_each_profile_records_its_events_as_its_scheduler_name() -> None:
    recorders: dict[str, FakeRecorder] = {}
    cluster = Cluster(PROFILES,
                      recorder_factory=lambda name: recorders.setdefault(name, FakeRecorder()))
    try:
        h = cluster.handlers
        h.add_node(make_node("n1", "16"))
        h.add_node(make_node("n2", "2"))
        h.add_pod_to_queue(make_pod("a"))
        h.add_pod_to_queue(make_pod("big", "4", scheduler="koord-scheduler"))
        cluster.schedule(2)
        assert recorders["default-scheduler"].events == [
            ("a", "", "Normal", "Scheduled", "Binding", "Successfully assigned default/a to n1")]
        ((name, related, type_, reason, action, note),) = recorders["koord-scheduler"].events
        assert (name, related, type_, reason, action) == \
            ("big", "", "Warning", "FailedScheduling", "Scheduling")
        assert note.startswith("0/2 nodes are available")
    finally:
        cluster.sched.stop()


def test_a_long_failed_scheduling_note_is_cut_to_what_the_api_accepts() -> None:
    assert truncate_note("short") == "short"
    note = truncate_note("0/5000 nodes are available: " + "é" * 2000)
    assert len(note.encode()) <= NOTE_LENGTH_LIMIT and note.endswith(" ...")


def test_a_pod_deleted_while_waiting_is_forgotten(cluster: Cluster) -> None:
    cluster.handlers.add_node(make_node("small", "1"))
    pod = make_pod("p", cpu="4")
    cluster.handlers.add_pod_to_queue(pod)
    cluster.schedule()
    assert cluster.sched.diagnosis_of("default/p") is not None
    cluster.handlers.delete_pod_from_queue(pod)
    assert cluster.queued() == {}
    assert cluster.sched.diagnosis_of("default/p") is None


HOOK = """profiles:
- schedulerName: default-scheduler
  plugins:
    preFilter: {enabled: [{name: Hook}]}
"""


def test_a_pod_bound_by_someone_else_during_its_cycle_does_not_stop_the_loop() -> None:
    cluster = Cluster(HOOK)
    try:
        h = cluster.handlers
        h.add_node(make_node("n1"))
        pod = make_pod("p", cpu="2")
        h.add_pod_to_queue(pod)
        elsewhere = dict(pod, spec=dict(pod["spec"], nodeName="n1"))
        hook: Any = cluster.sched.profiles["default-scheduler"].plugin("Hook")

        def bound_elsewhere() -> None:
            h.delete_pod_from_queue(pod)
            h.add_pod_to_cache(elsewhere)

        # The informer reports the pod bound (by another scheduler) while we schedule it.
        hook.during = bound_elsewhere
        cluster.schedule()
        assert cluster.binder.bindings == {}
        assert cluster.cpu_counted("n1") == 2000  # counted once, as the bound pod
        assert not cluster.sched.cache.is_assumed("default/p")
        assert cluster.queued() == {}
        h.add_pod_to_queue(make_pod("next", cpu="1"))
        cluster.schedule()
        assert cluster.binder.bindings == {"default/next": "n1"}
    finally:
        cluster.sched.stop()


def test_a_pod_deleted_during_a_failed_bind_is_not_requeued() -> None:
    """The informer's view (``pod_getter``) says the pod is gone: no ghost comes back."""
    informer: dict[str, dict[str, Any]] = {}
    c = Cluster(pod_getter=informer.get)
    try:
        c.handlers.add_node(make_node("n1"))
        c.binder.fail.add("p")
        pod = make_pod("p")
        informer["default/p"] = pod
        c.handlers.add_pod_to_queue(pod)
        del informer["default/p"]  # deleted while its binding is failing
        c.schedule()
        assert "default/p" not in c.queued()
        assert c.cpu_counted("n1") == 0
    finally:
        c.sched.stop()
