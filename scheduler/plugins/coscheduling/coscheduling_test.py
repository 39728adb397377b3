"""Coscheduling through the scheduling loop: PreEnqueue holds, Permit gathers, Strict and
NonStrict rejections, timeouts, the bind-gang annotations, pods without gangs untouched, and the
``gang`` section of a pending gang pod's why-pending entry.
Mirrors upstream's coscheduling_test.go and core/core_test.go cases (PreEnqueue / PreFilter
"child pod not collect enough", Permit wait-then-success, PostFilter strict rejection,
Unreserve)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from api.extension.coscheduling import (
    ANNOTATION_BIND_GANG_GROUP_ID,
    ANNOTATION_BIND_GANG_MEMBER_COUNT,
    ANNOTATION_GANG_GROUPS,
    ANNOTATION_GANG_MATCH_POLICY,
)
from pkg.util.clock import FakeClock
from scheduler.apis.config import load_scheduler_config
from scheduler.diagnosis import explain_text
from scheduler.factory import build_scheduler
from scheduler.framework.binder import InMemoryBinder
from scheduler.framework.events import POD_GROUP
from scheduler.framework.plugins.defaultpreemption.testing import FakeClient, FakeRecorder
from scheduler.framework.runtime import WaitingPod
from scheduler.framework.status import Status
from scheduler.framework.types import PodInfo
from scheduler.plugins.coscheduling import coscheduling
from scheduler.plugins.coscheduling.coscheduling import NAME, Coscheduling
from scheduler.plugins.coscheduling.testing import (
    coscheduling_config,
    gang_annotations,
    make_node,
    make_pod,
    make_pod_group,
)
from test.e2e.cluster import wait_for


class GangCluster:
    """A scheduler with Coscheduling, in-memory bindings and a fake clock; pods and PodGroups
    reach the gang cache and the queue as their informers would deliver them."""

    def __init__(self, default_timeout: int = 600) -> None:
        self.clock = FakeClock()
        self.binder = InMemoryBinder()
        self.recorder = FakeRecorder()
        self.client = FakeClient()
        built = build_scheduler(load_scheduler_config(coscheduling_config(default_timeout)),
                                binder=self.binder, clock=self.clock, client=self.client,
                                recorder_factory=lambda _name: self.recorder, bind_workers=8)
        self.sched = built.scheduler
        self.handlers = built.handlers
        self.fwk = self.sched.profiles["koord-scheduler"]
        plugin = self.fwk.plugin(NAME)
        assert isinstance(plugin, Coscheduling)
        self.plugin = plugin
        self.handlers.add_node(make_node("n1"))

    def add_pod_group(self, pg: dict[str, Any]) -> None:
        self.plugin.cache.on_pod_group_add(pg)

    def add_pod(self, pod: dict[str, Any]) -> None:
        # The plugin's informer handler was registered before the scheduler's own.
        self.plugin.cache.on_pod_add(pod)
        if pod["spec"]["nodeName"]:
            self.handlers.add_pod_to_cache(pod)
        else:
            self.handlers.add_pod_to_queue(pod)

    def delete_pod(self, pod: dict[str, Any]) -> None:
        self.plugin.cache.on_pod_delete(pod)
        self.handlers.delete_pod_from_queue(pod)

    def schedule_ready(self) -> int:
        """Run a scheduling cycle for every pod in activeQ; how many were popped."""
        n = 0
        while self.sched.schedule_one(timeout=0):
            n += 1
        return n

    def waiting(self) -> list[WaitingPod]:
        return self.fwk.waiting_pods()

    def held(self) -> dict[str, str]:
        """Pods parked by PreEnqueue → the gating plugin."""
        return {p["pod"]: p["gatingPlugin"] for p in self.sched.queue.pending_pods()["pods"]
                if p["gatingPlugin"]}

    def events(self, name: str) -> list[tuple[str, str, str]]:
        self.plugin.flush_reports()
        return [(type_, reason, note) for pod, _, type_, reason, _, note in
                self.recorder.events if pod == name]

    def stop(self) -> None:
        # Pods left waiting at Permit would bind or fail only at their (fake) timeout.
        for wp in self.waiting():
            wp.reject(NAME, "test over")
        self.sched.wait_for_bindings(30)
        self.sched.stop()


@pytest.fixture
def cluster() -> Iterator[GangCluster]:
    c = GangCluster()
    yield c
    c.stop()


def wait_bound(c: GangCluster, n: int) -> dict[str, str]:
    assert c.sched.wait_for_bindings(30)
    assert len(c.binder.bindings) == n, c.binder.bindings
    return c.binder.bindings


def test_held_members_are_not_asked_again_for_each_bound_pod_or_pod_group_status(
        cluster: GangCluster) -> None:
    """Only their gang group's completion (the gang cache's activation) releases them; a pod
    bound elsewhere or a PodGroup status write does not re-run PreEnqueue on each member."""
    cluster.add_pod_group(make_pod_group("job", 3))
    cluster.add_pod(make_pod("a", pod_group="job"))
    cluster.add_pod(make_pod("b", pod_group="job"))
    asked: list[str] = []
    check = cluster.plugin.basic_check

    def counting_check(pod: PodInfo) -> Status | None:
        asked.append(pod.name)
        return check(pod)

    cluster.plugin.basic_check = counting_check  # type: ignore[method-assign]
    cluster.add_pod(make_pod("elsewhere", node="n1"))
    status_write = make_pod_group("job", 3)
    status_write["status"] = {"phase": "Pending"}
    cluster.handlers.custom_resource_handler(POD_GROUP).on_update(
        make_pod_group("job", 3), status_write)
    assert asked == [] and set(cluster.held()) == {"default/a", "default/b"}
    cluster.add_pod(make_pod("c", pod_group="job"))
    assert cluster.schedule_ready() == 3


def test_pod_group_members_are_held_until_min_member_exist_then_all_bind(
        cluster: GangCluster) -> None:
    cluster.add_pod_group(make_pod_group("job", 3))
    cluster.add_pod(make_pod("a", pod_group="job"))
    cluster.add_pod(make_pod("b", pod_group="job"))
    assert cluster.held() == {"default/a": "Coscheduling", "default/b": "Coscheduling"}
    assert cluster.schedule_ready() == 0
    message = ("gangGroup [default/job] basic check: memberGangs [default/job] child pod not "
               "collect enough (default/job has 2 of 3 pods), current gang: default/job, "
               "podName: default/b")
    assert cluster.events("b") == [("Warning", "FailedScheduling", message)]
    patched = [call for call in cluster.client.calls if call[1] == "b"]
    assert patched[-1][2]["status"]["conditions"][0]["message"] == message
    assert patched[-1][3] == "status"

    cluster.add_pod(make_pod("c", pod_group="job"))
    assert cluster.held() == {}
    assert cluster.schedule_ready() == 3
    assert wait_bound(cluster, 3) == {"default/a": "n1", "default/b": "n1", "default/c": "n1"}
    # The bind-gang annotations ride on the bindings: no patch of their own.
    assert not [call for call in cluster.client.calls if call[3] is None]
    annotations = list(cluster.binder.annotations.values())
    assert len(annotations) == 3
    assert all(a[ANNOTATION_BIND_GANG_GROUP_ID] == "default/job"
               and a[ANNOTATION_BIND_GANG_MEMBER_COUNT] == "3" for a in annotations)


def test_permit_waits_until_min_member_are_assumed(cluster: GangCluster) -> None:
    cluster.add_pod_group(make_pod_group("job", 2, timeout=10))
    cluster.add_pod(make_pod("a", pod_group="job"))
    cluster.add_pod(make_pod("b", pod_group="job"))
    assert cluster.sched.schedule_one(timeout=0)
    assert [w.pod.name for w in cluster.waiting()] == ["a"]
    assert cluster.waiting()[0].pending_plugins() == ["Coscheduling"]
    assert cluster.binder.bindings == {}
    assert cluster.sched.schedule_one(timeout=0)
    wait_bound(cluster, 2)


def test_stopping_the_scheduler_with_a_member_waiting_at_permit_logs_no_error(
        caplog: pytest.LogCaptureFixture) -> None:
    """Stopping rejects the waiting member; its failed binding cycle must not try to use the
    binding pool the stop is shutting down (it logged 'binding cycle ... failed')."""
    c = GangCluster()
    c.add_pod_group(make_pod_group("job", 2, timeout=10))
    c.add_pod(make_pod("a", pod_group="job"))
    c.add_pod(make_pod("b", pod_group="job"))
    assert c.sched.schedule_one(timeout=0)
    [waiting] = c.waiting()
    with caplog.at_level("INFO", logger="scheduler.schedule_one"):
        stopping = threading.Thread(target=c.sched.stop)
        stopping.start()
        # The stop waits for the binding cycles; the member is rejected once it has begun.
        wait_for(lambda: c.sched.binder_pool._shutdown, timeout=10)
        waiting.reject(NAME, "the scheduler is stopping")
        stopping.join(10)
    assert not stopping.is_alive()
    assert not [r for r in caplog.records if r.levelname == "ERROR"], caplog.text
    assert c.binder.bindings == {}


def test_a_pod_group_without_its_pod_group_object_is_not_scheduled(
        cluster: GangCluster) -> None:
    cluster.add_pod(make_pod("a", pod_group="missing"))
    assert cluster.held() == {"default/a": "Coscheduling"}
    assert cluster.events("a")[0][2] == ("gang has not init, gangName: default/missing, "
                                         "podName: default/a")
    # The PodGroup arrives: minMember 1 is met and the pod is released.
    cluster.add_pod_group(make_pod_group("missing", 1))
    assert cluster.schedule_ready() == 1
    wait_bound(cluster, 1)


def test_annotation_gangs_appear_with_their_first_pod_and_go_with_their_last(
        cluster: GangCluster) -> None:
    a = make_pod("a", annotations=gang_annotations("g", 2))
    b = make_pod("b", annotations=gang_annotations("g", 2))
    cluster.add_pod(a)
    gang = cluster.plugin.cache.gangs["default/g"]
    assert (gang.min_member, gang.initialised, len(gang.children)) == (2, True, 1)
    cluster.add_pod(b)
    cluster.delete_pod(a)
    assert "default/g" in cluster.plugin.cache.gangs
    cluster.delete_pod(b)
    assert "default/g" not in cluster.plugin.cache.gangs


def test_a_malformed_min_available_is_reported_and_the_gang_not_initialised(
        cluster: GangCluster) -> None:
    cluster.add_pod(make_pod("a", annotations=gang_annotations("g", "three")))
    events = cluster.events("a")
    assert events[0][:2] == ("Warning", "InvalidGangAnnotation")
    assert "gang.scheduling.koordinator.sh/min-available" in events[0][2]
    assert "'three'" in events[0][2]
    assert "not initialised" in events[0][2]
    assert cluster.held() == {"default/a": "Coscheduling"}
    assert events[1][2] == "gang has not init, gangName: default/g, podName: default/a"


def test_malformed_optional_annotations_fall_back_with_a_warning(cluster: GangCluster) -> None:
    cluster.add_pod(make_pod("a", annotations=gang_annotations(
        "g", 1, mode="Loose", wait="soon", **{ANNOTATION_GANG_GROUPS: "[not json"})))
    notes = [note for _, reason, note in cluster.events("a")
             if reason == "InvalidGangAnnotation"]
    assert len(notes) == 3
    assert any("'Loose'" in n and "the gang is Strict" in n for n in notes)
    assert any("'soon'" in n and "default timeout (600s)" in n for n in notes)
    assert any("'[not json'" in n for n in notes)
    params = cluster.plugin.cache.gangs["default/g"].params
    assert params is not None
    assert (params.mode, params.wait_time, params.groups) == ("Strict", 600.0, ("default/g",))
    assert cluster.schedule_ready() == 1
    wait_bound(cluster, 1)


def test_strict_gang_rejects_waiting_members_when_one_cannot_fit(cluster: GangCluster) -> None:
    cluster.add_pod_group(make_pod_group("job", 2))
    cluster.add_pod(make_pod("a", cpu="3", pod_group="job"))
    cluster.add_pod(make_pod("b", cpu="3", pod_group="job"))  # n1 has 4 cpus
    assert cluster.sched.schedule_one(timeout=0)
    assert len(cluster.waiting()) == 1
    assert cluster.sched.schedule_one(timeout=0)
    assert cluster.sched.wait_for_bindings(30)
    assert cluster.binder.bindings == {}
    assert cluster.waiting() == []
    kept = {key: cluster.sched.diagnosis_of(key) for key in ("default/a", "default/b")}
    waiter = "default/a" if "gets rejected due to member" in str(kept["default/a"]) \
        else "default/b"
    rejected = kept[waiter]
    assert rejected is not None
    assert 'GangGroup "default/job" gets rejected due to member Pod' in rejected["message"]
    assert rejected["message"].endswith(", alreadyWaitForBound: 1")


def test_members_not_tried_yet_learn_why_their_group_failed(cluster: GangCluster) -> None:
    cluster.add_pod_group(make_pod_group("job", 3))
    cluster.add_pod(make_pod("a", cpu="8", pod_group="job"))  # fits nowhere
    cluster.add_pod(make_pod("b", pod_group="job"))
    cluster.add_pod(make_pod("c", pod_group="job"))
    assert cluster.sched.schedule_one(timeout=0)
    cluster.plugin.flush_reports()
    conditions = {call[1]: call[2]["status"]["conditions"][0]["message"]
                  for call in cluster.client.calls if call[3] == "status"}
    expected = ('GangGroup "default/job" gets rejected due to member Pod "default/a" is '
                'unschedulable with reason "0/1 nodes are available: 1 Insufficient cpu.", '
                'alreadyWaitForBound: 0')
    assert conditions["b"] == conditions["c"] == expected


def test_non_strict_gang_keeps_waiting_members_until_the_timeout(cluster: GangCluster) -> None:
    cluster.add_pod_group(make_pod_group("job", 2, timeout=5, annotations={
        "gang.scheduling.koordinator.sh/mode": "NonStrict"}))
    cluster.add_pod(make_pod("a", cpu="3", pod_group="job"))
    cluster.add_pod(make_pod("b", cpu="3", pod_group="job"))
    assert cluster.schedule_ready() == 2
    assert len(cluster.waiting()) == 1  # the other did not fit and was not rejected
    waiter = cluster.waiting()[0].pod.key
    assert cluster.clock.wait_for_waiters(1)
    cluster.clock.step(5)
    assert cluster.sched.wait_for_bindings(30)
    assert cluster.binder.bindings == {}
    kept = cluster.sched.diagnosis_of(waiter)
    assert kept is not None
    assert "rejected due to timeout after waiting 5s at plugin Coscheduling" in kept["message"]


def test_waiting_and_running_policy_counts_bound_members(cluster: GangCluster) -> None:
    cluster.add_pod_group(make_pod_group("job", 2, annotations={
        ANNOTATION_GANG_MATCH_POLICY: "waiting-and-running"}))
    cluster.add_pod(make_pod("a", pod_group="job", node="n1"))  # already running
    cluster.add_pod(make_pod("b", pod_group="job"))
    assert cluster.schedule_ready() == 1
    assert wait_bound(cluster, 1) == {"default/b": "n1"}


def test_only_waiting_policy_ignores_bound_members(cluster: GangCluster) -> None:
    cluster.add_pod_group(make_pod_group("job", 2, annotations={
        ANNOTATION_GANG_MATCH_POLICY: "only-waiting"}))
    cluster.add_pod(make_pod("a", pod_group="job", node="n1"))
    cluster.add_pod(make_pod("b", pod_group="job"))
    assert cluster.schedule_ready() == 1
    assert [w.pod.name for w in cluster.waiting()] == ["b"]


def test_once_satisfied_gang_lets_later_members_through(cluster: GangCluster) -> None:
    cluster.add_pod_group(make_pod_group("job", 2))
    cluster.add_pod(make_pod("a", pod_group="job", node="n1"))
    cluster.add_pod(make_pod("b", pod_group="job", node="n1"))
    cluster.add_pod(make_pod("c", pod_group="job"))
    assert cluster.schedule_ready() == 1
    assert wait_bound(cluster, 1) == {"default/c": "n1"}


def test_a_gang_group_binds_only_when_every_gang_has_enough(cluster: GangCluster) -> None:
    groups = {ANNOTATION_GANG_GROUPS: '["default/g1","default/g2"]'}
    cluster.add_pod(make_pod("a", annotations=gang_annotations("g1", 1, **groups)))
    assert cluster.held() == {"default/a": "Coscheduling"}
    assert "memberGangs [default/g2] doesn't exists" in cluster.events("a")[0][2]
    cluster.add_pod(make_pod("b", annotations=gang_annotations("g2", 1, **groups)))
    assert cluster.schedule_ready() == 2
    bindings = wait_bound(cluster, 2)
    assert set(bindings) == {"default/a", "default/b"}
    assert {a[ANNOTATION_BIND_GANG_GROUP_ID] for a in cluster.binder.annotations.values()} \
        == {"default/g1,default/g2"}


def test_pods_without_a_gang_schedule_as_before(cluster: GangCluster) -> None:
    cluster.handlers.add_node(make_node("n2"))
    cluster.add_pod(make_pod("plain"))
    assert cluster.held() == {}
    assert cluster.schedule_ready() == 1
    wait_bound(cluster, 1)
    assert cluster.recorder.events[0][3] == "Scheduled"
    assert [c for c in cluster.client.calls if c[3] is None] == []


def test_a_strict_timeout_rejects_and_unreserves_every_waiting_member(
        cluster: GangCluster) -> None:
    cluster.add_pod_group(make_pod_group("job", 3, timeout=10))
    for name in ("a", "b", "c"):
        cluster.add_pod(make_pod(name, pod_group="job"))
    assert cluster.sched.schedule_one(timeout=0)
    assert cluster.sched.schedule_one(timeout=0)  # the third member is not tried yet
    assert len(cluster.waiting()) == 2
    assert cluster.clock.wait_for_waiters(1)
    cluster.clock.step(10)
    assert cluster.sched.wait_for_bindings(30)
    assert cluster.binder.bindings == {}
    assert cluster.waiting() == []
    messages = sorted(str((cluster.sched.diagnosis_of(k) or {}).get("message"))
                      for k in cluster.sched.pending_diagnoses())
    assert len(messages) == 2
    assert any("rejected due to timeout after waiting 10s at plugin Coscheduling" in m
               for m in messages)
    assert all("timeout" in m or 'Gang "default/job" gets rejected due to Pod' in m
               for m in messages)
    # Nothing of theirs stays assumed on the node.
    node = cluster.sched.cache.node_info("n1")
    assert node is not None and node.requested_of("cpu") == 0


def record_pops(c: GangCluster) -> list[str]:
    """The keys of the pods the scheduler pops, in order, from now on."""
    order: list[str] = []
    pop = c.sched.queue.pop

    def recording(timeout: float | None = None) -> Any:
        qpi = pop(timeout)
        if qpi is not None:
            order.append(qpi.key)
        return qpi

    c.sched.queue.pop = recording  # type: ignore[method-assign]
    return order


def test_next_pod_schedules_a_gangs_members_one_after_another(cluster: GangCluster) -> None:
    """Upstream's NextPod and gang scheduling context: once a member passes PreFilter, the
    group's other pending members are popped next, not interleaved with another gang's."""
    cluster.handlers.add_node(make_node("n2"))
    for name in ("job-a", "job-b"):
        cluster.add_pod_group(make_pod_group(name, 3))
    for i in range(3):
        for job in ("a", "b"):
            cluster.add_pod(make_pod(f"{job}{i}", pod_group=f"job-{job}"))
            cluster.clock.step(0.01)  # queue order = arrival order
    order = record_pops(cluster)
    assert cluster.schedule_ready() == 6
    assert order == [f"default/{p}" for p in ("a0", "a1", "a2", "b0", "b1", "b2")]
    wait_bound(cluster, 6)
    assert cluster.plugin.context.current is None  # closed when job-b passed Permit


def test_a_failed_strict_group_fails_its_remaining_members_at_pre_filter(
        cluster: GangCluster) -> None:
    cluster.add_pod_group(make_pod_group("job", 4))
    for name, cpu in (("a", "1"), ("b", "1"), ("c", "8"), ("d", "1")):  # c fits nowhere
        cluster.add_pod(make_pod(name, cpu=cpu, pod_group="job"))
        cluster.clock.step(0.01)
    order = record_pops(cluster)
    assert cluster.schedule_ready() == 4
    assert order == ["default/a", "default/b", "default/c", "default/d"]
    assert cluster.sched.wait_for_bindings(30)
    assert cluster.binder.bindings == {} and cluster.waiting() == []
    d = cluster.sched.diagnosis_of("default/d")
    assert d is not None
    # d never reached Filter: its PreFilter answered with the group's failure.
    assert d["diagnosis"]["preFilterMessage"] == (
        'GangGroup "default/job" gets rejected due to member Pod "default/c" is unschedulable '
        'with reason "0/1 nodes are available: 1 Insufficient cpu.", alreadyWaitForBound: 2')
    assert d["diagnosis"]["pluginRejections"] == {}
    assert cluster.plugin.context.current is None  # every pending member was tried
    # d's own PostFilter keeps the group's first message rather than one quoting it.
    cluster.plugin.flush_reports()
    told = [call[2]["status"]["conditions"][0]["message"] for call in cluster.client.calls
            if call[3] == "status"]
    assert told and all(m.count("GangGroup") <= 1 for m in told), told


def test_aware_network_topology_is_loaded_and_said_to_be_not_implemented(
        caplog: pytest.LogCaptureFixture) -> None:
    config = coscheduling_config().replace(
        "args: {defaultTimeout: 600s}", "args: {defaultTimeout: 600s, awareNetworkTopology: true}")
    built = build_scheduler(load_scheduler_config(config), binder=InMemoryBinder())
    try:
        plugin = built.scheduler.profiles["koord-scheduler"].plugin(NAME)
        assert isinstance(plugin, Coscheduling) and plugin.args.aware_network_topology
        assert ("awareNetworkTopology is set but network-topology gang placement is not "
                "implemented; gangs are placed without ClusterNetworkTopology") in caplog.messages
    finally:
        built.scheduler.stop()


# Why pending: the gang section ------------------------------------------------------------


def _text(entry: dict[str, Any]) -> str:
    return explain_text(entry["pod"], {}, entry["message"], entry["explain"])


def test_a_pod_held_at_pre_enqueue_is_explained_with_its_gang(cluster: GangCluster) -> None:
    cluster.add_pod_group(make_pod_group("train", 3, timeout=30))
    cluster.add_pod(make_pod("train-0", pod_group="train"))
    cluster.add_pod(make_pod("train-1", pod_group="train"))
    assert cluster.schedule_ready() == 0  # held: never tried, so no Filter diagnosis

    entry = cluster.sched.diagnosis_of("default/train-1")
    assert entry is not None and entry["diagnosis"] is None
    gang = entry["gang"]
    assert gang["name"] == "default/train"
    assert gang["gangFrom"] == "GangFromPodGroupCrd"
    assert (gang["mode"], gang["gangMatchPolicy"]) == ("Strict", "once-satisfied")
    assert (gang["minRequiredNumber"], gang["totalChildrenNum"]) == (3, 3)
    assert gang["children"] == ["default/train-0", "default/train-1"]
    assert (gang["waitingForBindChildren"], gang["boundChildren"]) == ([], [])
    assert gang["state"] == "HeldAtPreEnqueue"
    assert "default/train has 2 of 3 pods" in gang["message"]
    assert gang["timeLeftSeconds"] is None
    text = _text(entry)
    assert ("Gang default/train (GangFromPodGroupCrd, Strict, match policy once-satisfied): "
            "members 2 of 3 required (totalNumber 3)") in text
    assert "  members: (default/train-0, default/train-1)" in text
    assert "  this pod: HeldAtPreEnqueue: gangGroup [default/train] basic check" in text


def test_members_waiting_at_permit_show_the_time_left_before_the_timeout(
        cluster: GangCluster) -> None:
    cluster.add_pod_group(make_pod_group("job", 3, timeout=30))
    for name in ("a", "b", "c"):
        cluster.add_pod(make_pod(name, pod_group="job"))
    # Held until c came, a is free to go now: no stale hold message.
    queued = cluster.sched.diagnosis_of("default/a")
    assert queued is not None and queued["gang"]["state"] == "Queued"
    assert queued["gang"]["message"] == ""
    assert "  this pod: Queued (its last failed attempt, if any, above)" in _text(queued)
    assert cluster.sched.schedule_one(timeout=0)
    assert cluster.sched.schedule_one(timeout=0)
    cluster.clock.step(12)

    entry = cluster.sched.diagnosis_of("default/a")
    assert entry is not None
    gang = entry["gang"]
    assert gang["state"] == "WaitingAtPermit"
    assert gang["waitingForBindChildren"] == ["default/a", "default/b"]
    assert (gang["waitedSeconds"], gang["timeLeftSeconds"]) == (12, 18)
    text = _text(entry)
    assert "  waiting at Permit (assumed): 2 (default/a, default/b)" in text
    assert ("  Permit: waiting 12s, 18s left before the timeout rejects the group's waiting "
            "members") in text
    queued = cluster.sched.diagnosis_of("default/c")
    assert queued is not None and queued["gang"]["state"] == "Queued"

    assert cluster.sched.schedule_one(timeout=0)
    wait_bound(cluster, 3)
    for name in ("a", "b", "c"):
        cluster.plugin.cache.on_pod_update(make_pod(name, pod_group="job"),
                                           make_pod(name, pod_group="job", node="n1"))
    # Bound: not pending, nothing to explain.
    assert cluster.sched.diagnosis_of("default/a") is None


def test_pods_without_a_gang_get_no_gang_section(cluster: GangCluster) -> None:
    cluster.add_pod(make_pod("solo", cpu="100"))  # fits no node: a Filter diagnosis only
    assert cluster.schedule_ready() == 1
    entry = cluster.sched.diagnosis_of("default/solo")
    assert entry is not None and "gang" not in entry
    assert cluster.sched.diagnosis_of("default/nobody") is None


def test_an_annotation_gang_not_initialised_says_so(cluster: GangCluster) -> None:
    cluster.add_pod(make_pod("x", annotations=gang_annotations("g", "three")))
    entry = cluster.sched.diagnosis_of("default/x")
    assert entry is not None
    assert entry["gang"]["hasGangInit"] is False
    assert entry["explain"][0] == ("Gang default/g: not initialised (GangFromPodAnnotation); "
                                   "its pods wait for it.")



def test_incomplete_gangs_waiting_at_permit_do_not_hold_up_a_complete_one(
        cluster: GangCluster) -> None:
    # More gangs wait at Permit (their other member does not fit) than the scheduler has
    # binding workers (8).
    for g in range(10):
        cluster.add_pod_group(make_pod_group(f"partial-{g}", 2, annotations={
            "gang.scheduling.koordinator.sh/mode": "NonStrict"}))
        cluster.add_pod(make_pod(f"partial-{g}-fits", cpu="100m", pod_group=f"partial-{g}"))
        cluster.add_pod(make_pod(f"partial-{g}-too-big", cpu="64", pod_group=f"partial-{g}"))
    cluster.schedule_ready()
    assert len(cluster.waiting()) == 10
    cluster.add_pod_group(make_pod_group("ready", 2))
    cluster.add_pod(make_pod("ready-0", cpu="100m", pod_group="ready"))
    cluster.add_pod(make_pod("ready-1", cpu="100m", pod_group="ready"))
    assert cluster.schedule_ready() == 2
    wait_for(lambda: len(cluster.binder.bindings) == 2, 60,
             what="the complete gang bound while ten others wait")
    assert set(cluster.binder.bindings) == {"default/ready-0", "default/ready-1"}


def test_a_hold_is_reported_only_once_it_lasts(cluster: GangCluster) -> None:
    """A gang's pods arriving together (one informer list, one burst of creates) hold each
    other only for moments: those holds are never reported. A hold that lasts
    HOLD_REPORT_DELAY is, without anything else happening."""
    assert coscheduling.HOLD_REPORT_DELAY == 1.0
    cluster.add_pod_group(make_pod_group("burst", 3))
    for name in ("a", "b", "c"):
        cluster.add_pod(make_pod(name, pod_group="burst"))
    assert cluster.events("a") == cluster.events("b") == []  # events() flushes what is left
    assert not [call for call in cluster.client.calls if call[3] == "status"]

    cluster.add_pod_group(make_pod_group("slow", 2))
    cluster.add_pod(make_pod("d", pod_group="slow"))
    wait_for(lambda: cluster.recorder.events, timeout=30)
    assert [(pod, reason) for pod, _, _, reason, _, _ in cluster.recorder.events] == [
        ("d", "FailedScheduling")]
