"""Evicting the chosen victims: the API calls, events, waiting pods, lower-priority
nominations, metrics, and failures."""

from __future__ import annotations

import time
from typing import Any

from prometheus_client import CollectorRegistry

from pkg.client.errors import ApiError
from scheduler.framework.plugins.defaultpreemption.testing import (
    FakeClient,
    FakeNominator,
    FakeRecorder,
    attempt,
    build_framework,
    make_node,
    make_pod,
    node_infos,
    succeeded,
)
from scheduler.framework.runtime import WaitingPod
from scheduler.framework.status import Code
from scheduler.framework.types import PodInfo
from scheduler.metrics.metrics import SchedulerMetrics

T0 = "2024-01-01T00:00:00Z"


def one_victim_cluster(victim: dict[str, Any] | None = None) -> list:
    victim = victim or make_pod("victim", 1, cpu="4", node="n1")
    return node_infos([make_node("n1")], [victim])


def test_victims_get_the_disruption_condition_then_a_delete_and_an_event() -> None:
    client, recorder = FakeClient(), FakeRecorder()
    fwk = build_framework(one_victim_cluster(), client=client, recorder_factory=lambda _: recorder)

    a = attempt(fwk, make_pod("p", 10, cpu="2"))

    assert succeeded(a)
    patch, delete = client.calls
    assert patch[0] == "patch" and patch[1] == "victim" and patch[3] == "status"
    (condition,) = patch[2]["status"]["conditions"]
    assert condition["type"] == "DisruptionTarget" and condition["status"] == "True"
    assert condition["reason"] == "PreemptionByScheduler"
    assert condition["message"] == ("default-scheduler: preempting to accommodate a higher "
                                    "priority pod")
    assert delete == ("delete", "victim")
    assert recorder.events == [("victim", "p", "Normal", "Preempted", "Preempting",
                                "Preempted by pod uid-p on node n1")]


def test_a_victim_already_marked_is_only_deleted() -> None:
    victim = make_pod("victim", 1, cpu="4", node="n1")
    victim["status"]["conditions"] = [{
        "type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
        "message": "default-scheduler: preempting to accommodate a higher priority pod"}]
    client = FakeClient()
    fwk = build_framework(one_victim_cluster(victim), client=client)

    attempt(fwk, make_pod("p", 10, cpu="2"))

    assert [c[0] for c in client.calls] == ["delete"]


def test_a_victim_already_terminating_gets_no_call() -> None:
    victim = make_pod("victim", 1, cpu="4", node="n1")
    victim["metadata"]["deletionTimestamp"] = T0
    client, recorder = FakeClient(), FakeRecorder()
    fwk = build_framework(one_victim_cluster(victim), client=client,
                          recorder_factory=lambda _: recorder)

    a = attempt(fwk, make_pod("p", 10, cpu="2"))

    assert a.result is not None and a.result.nominated_node_name == "n1"
    assert client.calls == [] and recorder.events == []


def test_a_victim_gone_already_is_no_error_and_no_event() -> None:
    client, recorder = FakeClient(gone={"victim"}), FakeRecorder()
    fwk = build_framework(one_victim_cluster(), client=client, recorder_factory=lambda _: recorder)

    a = attempt(fwk, make_pod("p", 10, cpu="2"))

    assert succeeded(a)
    assert recorder.events == []


class BrokenClient(FakeClient):
    def delete(self, resource: Any, name: str, namespace: str | None = None) -> Any:
        raise ApiError(500, "InternalError", "etcd is down")


def test_a_failed_delete_is_an_error_and_nominates_nothing() -> None:
    fwk = build_framework(one_victim_cluster(), client=BrokenClient())

    a = attempt(fwk, make_pod("p", 10, cpu="2"))

    assert a.status.code == Code.ERROR
    assert "etcd is down" in a.status.message()
    assert a.result is None


def test_a_victim_waiting_at_permit_is_rejected_not_deleted() -> None:
    client, recorder = FakeClient(), FakeRecorder()
    fwk = build_framework(one_victim_cluster(), client=client, recorder_factory=lambda _: recorder)
    victim = fwk.snapshot.node_infos[0].pods["default/victim"]
    waiting = WaitingPod(victim, {"Coscheduling": 60.0}, time.monotonic)
    # The victim waits at another plugin's Permit.
    fwk.get_waiting_pod = (  # type: ignore[method-assign]  # a stand-in for a parked pod
        lambda uid: waiting if uid == victim.uid else None)

    a = attempt(fwk, make_pod("p", 10, cpu="2"))

    assert succeeded(a)
    assert client.calls == []
    status = waiting.wait()
    assert status.code == Code.UNSCHEDULABLE and status.message() == "preempted"
    assert status.plugin == "DefaultPreemption"
    assert recorder.events == [("victim", "p", "Normal", "Preempted", "Preempting",
                                "Preempted by pod uid-p on node n1")]


def nominated(name: str, priority: int, node: str, written: bool) -> PodInfo:
    pod = make_pod(name, priority, cpu="1")
    if written:
        pod["status"]["nominatedNodeName"] = node
    return PodInfo(pod)


def test_lower_priority_nominations_to_the_node_are_cleared() -> None:
    nominator = FakeNominator({"n1": [nominated("low-written", 5, "n1", True),
                                      nominated("low-memory", 5, "n1", False),
                                      nominated("high", 50, "n1", True)]})
    client = FakeClient()
    fwk = build_framework(one_victim_cluster(), client=client, nominator=nominator)

    a = attempt(fwk, make_pod("p", 10, cpu="2"))

    assert succeeded(a)
    assert sorted(nominator.deleted) == ["low-memory", "low-written"]
    # Only a nomination written to the pod needs an API call to be undone.
    clears = [c for c in client.calls if c[1].startswith("low")]
    assert clears == [("patch", "low-written", {"status": {"nominatedNodeName": None}},
                       "status")]


def test_metrics_count_attempts_and_victims() -> None:
    registry = CollectorRegistry()
    metrics = SchedulerMetrics(registry)
    infos = node_infos([make_node("n1"), make_node("n2", cpu="1")],
                       [make_pod("a", 1, cpu="2", node="n1"),
                        make_pod("b", 1, cpu="2", node="n1")])
    fwk = build_framework(infos, client=FakeClient(), metrics=metrics)

    attempt(fwk, make_pod("p", 10, cpu="4"))
    attempt(fwk, make_pod("never", 10, cpu="4", preemptionPolicy="Never"))

    assert registry.get_sample_value("scheduler_preemption_attempts_total") == 2
    assert registry.get_sample_value("scheduler_preemption_victims_count") == 1
    assert registry.get_sample_value("scheduler_preemption_victims_sum") == 2
