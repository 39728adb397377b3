"""Tests of the informer event handlers (``scheduler/eventhandlers.py``): which pods go to the
queue and which to the cache, how pod, node and NodeMetric events requeue pods, and what a
deletion does to a pod that is pending or waiting at Permit. Informers are fakes that call the
registered handlers as client-go's would."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pkg.client.informers import Indexer
from pkg.client.informers.listers import Lister
from pkg.client.resources import Resource
from pkg.util.clock import FakeClock
from scheduler.apis.config import load_scheduler_config
from scheduler.factory import build_scheduler
from scheduler.framework.binder import InMemoryBinder
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import PermitPlugin, Plugin
from scheduler.framework.status import Code, Status
from scheduler.framework.types import PodInfo
from scheduler.plugins.loadaware.testing import NOW, make_metric
from scheduler.plugins.registry import new_registry
from scheduler.scheduler import Scheduler


class FakeInformer:
    """Keeps its store and calls its handlers as an informer would."""

    def __init__(self) -> None:
        self.handlers: list[Any] = []
        self.indexer = Indexer()
        self.lister: Lister[Any] = Lister(self.indexer)
        self.transform: Callable[[dict[str, Any]], Any] = lambda obj: obj

    def add_event_handler(self, handler: Any, resync_period: float | None = None, *,
                          after_existing: bool = False) -> Any:
        # Handlers run in registration order, so ``after_existing`` holds by construction.
        self.handlers.append(handler)
        return handler

    def set_transform(self, transform: Callable[[dict[str, Any]], Any] | None) -> None:
        self.transform = transform or (lambda obj: obj)

    def add(self, obj: dict[str, Any]) -> None:
        obj = self.transform(obj)
        self.indexer.add(obj)
        for h in self.handlers:
            h.on_add(obj, False)

    def update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        old, new = self.transform(old), self.transform(new)
        self.indexer.update(new)
        for h in self.handlers:
            h.on_update(old, new)

    def delete(self, obj: dict[str, Any]) -> None:
        self.indexer.delete(obj)
        for h in self.handlers:
            h.on_delete(obj)


class FakeInformerFactory:
    def __init__(self) -> None:
        self.informers: dict[str, FakeInformer] = {}

    def informer_for(self, resource: Resource, *, typed: bool | None = None) -> FakeInformer:
        return self.informers.setdefault(resource.plural, FakeInformer())


class WaitAtPermit(PermitPlugin):
    """Parks every pod at Permit (a gang waiting for its members)."""

    name = "WaitAtPermit"

    def permit(self, state: CycleState, pod: PodInfo,
               node_name: str) -> tuple[Status | None, float]:
        return Status(Code.WAIT), 600.0


REGISTRY: dict[str, type[Plugin]] = {**new_registry(), WaitAtPermit.name: WaitAtPermit}

LOAD_AWARE = """profiles:
- schedulerName: default-scheduler
  plugins:
    filter: {enabled: [{name: LoadAwareScheduling}]}
  pluginConfig:
  - name: LoadAwareScheduling
    args: {usageThresholds: {cpu: 65}}
"""


class Cluster:
    def __init__(self, config: str = "") -> None:
        self.clock = FakeClock(NOW)
        self.factory = FakeInformerFactory()
        self.binder = InMemoryBinder()
        built = build_scheduler(load_scheduler_config(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
            + config), binder=self.binder, clock=self.clock, registry=REGISTRY,
            informer_factory=self.factory, bind_workers=2)
        self.sched: Scheduler = built.scheduler
        self.handlers = built.handlers
        self.registrations = self.handlers.register(self.factory)
        self.pods = self.factory.informers["pods"]
        self.nodes = self.factory.informers["nodes"]

    def queued(self) -> dict[str, str]:
        return {p["pod"]: p["queue"] for p in self.sched.queue.pending_pods()["pods"]}

    def cpu_counted(self, node: str) -> int:
        ni = self.sched.cache.node_info(node)
        return -1 if ni is None else ni.requested_of("cpu")

    def schedule(self) -> None:
        assert self.sched.schedule_one(timeout=0)

    def after_backoff(self) -> None:
        self.clock.step(11)
        self.sched.queue.flush_backoff_completed()


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    c = Cluster()
    yield c
    c.sched.stop()


def make_node(name: str, cpu: str = "4", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}}}


def make_pod(name: str, cpu: str = "1", node: str = "", scheduler: str | None = None,
             phase: str = "Pending") -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeName": node, "containers": [
        {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}
    if scheduler:
        spec["schedulerName"] = scheduler
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                         "resourceVersion": "1"},
            "spec": spec, "status": {"phase": phase}}


def bound(pod: dict[str, Any], node: str) -> dict[str, Any]:
    new = copy.deepcopy(pod)
    new["spec"]["nodeName"] = node
    new["metadata"]["resourceVersion"] = "2"
    return new


# Routing ----------------------------------------------------------------------------------------


def test_pending_pods_of_our_profiles_are_queued_and_others_ignored(cluster: Cluster) -> None:
    cluster.pods.add(make_pod("ours"))
    cluster.pods.add(make_pod("theirs", scheduler="other-scheduler"))
    cluster.pods.add(make_pod("done", phase="Succeeded"))
    assert cluster.queued() == {"default/ours": "active"}
    assert cluster.sched.cache.pod_count() == 0


def test_assigned_pods_go_to_the_cache_whoever_scheduled_them(cluster: Cluster) -> None:
    cluster.nodes.add(make_node("n1"))
    cluster.pods.add(make_pod("a", cpu="2", node="n1", scheduler="other-scheduler"))
    assert cluster.queued() == {}
    assert cluster.cpu_counted("n1") == 2000


def test_a_pod_bound_elsewhere_leaves_the_queue_for_the_cache(cluster: Cluster) -> None:
    cluster.nodes.add(make_node("n1"))
    pod = make_pod("p", cpu="2")
    cluster.pods.add(pod)
    cluster.pods.update(pod, bound(pod, "n1"))
    assert cluster.queued() == {}
    assert cluster.cpu_counted("n1") == 2000


def test_a_terminated_pod_frees_its_room(cluster: Cluster) -> None:
    cluster.nodes.add(make_node("n1"))
    running = make_pod("a", cpu="2", node="n1", phase="Running")
    cluster.pods.add(running)
    finished = copy.deepcopy(running)
    finished["status"]["phase"] = "Succeeded"
    cluster.pods.update(running, finished)
    assert cluster.cpu_counted("n1") == 0


def test_nodes_go_to_the_cache(cluster: Cluster) -> None:
    cluster.nodes.add(make_node("n1"))
    cluster.nodes.update(make_node("n1"), make_node("n1", cpu="8"))
    ni = cluster.sched.cache.node_info("n1")
    assert ni is not None and ni.allocatable["cpu"] == 8000
    cluster.nodes.delete(make_node("n1", cpu="8"))
    assert cluster.sched.cache.node_count() == 0


def test_the_nodemetric_informer_is_watched_only_when_a_plugin_registered_its_events() -> None:
    plain = Cluster()
    try:
        assert "nodemetrics" not in plain.factory.informers
        assert len(plain.registrations) == 3
    finally:
        plain.sched.stop()
    load_aware = Cluster(LOAD_AWARE)
    try:
        assert len(load_aware.registrations) == 4
        assert "nodemetrics" in load_aware.factory.informers
    finally:
        load_aware.sched.stop()


# Requeueing -------------------------------------------------------------------------------------


def unschedulable_pod(cluster: Cluster, cpu: str = "6") -> dict[str, Any]:
    cluster.nodes.add(make_node("n1"))
    pod = make_pod("p", cpu=cpu)
    cluster.pods.add(pod)
    cluster.schedule()
    assert cluster.queued() == {"default/p": "unschedulable"}
    return pod


def test_a_node_growing_requeues_the_pod_and_a_relabelled_one_does_not(
        cluster: Cluster) -> None:
    unschedulable_pod(cluster)
    cluster.nodes.update(make_node("n1"), make_node("n1", zone="a"))
    assert cluster.queued() == {"default/p": "unschedulable"}
    cluster.nodes.update(make_node("n1", zone="a"), make_node("n1", cpu="8", zone="a"))
    assert cluster.queued()["default/p"] in ("backoff", "active")


def test_a_deleted_assigned_pod_requeues_the_pods_it_blocked(cluster: Cluster) -> None:
    cluster.nodes.add(make_node("n1"))
    blocker = make_pod("blocker", cpu="3", node="n1")
    cluster.pods.add(blocker)
    cluster.pods.add(make_pod("p", cpu="3"))
    cluster.schedule()
    assert cluster.queued() == {"default/p": "unschedulable"}
    cluster.pods.delete(blocker)
    assert cluster.cpu_counted("n1") == 0
    assert cluster.queued()["default/p"] in ("backoff", "active")


def test_a_nodemetric_event_requeues_pods_load_aware_scheduling_rejected() -> None:
    cluster = Cluster(LOAD_AWARE)
    try:
        metrics = cluster.factory.informers["nodemetrics"]
        cluster.nodes.add(make_node("n1", cpu="4"))
        hot = make_metric("n1", usage={"cpu": "3900m", "memory": "1Gi"})
        metrics.add(hot)
        cluster.pods.add(make_pod("p", cpu="100m"))
        cluster.schedule()
        entry = cluster.sched.queue.pending_pods()["pods"][0]
        assert entry["unschedulablePlugins"] == ["LoadAwareScheduling"]
        cool = make_metric("n1", usage={"cpu": "500m", "memory": "1Gi"})
        metrics.update(hot, cool)
        assert cluster.queued()["default/p"] in ("backoff", "active")
        cluster.after_backoff()
        cluster.schedule()
        assert cluster.sched.wait_for_bindings(5)
        assert cluster.binder.bindings == {"default/p": "n1"}
    finally:
        cluster.sched.stop()


def test_a_nodemetric_event_leaves_pods_other_plugins_rejected(cluster: Cluster) -> None:
    unschedulable_pod(cluster)
    cluster.handlers.custom_resource_handler("nodemetrics.v1alpha1.slo.koordinator.sh").on_add(
        make_metric("n1"), False)
    assert cluster.queued() == {"default/p": "unschedulable"}


# Deletions --------------------------------------------------------------------------------------


def test_a_deleted_pending_pod_leaves_the_queue_and_its_diagnosis(cluster: Cluster) -> None:
    pod = unschedulable_pod(cluster)
    assert cluster.sched.diagnosis_of("default/p") is not None
    cluster.pods.delete(pod)
    assert cluster.queued() == {}
    assert cluster.sched.diagnosis_of("default/p") is None


PERMIT = """profiles:
- schedulerName: default-scheduler
  plugins:
    permit: {enabled: [{name: WaitAtPermit}]}
"""


def test_a_pod_deleted_while_waiting_at_permit_is_rejected_and_not_requeued() -> None:
    cluster = Cluster(PERMIT)
    try:
        cluster.nodes.add(make_node("n1"))
        pod = make_pod("p", cpu="3")
        cluster.pods.add(pod)
        cluster.schedule()
        fwk = cluster.sched.profiles["default-scheduler"]
        assert fwk.get_waiting_pod("uid-p") is not None
        assert cluster.cpu_counted("n1") == 3000  # assumed while it waits
        cluster.pods.delete(pod)
        assert cluster.sched.wait_for_bindings(5)
        assert cluster.binder.bindings == {}
        assert cluster.cpu_counted("n1") == 0
        assert cluster.queued() == {}
    finally:
        cluster.sched.stop()


def test_an_update_of_a_pod_being_bound_is_ignored() -> None:
    cluster = Cluster(PERMIT)
    try:
        cluster.nodes.add(make_node("n1"))
        pod = make_pod("p", cpu="3")
        cluster.pods.add(pod)
        cluster.schedule()
        newer = copy.deepcopy(pod)
        newer["metadata"]["resourceVersion"] = "2"
        newer["metadata"]["labels"] = {"touched": "yes"}
        cluster.pods.update(pod, newer)
        assert cluster.queued() == {}
        fwk = cluster.sched.profiles["default-scheduler"]
        fwk.get_waiting_pod("uid-p").allow(WaitAtPermit.name)  # type: ignore[union-attr]
        assert cluster.sched.wait_for_bindings(5)
        assert cluster.binder.bindings == {"default/p": "n1"}
        assert cluster.queued() == {}
    finally:
        cluster.sched.stop()
