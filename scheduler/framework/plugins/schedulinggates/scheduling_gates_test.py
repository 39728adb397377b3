from __future__ import annotations

from typing import Any

from scheduler.framework.events import POD, ActionType, QueueingHint
from scheduler.framework.plugins.schedulinggates.scheduling_gates import SchedulingGates
from scheduler.framework.status import Code, Status
from scheduler.framework.types import PodInfo
from scheduler.frameworkext.testing import new_handle


def make_pod(*gates: str, uid: str = "uid-p") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    return {"metadata": {"name": "p", "namespace": "default", "uid": uid}, "spec": spec}


def test_a_gated_pod_waits_and_names_its_gates() -> None:
    plugin = SchedulingGates(None, new_handle())
    status = plugin.pre_enqueue(PodInfo(make_pod("example.com/a", "b")))
    assert status == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                            "waiting for scheduling gates: [example.com/a b]")


def test_a_pod_without_gates_enters() -> None:
    assert SchedulingGates(None, new_handle()).pre_enqueue(PodInfo(make_pod())) is None


def test_only_the_pod_losing_its_gates_is_requeued() -> None:
    [event] = SchedulingGates(None, new_handle()).events_to_register()
    assert (event.event.resource, event.event.action_type) == (
        POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    assert event.hint_fn is not None
    gated = make_pod("a")
    assert event.hint_fn(gated, gated, make_pod()) == QueueingHint.QUEUE
    assert event.hint_fn(gated, make_pod("a", uid="x"), make_pod(uid="x")) \
        == QueueingHint.QUEUE_SKIP
