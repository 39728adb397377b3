"""Job-level preemption through Coscheduling's PostFilter: the whole gang placed or nothing
evicted, who may be a victim, who may preempt, which victims go, and one attempt per round.
Mirrors upstream's core/preemption_test.go and preemption_state_test.go cases."""

from __future__ import annotations

from typing import Any

import pytest

from api.extension.coscheduling import LABEL_POD_GROUP
from api.extension.elastic_quota import LABEL_PREEMPTIBLE
from api.extension.preemption import LABEL_DISABLE_PREEMPTIBLE
from api.extension.schedule_explanation import LABEL_QUESTIONED_OBJECT_KEY
from pkg.util.clock import FakeClock
from scheduler.apis.config import CoschedulingArgs, load_scheduler_config
from scheduler.factory import build_scheduler
from scheduler.framework.binder import InMemoryBinder
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.plugins.defaultpreemption.evaluator import (
    DISRUPTION_TARGET,
    PREEMPTION_BY_SCHEDULER,
)
from scheduler.framework.plugins.defaultpreemption.testing import (
    Attempt,
    Bind,
    FakeClient,
    FakeNominator,
    FakeRecorder,
    ResourceFit,
    Sort,
    attempt,
    make_node,
    make_pod,
    node_infos,
)
from scheduler.framework.runtime import Framework, FrameworkDeps
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code
from scheduler.framework.types import PodInfo
from scheduler.plugins.coscheduling.core.preemption import (
    REASON_PREEMPTION_POLICY_NEVER,
    REASON_TERMINATING_VICTIM_ON_NOMINATED_NODE,
    estimate_preemption_cost,
    sort_victims,
)
from scheduler.plugins.coscheduling.coscheduling import NAME, Coscheduling
from scheduler.plugins.coscheduling.testing import coscheduling_config, make_pod_group

HIGH, LOW = 1000, 1


class Cluster:
    """A profile with a resource Filter and Coscheduling (enablePreemption) at PostFilter,
    Reserve and Permit, over fixed nodes and pods; gang pods reach the gang cache."""

    def __init__(self, nodes: list[dict[str, Any]], running: list[dict[str, Any]],
                 *, enable_preemption: bool = True) -> None:
        self.client = FakeClient()
        self.recorder = FakeRecorder()
        self.nominator = FakeNominator()
        self.infos = node_infos(nodes, running)
        snapshot = Snapshot()
        snapshot.ensure_resources(sorted({r for ni in self.infos
                                          for r in (*ni.allocatable, *ni.requested)}))
        snapshot.rebuild(self.infos)
        registry = {p.name: p for p in (ResourceFit, Sort, Bind, Coscheduling)}
        config = {"queueSort": [(Sort.name, 0)], "bind": [(Bind.name, 0)],
                  "filter": [(ResourceFit.name, 0)], "postFilter": [(NAME, 0)],
                  "reserve": [(NAME, 0)], "permit": [(NAME, 0)]}
        self.fwk = Framework(
            "koord-scheduler", config, registry,
            {NAME: CoschedulingArgs(enable_preemption=enable_preemption)},
            FrameworkDeps(snapshot=snapshot, clock=FakeClock(), client=self.client,
                          nominator=self.nominator,
                          recorder_factory=lambda _profile: self.recorder))
        plugin = self.fwk.plugin(NAME)
        assert isinstance(plugin, Coscheduling)
        self.plugin = plugin

    def gang(self, name: str, min_member: int, pods: list[dict[str, Any]]) -> None:
        self.plugin.cache.on_pod_group_add(make_pod_group(name, min_member))
        for p in pods:
            self.plugin.cache.on_pod_add(p)

    def try_(self, pod: dict[str, Any]) -> Attempt:
        return attempt(self.fwk, pod)

    def park(self, pod: dict[str, Any], node: str) -> None:
        """``pod`` assumed on ``node`` and waiting at Permit for the rest of its gang."""
        assumed = PodInfo(pod).with_node(node)
        next(ni for ni in self.infos if ni.name == node).add_pod(assumed)
        self.fwk.deps.snapshot.rebuild(self.infos)
        status = self.fwk.run_permit(CycleState(), assumed, node)
        assert status is not None and status.code == Code.WAIT

    def status_patches(self, name: str) -> list[dict[str, Any]]:
        return [c[2]["status"] for c in self.client.calls
                if c[0] == "patch" and c[1] == name and c[3] == "status"]


def member(name: str, cpu: str = "4", gang: str = "job", priority: int = HIGH,
           **kw: Any) -> dict[str, Any]:
    return make_pod(name, priority, cpu=cpu, labels={LABEL_POD_GROUP: gang}, **kw)


def low(name: str, node: str, cpu: str = "2", priority: int = LOW,
        labels: dict[str, str] | None = None) -> dict[str, Any]:
    return make_pod(name, priority, cpu=cpu, node=node, labels=labels)


def two_full_nodes() -> Cluster:
    return Cluster([make_node("n1"), make_node("n2")],
                   [low("v1", "n1"), low("v2", "n1"), low("v3", "n2"), low("v4", "n2")])


# The gang fits after preemption ----------------------------------------------------------

def test_every_member_placed_evicts_the_victims_and_nominates_the_whole_gang() -> None:
    c = two_full_nodes()
    a, b = member("a"), member("b")
    c.gang("job", 2, [a, b])

    got = c.try_(a)

    assert got.status.code == Code.SUCCESS
    assert got.result is not None and got.result.nominated_node_name == "n1"
    assert sorted(c.client.deleted()) == ["v1", "v2", "v3", "v4"]
    # Each victim is marked a DisruptionTarget by the scheduler before it is deleted.
    condition = c.status_patches("v1")[0]["conditions"][0]
    assert (condition["type"], condition["reason"]) == (DISRUPTION_TARGET,
                                                        PREEMPTION_BY_SCHEDULER)
    assert "preemptor: default/job, triggerPod: default/a" in condition["message"]
    assert ("v1", "a", "Normal", "Preempted", "Preempting",
            "Preempted by pod uid-a on node n1") in c.recorder.events
    # The other member goes to the other node: nominated in the scheduler and on the pod.
    assert c.nominator.nominated_node_of("b") == "n2"
    assert {"nominatedNodeName": "n2"} in c.status_patches("b")


def test_preemption_is_off_without_enable_preemption() -> None:
    c = Cluster([make_node("n1")], [low("v1", "n1", cpu="4")], enable_preemption=False)
    a = member("a")
    c.gang("job", 1, [a])

    got = c.try_(a)

    assert got.status.code == Code.UNSCHEDULABLE
    assert c.client.deleted() == []


# Nothing is evicted unless every member fits ----------------------------------------------

def test_one_member_that_cannot_fit_leaves_every_victim_running() -> None:
    c = two_full_nodes()
    pods = [member("a"), member("b"), member("c")]
    c.gang("job", 3, pods)

    got = c.try_(pods[0])

    assert got.status.code == Code.UNSCHEDULABLE
    assert got.result is not None and got.result.nominated_node_name == ""
    assert got.status.message() == "0/2 nodes are available: 2 Insufficient cpu."
    assert c.client.deleted() == []
    assert c.nominator.nominated_node_of("b") == ""


@pytest.mark.parametrize("victim_labels, priority", [
    ({}, HIGH),                                   # not lower priority than the gang
    ({LABEL_DISABLE_PREEMPTIBLE: "true"}, LOW),   # reservation-style opt out
    ({LABEL_PREEMPTIBLE: "false"}, LOW),          # quota non-preemptible
])
def test_pods_that_may_not_be_preempted_are_never_victims(victim_labels: dict[str, str],
                                                          priority: int) -> None:
    c = Cluster([make_node("n1")], [low("v1", "n1", cpu="4", priority=priority,
                                        labels=victim_labels)])
    a = member("a")
    c.gang("job", 1, [a])

    got = c.try_(a)

    assert got.status.code == Code.UNSCHEDULABLE
    assert got.status.message() == "0/1 nodes are available: 1 no potential victims."
    assert c.client.deleted() == []


# Who may preempt ---------------------------------------------------------------------------

def test_a_gang_whose_pods_never_preempt_is_not_eligible() -> None:
    c = two_full_nodes()
    a, b = member("a", preemptionPolicy="Never"), member("b", preemptionPolicy="Never")
    c.gang("job", 2, [a, b])

    got = c.try_(a)

    assert got.status.code == Code.UNSCHEDULABLE
    assert got.status.message() == REASON_PREEMPTION_POLICY_NEVER
    assert got.result is None  # nominations stay as they are
    assert c.client.deleted() == []


def test_a_victim_still_terminating_on_a_members_nominated_node_blocks_new_preemption() -> None:
    terminating = low("v1", "n1", cpu="4")
    terminating["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    terminating["status"]["conditions"] = [{"type": DISRUPTION_TARGET, "status": "True",
                                            "reason": PREEMPTION_BY_SCHEDULER}]
    c = Cluster([make_node("n1"), make_node("n2")], [terminating, low("v2", "n2", cpu="4")])
    a, b = member("a"), member("b")
    b["status"]["nominatedNodeName"] = "n1"
    c.gang("job", 2, [a, b])

    got = c.try_(a)

    assert got.status.message() == REASON_TERMINATING_VICTIM_ON_NOMINATED_NODE
    assert c.client.deleted() == []


# Which victims go --------------------------------------------------------------------------

def test_victims_are_reprieved_most_important_first_leaving_the_fewest() -> None:
    # All removed frees 8 cpus; "c" (priority 3) comes back, then "b" (4 cpus) does not fit
    # beside the member, then "a" does: only "b" goes.
    c = Cluster([make_node("n1", cpu="8")], [low("a", "n1", "2", 1), low("b", "n1", "4", 2),
                                             low("c", "n1", "2", 3)])
    m = member("m")
    c.gang("job", 1, [m])

    got = c.try_(m)

    assert got.status.code == Code.SUCCESS
    assert c.client.deleted() == ["b"]


def test_victims_sort_by_priority_then_job_then_name() -> None:
    def pod(name: str, priority: int, job: str) -> PodInfo:
        return PodInfo(make_pod(name, priority, labels={LABEL_QUESTIONED_OBJECT_KEY: job}))

    victims = [pod("z", 1, "j1"), pod("b", 5, "j2"), pod("a", 5, "j2"), pod("c", 5, "j1")]
    sort_victims(victims)

    assert [v.name for v in victims] == ["c", "a", "b", "z"]


def test_the_cheapest_node_counts_each_victim_job_once_by_its_priority_rank() -> None:
    def pod(name: str, priority: int, job: str) -> PodInfo:
        return PodInfo(make_pod(name, priority, labels={LABEL_QUESTIONED_OBJECT_KEY: job}))

    costs = estimate_preemption_cost({
        "n1": [pod("a", 10, "j1"), pod("b", 10, "j1"), pod("c", 10, "j1")],  # one job: rank 1
        "n2": [pod("d", 1, "j2"), pod("e", 10, "j3")],                        # ranks 0 + 1
        "n3": [pod("f", 20, "j4")],                                           # rank 2
    })

    assert costs == {"n1": 1, "n2": 1, "n3": 2}


def test_members_go_to_the_node_whose_victims_cost_least() -> None:
    c = Cluster([make_node("n1"), make_node("n2")],
                [low("cheap", "n2", cpu="4", priority=1), low("dear", "n1", cpu="4", priority=5)])
    m = member("m")
    c.gang("job", 1, [m])

    got = c.try_(m)

    assert got.result is not None and got.result.nominated_node_name == "n2"
    assert c.client.deleted() == ["cheap"]


# The group's waiting members and the round ------------------------------------------------

def test_waiting_members_are_rejected_so_the_group_comes_back_together() -> None:
    # "b" waits at Permit on n1 (of the gang's priority: no victim); "a" fits once v1 goes.
    c = Cluster([make_node("n1"), make_node("n2")], [low("v1", "n2", cpu="4")])
    a, b = member("a"), member("b")
    c.gang("job", 2, [a, b])
    c.park(b, "n1")
    waiting = c.fwk.get_waiting_pod("uid-b")
    assert waiting is not None

    got = c.try_(a)

    assert got.result is not None and got.result.nominated_node_name == "n2"
    assert c.client.deleted() == ["v1"]
    rejected = waiting.wait()
    assert (rejected.code, rejected.plugin, rejected.message()) == (
        Code.UNSCHEDULABLE, "JobPreemptionSuccessPlugin",
        "preempt success, alreadyWaitingForBound: 1/2")


def test_a_second_member_in_the_same_round_does_not_preempt_again() -> None:
    c = two_full_nodes()
    pods = [member("a"), member("b"), member("c")]
    c.gang("job", 3, pods)

    first = c.try_(pods[0])
    second = c.try_(pods[1])
    third = c.try_(pods[2])

    assert second.status.code == Code.UNSCHEDULABLE
    assert second.status.message() == (
        "preemption already attempted by default/a with message 0/2 nodes are available: "
        "2 Insufficient cpu.")
    assert third.status.message() == second.status.message()
    assert c.client.deleted() == []
    # Every member was attempted: the round is over and "a" preempts (in vain) again.
    again = c.try_(pods[0])
    assert again.status.message() == first.status.message()


def test_a_member_that_reached_reserve_in_the_round_preempts_afresh_later() -> None:
    c = two_full_nodes()
    pods = [member("a"), member("b"), member("c")]
    c.gang("job", 3, pods)
    c.try_(pods[0])  # in vain: the round waits for "b" and "c"

    # "b" was placed somewhere in this round (it reached Reserve): its round turn is used.
    assert c.fwk.run_reserve(CycleState(), PodInfo(pods[1]).with_node("n1"), "n1") is None
    again = c.try_(pods[1])

    assert not again.status.message().startswith("preemption already attempted")
    assert c.try_(pods[2]).status.message().startswith(
        "preemption already attempted by default/b")


def test_members_nominated_by_an_earlier_round_do_not_count_against_each_other() -> None:
    c = Cluster([make_node("n1"), make_node("n2")],
                [low("v1", "n1", cpu="4"), low("v2", "n2", cpu="4")])
    a, b = member("a"), member("b")
    b["status"]["nominatedNodeName"] = "n1"  # from an earlier round
    c.nominator.add_nominated_pod(PodInfo(b), "n1")
    c.gang("job", 2, [a, b])

    got = c.try_(a)

    # Had b's old nomination counted, n1 would have no room for "a", and n2 none for both.
    assert got.status.code == Code.SUCCESS
    assert sorted(c.client.deleted()) == ["v1", "v2"]
    assert c.nominator.nominated_node_of("b") == "n2"


def test_a_pod_without_a_gang_preempts_alone() -> None:
    c = Cluster([make_node("n1")], [low("v1", "n1", cpu="4")])

    got = c.try_(make_pod("solo", HIGH, cpu="4"))

    assert got.status.code == Code.SUCCESS
    assert got.result is not None and got.result.nominated_node_name == "n1"
    assert c.client.deleted() == ["v1"]


def test_through_the_scheduler_a_waiting_member_keeps_its_node_and_the_gang_binds() -> None:
    client, binder = FakeClient(), InMemoryBinder()
    built = build_scheduler(load_scheduler_config(coscheduling_config(enable_preemption=True)),
                            binder=binder, clock=FakeClock(), client=client, bind_workers=4)
    sched, handlers = built.scheduler, built.handlers
    plugin = sched.profiles["koord-scheduler"].plugin(NAME)
    assert isinstance(plugin, Coscheduling)
    try:
        handlers.add_node(make_node("n1"))
        victim = low("v1", "n1")
        handlers.add_pod_to_cache(victim)
        a, b = (member(n, cpu="2", schedulerName="koord-scheduler") for n in "ab")
        plugin.cache.on_pod_group_add(make_pod_group("job", 2))
        for p in (a, b):
            plugin.cache.on_pod_add(p)
            handlers.add_pod_to_queue(p)

        # "a" fits beside v1 and waits for "b"; "b" fits only once v1 goes.
        while sched.schedule_one(timeout=0):
            pass
        assert client.deleted() == ["v1"]
        # "a", sent back by the preemption, keeps n1: nominated in the queue and on the pod.
        assert sched.wait_for_bindings(30)
        assert sorted(p.name for p in sched.queue.nominator.nominated_pods_for_node("n1")) \
            == ["a", "b"]
        assert any(c[2]["status"].get("nominatedNodeName") == "n1" for c in client.calls
                   if c[0] == "patch" and c[1] == "a")

        # Once v1 is gone, the whole gang binds to n1.
        plugin.cache.on_pod_delete(victim)
        handlers.delete_pod_from_cache(victim)
        sched.queue.activate([a, b])
        while sched.schedule_one(timeout=0):
            pass
        assert sched.wait_for_bindings(30)
        assert binder.bindings == {"default/a": "n1", "default/b": "n1"}
    finally:
        sched.stop()
