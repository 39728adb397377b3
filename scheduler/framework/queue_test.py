"""Tests of the scheduling queue: ordering, backoff, requeueing by events, gating, updates,
deletes, blocking pops, the leftover flush, the nominator and the queue metrics.

Time is a FakeClock throughout; no test waits for simulated time to pass.
"""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from pkg.util.clock import FakeClock
from scheduler.framework.events import (
    NODE,
    NODE_ADD,
    NODE_DELETE,
    WILDCARD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from scheduler.framework.queue import QueuedPodInfo, SchedulingQueue, is_pod_updated
from scheduler.framework.types import PodInfo
from scheduler.metrics.metrics import SchedulerMetrics

PROFILE = "default-scheduler"
NODE_TAINT = ClusterEvent(NODE, ActionType.UPDATE_NODE_TAINT)


def make_pod(name: str, priority: int = 0, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
            "spec": {"schedulerName": PROFILE, "priority": priority,
                     "containers": [{"name": "c"}], **spec}}


def priority_sort(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    pa, pb = a.pod_info.priority, b.pod_info.priority
    if pa != pb:
        return pa > pb
    return a.timestamp < b.timestamp


def counts(q: SchedulingQueue) -> tuple[int, int, int, int]:
    p = q.pending_pods()
    return p["active"], p["backoff"], p["unschedulable"], p["gated"]


def pop_and_fail(q: SchedulingQueue, *plugins: str, pending: tuple[str, ...] = (),
                 moved_meanwhile: ClusterEvent | None = None) -> QueuedPodInfo:
    """One failed attempt: pop, (an event during the cycle), hand back, done."""
    qpi = q.pop(timeout=0)
    assert qpi is not None
    cycle = q.scheduling_cycle()
    if moved_meanwhile is not None:
        q.move_all_to_active_or_backoff(moved_meanwhile)
    qpi.unschedulable_plugins = set(plugins)
    qpi.pending_plugins = set(pending)
    assert q.add_unschedulable_if_not_present(qpi, cycle)
    q.done(qpi.uid)
    return qpi


def names(q: SchedulingQueue) -> list[str]:
    out = []
    while (qpi := q.pop(timeout=0)) is not None:
        out.append(qpi.pod["metadata"]["name"])
        q.done(qpi.uid)
    return out


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def test_priority_then_fifo(clock: FakeClock) -> None:
    q = SchedulingQueue(priority_sort, clock=clock)
    for name, prio in (("low", 0), ("high", 10), ("mid", 5), ("low2", 0), ("high2", 10)):
        q.add(make_pod(name, prio))
        clock.step(1)
    assert names(q) == ["high", "high2", "mid", "low", "low2"]
    assert q.scheduling_cycle() == 5


def test_pop_counts_attempts_and_first_entry(clock: FakeClock) -> None:
    q = SchedulingQueue(priority_sort, clock=clock)
    clock.step(3)
    q.add(make_pod("a"))
    qpi = pop_and_fail(q)
    assert (qpi.attempts, qpi.initial_attempt_timestamp) == (1, 3.0)
    assert qpi.pod_info.key == qpi.key == "ns/a" and qpi.uid == "uid-a"
    clock.step(1)
    q.flush_backoff_completed()
    again = q.pop(timeout=0)
    assert again is not None and again.attempts == 2 and again.initial_attempt_timestamp == 3.0


def test_backoff_doubles_up_to_the_max(clock: FakeClock) -> None:
    q = SchedulingQueue(priority_sort, clock=clock)
    q.add(make_pod("a"))
    for backoff in (1, 2, 4, 8, 10, 10):
        pop_and_fail(q)  # an error: straight to backoffQ
        assert counts(q) == (0, 1, 0, 0)
        clock.step(backoff - 0.25)
        q.flush_backoff_completed()
        assert counts(q) == (0, 1, 0, 0)
        clock.step(0.25)
        q.flush_backoff_completed()
        assert counts(q) == (1, 0, 0, 0)


def test_backoff_flush_is_ordered_by_expiry(clock: FakeClock) -> None:
    q = SchedulingQueue(priority_sort, clock=clock, pod_initial_backoff=2, pod_max_backoff=20)
    q.add(make_pod("a"))
    q.add(make_pod("b"))
    pop_and_fail(q)  # a: 2 s from t=0
    clock.step(1)
    pop_and_fail(q)  # b: 2 s from t=1
    clock.step(1)
    q.flush_backoff_completed()
    assert names(q) == ["a"]
    clock.step(1)
    q.flush_backoff_completed()
    assert names(q) == ["b"]


def _fits(pod: dict[str, Any], old: Any, new: Any) -> QueueingHint:
    labels = (new.get("metadata") or {}).get("labels") or {}
    return QueueingHint.QUEUE if labels.get("fits") else QueueingHint.QUEUE_SKIP


def _broken(pod: dict[str, Any], old: Any, new: Any) -> QueueingHint:
    raise RuntimeError("bug")


HINTS = {PROFILE: {
    "Fit": [ClusterEventWithHint(NODE_ADD, _fits)],
    "Taints": [ClusterEventWithHint(ClusterEvent(NODE, ActionType.UPDATE))],
    "Broken": [ClusterEventWithHint(NODE_ADD, _broken)],
    "Quiet": [],
}}


def node(**labels: str) -> dict[str, Any]:
    return {"metadata": {"name": "n", "labels": labels}}


def test_rejected_pods_move_only_on_registered_events_whose_hint_says_queue(
        clock: FakeClock) -> None:
    q = SchedulingQueue(priority_sort, events_to_register=HINTS, clock=clock)
    for name, plugin in (("fit", "Fit"), ("taints", "Taints"), ("quiet", "Quiet"),
                         ("other", "Unregistered")):
        q.add(make_pod(name))
        pop_and_fail(q, plugin)
    assert counts(q) == (0, 0, 4, 0)
    clock.step(20)  # every backoff is over: moved pods go to activeQ

    q.move_all_to_active_or_backoff(NODE_DELETE, node(), None)  # nobody registered it
    q.move_all_to_active_or_backoff(NODE_ADD, None, node())  # Fit's hint: QueueSkip
    assert counts(q) == (0, 0, 4, 0)
    q.move_all_to_active_or_backoff(NODE_ADD, None, node(fits="yes"))
    assert names(q) == ["fit"]
    q.move_all_to_active_or_backoff(NODE_TAINT, node(), node())  # no hint: always Queue
    assert names(q) == ["taints"]
    assert counts(q) == (0, 0, 2, 0)


def test_pods_still_backing_off_move_to_backoff(clock: FakeClock) -> None:
    q = SchedulingQueue(priority_sort, events_to_register=HINTS, clock=clock)
    q.add(make_pod("a"))
    pop_and_fail(q, "Taints")
    clock.step(0.5)
    q.move_all_to_active_or_backoff(NODE_TAINT, node(), node())
    assert counts(q) == (0, 1, 0, 0)
    clock.step(0.5)
    q.flush_backoff_completed()
    assert names(q) == ["a"]


def test_a_queue_from_a_pending_plugin_skips_the_backoff(clock: FakeClock) -> None:
    q = SchedulingQueue(priority_sort, events_to_register=HINTS, clock=clock)
    q.add(make_pod("a"))
    pop_and_fail(q, "Fit", pending=("Taints",))
    q.move_all_to_active_or_backoff(NODE_TAINT, node(), node())
    assert counts(q) == (1, 0, 0, 0)


def test_a_failing_hint_counts_as_queue(clock: FakeClock) -> None:
    q = SchedulingQueue(priority_sort, events_to_register=HINTS, clock=clock)
    q.add(make_pod("a"))
    pop_and_fail(q, "Broken")
    clock.step(1)
    q.move_all_to_active_or_backoff(NODE_ADD, None, node())
    assert names(q) == ["a"]


def test_precheck_filters_the_candidates(clock: FakeClock) -> None:
    q = SchedulingQueue(priority_sort, events_to_register=HINTS, clock=clock)
    for name in ("a", "b"):
        q.add(make_pod(name))
        pop_and_fail(q, "Taints")
    clock.step(1)
    q.move_all_to_active_or_backoff(NODE_TAINT, node(), node(),
                                    precheck=lambda pod: pod["metadata"]["name"] == "b")
    assert names(q) == ["b"]


def test_wildcard_events_move_every_rejected_pod(clock: FakeClock) -> None:
    q = SchedulingQueue(priority_sort, events_to_register=HINTS, clock=clock)
    for name, plugin in (("a", "Quiet"), ("b", "Unregistered")):
        q.add(make_pod(name))
        pop_and_fail(q, plugin)
    clock.step(1)
    q.move_all_to_active_or_backoff(WILDCARD)
    assert counts(q) == (2, 0, 0, 0)


def test_failure_routing_by_move_request_cycle(clock: FakeClock) -> None:
    q = SchedulingQueue(priority_sort, events_to_register=HINTS, clock=clock)
    for name in ("a", "b", "c"):
        q.add(make_pod(name))
    # An event someone registered arrived during the cycle: it may have helped.
    pop_and_fail(q, "Fit", moved_meanwhile=NODE_ADD)
    assert counts(q) == (2, 1, 0, 0)
    # An event nobody registered is no move request.
    pop_and_fail(q, "Fit", moved_meanwhile=NODE_DELETE)
    assert counts(q) == (1, 1, 1, 0)
    # A move before this cycle began does not count.
    pop_and_fail(q, "Fit")
    assert counts(q) == (0, 1, 2, 0)


def test_add_unschedulable_if_not_present(clock: FakeClock) -> None:
    q = SchedulingQueue(priority_sort, clock=clock)
    q.add(make_pod("a"))
    qpi = q.pop(timeout=0)
    assert qpi is not None
    q.add(make_pod("a"))  # re-added while in flight (e.g. a missed delete + add)
    assert not q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle())
    assert counts(q) == (1, 0, 0, 0)


GATE = "Gate"


class Gate:
    """PreEnqueue: rejects pods with scheduling gates, and everything while closed."""

    def __init__(self) -> None:
        self.open = True
        self.calls = 0

    def __call__(self, pi: PodInfo) -> tuple[bool, str | None]:
        self.calls += 1
        if not self.open or pi.spec.get("schedulingGates"):
            return False, GATE
        return True, None


def test_gated_pod_waits_for_an_update_that_lets_pre_enqueue_pass(clock: FakeClock) -> None:
    q = SchedulingQueue(priority_sort, pre_enqueue=Gate(), clock=clock)
    gated = make_pod("a", schedulingGates=[{"name": "g"}])
    q.add(gated)
    assert counts(q) == (0, 0, 0, 1)
    assert q.pop(timeout=0) is None
    info = q.pending_pods()["pods"][0]
    assert (info["queue"], info["gatingPlugin"], info["attempts"]) == ("gated", GATE, 0)

    still = copy.deepcopy(gated)
    still["metadata"]["labels"] = {"x": "y"}
    q.update(gated, still)
    assert counts(q) == (0, 0, 0, 1)

    ungated = copy.deepcopy(still)
    ungated["spec"]["schedulingGates"] = []
    q.update(still, ungated)
    qpi = q.pop(timeout=0)
    assert qpi is not None and qpi.pod is ungated and not qpi.gated and qpi.gating_plugin is None
    # Popping resets the rejectors, the gating plugin included.
    assert qpi.unschedulable_plugins == set()


def test_gated_pod_released_only_by_its_gating_plugins_events(clock: FakeClock) -> None:
    gate = Gate()
    gate.open = False
    hints = {PROFILE: {GATE: [ClusterEventWithHint(NODE_ADD)], **HINTS[PROFILE]}}
    q = SchedulingQueue(priority_sort, pre_enqueue=gate, events_to_register=hints, clock=clock)
    q.add(make_pod("a"))
    assert counts(q) == (0, 0, 0, 1)
    gate.open = True
    calls = gate.calls
    q.move_all_to_active_or_backoff(NODE_TAINT, node(), node())
    clock.step(600)
    q.flush_unschedulable_left_over()  # the timeout is a wildcard, not the gate's event
    assert counts(q) == (0, 0, 0, 1) and gate.calls == calls
    q.move_all_to_active_or_backoff(NODE_ADD, None, node())
    assert names(q) == ["a"]


def test_a_gated_pod_moves_only_when_its_gating_plugins_hint_allows(clock: FakeClock) -> None:
    gate = Gate()
    gate.open = False
    asked: list[str] = []

    def hint(pod: dict[str, Any], old: Any, new: Any) -> QueueingHint:
        asked.append(pod["metadata"]["name"])
        return QueueingHint.QUEUE if new["metadata"]["labels"].get("pool") == "a" else \
            QueueingHint.QUEUE_SKIP

    hints = {PROFILE: {GATE: [ClusterEventWithHint(NODE_ADD, hint)], **HINTS[PROFILE]}}
    q = SchedulingQueue(priority_sort, pre_enqueue=gate, events_to_register=hints, clock=clock)
    q.add(make_pod("a"))
    gate.open = True
    calls = gate.calls
    q.move_all_to_active_or_backoff(NODE_ADD, None, node(pool="b"))
    assert counts(q) == (0, 0, 0, 1) and gate.calls == calls and asked == ["a"]
    q.move_all_to_active_or_backoff(NODE_ADD, None, node(pool="a"))
    assert names(q) == ["a"]


def test_gated_again_after_backoff(clock: FakeClock) -> None:
    gate = Gate()
    q = SchedulingQueue(priority_sort, pre_enqueue=gate, clock=clock)
    q.add(make_pod("a"))
    pop_and_fail(q)
    gate.open = False
    clock.step(1)
    q.flush_backoff_completed()  # PreEnqueue runs again on the way to activeQ
    assert counts(q) == (0, 0, 0, 1)


def test_update_in_active_queue_reorders(clock: FakeClock) -> None:
    q = SchedulingQueue(priority_sort, clock=clock)
    a, b = make_pod("a"), make_pod("b")
    q.add(a)
    clock.step(1)
    q.add(b)
    b2 = copy.deepcopy(b)
    b2["spec"]["priority"] = 100
    q.update(b, b2)
    assert counts(q) == (2, 0, 0, 0)
    first = q.pop(timeout=0)
    assert first is not None and first.pod is b2 and first.pod_info.priority == 100


def test_update_in_backoff_stays_in_backoff(clock: FakeClock) -> None:
    q = SchedulingQueue(priority_sort, clock=clock)
    a = make_pod("a")
    q.add(a)
    pop_and_fail(q)
    a2 = copy.deepcopy(a)
    a2["metadata"]["labels"] = {"new": "label"}
    q.update(a, a2)
    assert counts(q) == (0, 1, 0, 0)
    clock.step(1)
    q.flush_backoff_completed()
    qpi = q.pop(timeout=0)
    assert qpi is not None and qpi.pod is a2


def test_update_in_unschedulable(clock: FakeClock) -> None:
    q = SchedulingQueue(priority_sort, clock=clock)
    a = make_pod("a")
    q.add(a)
    pop_and_fail(q, "Fit")
    status_only = copy.deepcopy(a)
    status_only["status"] = {"conditions": [{"type": "PodScheduled", "status": "False"}]}
    status_only["metadata"]["resourceVersion"] = "7"
    q.update(a, status_only)
    assert counts(q) == (0, 0, 1, 0)
    spec_change = copy.deepcopy(status_only)
    spec_change["spec"]["tolerations"] = [{"operator": "Exists"}]
    q.update(status_only, spec_change)
    assert counts(q) == (0, 1, 0, 0)  # still backing off
    clock.step(1)
    q.flush_backoff_completed()
    qpi = q.pop(timeout=0)
    assert qpi is not None and qpi.pod is spec_change


def test_update_of_an_unknown_pod_adds_it(clock: FakeClock) -> None:
    q = SchedulingQueue(priority_sort, clock=clock)
    a = make_pod("a")
    q.update(a, copy.deepcopy(a))
    assert counts(q) == (1, 0, 0, 0)


def test_is_pod_updated() -> None:
    a = make_pod("a")
    b = copy.deepcopy(a)
    b["metadata"].update(resourceVersion="2", generation=3, managedFields=[{}],
                         finalizers=["f"])
    b["status"] = {"phase": "Pending"}
    assert not is_pod_updated(a, b)
    b["metadata"]["annotations"] = {"k": "v"}
    assert is_pod_updated(a, b)
    c = copy.deepcopy(a)
    c["status"] = {"resourceClaimStatuses": [{"name": "x"}]}
    assert is_pod_updated(a, c)


def test_delete_from_every_sub_queue(clock: FakeClock) -> None:
    gate = Gate()
    q = SchedulingQueue(priority_sort, pre_enqueue=gate, clock=clock)
    for name in ("backoff", "unsched"):
        q.add(make_pod(name))
    pop_and_fail(q)
    pop_and_fail(q, "Fit")
    q.add(make_pod("active"))
    q.add(make_pod("gated", schedulingGates=[{"name": "g"}]))
    assert counts(q) == (1, 1, 1, 1)
    for name in ("active", "backoff", "unsched", "gated"):
        q.delete(make_pod(name))
    assert counts(q) == (0, 0, 0, 0)
    clock.step(100)
    q.flush_backoff_completed()
    q.flush_unschedulable_left_over()
    assert q.pop(timeout=0) is None


def test_many_updates_and_deletes_keep_the_heaps_small(clock: FakeClock) -> None:
    q = SchedulingQueue(priority_sort, clock=clock)
    pod = make_pod("a")
    q.add(pod)
    for i in range(1000):
        new = copy.deepcopy(pod)
        new["metadata"]["resourceVersion"] = str(i)
        q.update(pod, new)
        pod = new
    for i in range(500):
        q.add(make_pod(f"x{i}"))
        q.delete(make_pod(f"x{i}"))
    assert len(q._active_heap) <= 2 * len(q._active) + 64  # white box: dead entries are compacted
    assert names(q) == ["a"]


def test_deleted_while_in_flight_is_not_requeued(clock: FakeClock) -> None:
    q = SchedulingQueue(priority_sort, clock=clock)
    a = make_pod("a")
    q.add(a)
    qpi = q.pop(timeout=0)
    assert qpi is not None
    q.delete(a)
    qpi.unschedulable_plugins = {"Fit"}
    assert not q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle())
    q.nominator.add_nominated_pod(qpi.pod_info, "n1")  # the scheduler nominates after a failure
    q.done(qpi.uid)
    assert counts(q) == (0, 0, 0, 0) and q.nominator.nodes_with_nominated_pods() == []


def test_updated_while_in_flight_comes_back_as_the_new_version(clock: FakeClock) -> None:
    q = SchedulingQueue(priority_sort, clock=clock)
    a = make_pod("a")
    q.add(a)
    qpi = q.pop(timeout=0)
    assert qpi is not None
    cycle = q.scheduling_cycle()
    status_only = copy.deepcopy(a)
    status_only["status"] = {"phase": "Pending"}
    q.update(a, status_only)
    assert counts(q) == (0, 0, 0, 0)  # not queued twice
    qpi.unschedulable_plugins = {"Fit"}
    assert q.add_unschedulable_if_not_present(qpi, cycle)
    assert qpi.pod is status_only and counts(q) == (0, 0, 1, 0)

    q.delete(status_only)
    q.add(a)
    qpi = q.pop(timeout=0)
    assert qpi is not None
    cycle = q.scheduling_cycle()
    spec_change = copy.deepcopy(a)
    spec_change["spec"]["priority"] = 5
    q.update(a, spec_change)
    qpi.unschedulable_plugins = {"Fit"}
    assert q.add_unschedulable_if_not_present(qpi, cycle)
    assert qpi.pod is spec_change and qpi.pod_info.priority == 5
    assert counts(q) == (0, 1, 0, 0)  # a change may have helped: retry after backoff


def test_activate(clock: FakeClock) -> None:
    q = SchedulingQueue(priority_sort, clock=clock)
    for name in ("u", "b", "flight"):
        q.add(make_pod(name))
    pop_and_fail(q, "Fit")
    pop_and_fail(q)
    flying = q.pop(timeout=0)
    assert flying is not None
    cycle = q.scheduling_cycle()
    q.activate([make_pod("u"), make_pod("b"), make_pod("flight"), make_pod("unknown")])
    assert counts(q) == (2, 0, 0, 0)
    # The in-flight pod's failure is routed as after a move request.
    flying.unschedulable_plugins = {"Fit"}
    q.add_unschedulable_if_not_present(flying, cycle)
    assert counts(q) == (2, 1, 0, 0)


def test_leftover_unschedulable_pods_move_after_five_minutes(clock: FakeClock) -> None:
    q = SchedulingQueue(priority_sort, events_to_register=HINTS, clock=clock)
    q.add(make_pod("a"))
    pop_and_fail(q, "Quiet")
    clock.step(300)
    q.flush_unschedulable_left_over()
    assert counts(q) == (0, 0, 1, 0)
    clock.step(0.5)
    q.flush_unschedulable_left_over()
    assert counts(q) == (1, 0, 0, 0)


def _in_thread(fn: Any) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    return t, out


def test_pop_blocks_until_a_pod_arrives(clock: FakeClock) -> None:
    q = SchedulingQueue(priority_sort, clock=clock)
    t, out = _in_thread(lambda: q.pop(timeout=1000))
    assert clock.wait_for_waiters(1)
    q.add(make_pod("a"))
    t.join(5)
    assert not t.is_alive() and out[0].key == "ns/a"

    t, out = _in_thread(q.pop)  # no timeout at all
    q.add(make_pod("b"))
    t.join(5)
    assert not t.is_alive() and out[0].key == "ns/b"


def test_pop_times_out_on_the_clock(clock: FakeClock) -> None:
    q = SchedulingQueue(priority_sort, clock=clock)
    t, out = _in_thread(lambda: q.pop(timeout=5))
    assert clock.wait_for_waiters(1)
    clock.step(4)
    assert t.is_alive()
    clock.step(1)
    t.join(5)
    assert not t.is_alive() and out == [None]


def test_close_wakes_poppers(clock: FakeClock) -> None:
    q = SchedulingQueue(priority_sort, clock=clock)
    t, out = _in_thread(lambda: q.pop(timeout=1000))
    assert clock.wait_for_waiters(1)
    q.close()
    t.join(5)
    assert not t.is_alive() and out == [None]
    q.add(make_pod("a"))
    assert q.pop() is None


def test_run_flushes_on_the_clock(clock: FakeClock) -> None:
    q = SchedulingQueue(priority_sort, clock=clock)
    stop = threading.Event()
    threads = q.run(stop)
    assert clock.wait_for_waiters(2)
    q.add(make_pod("a"))
    pop_and_fail(q)
    t, out = _in_thread(lambda: q.pop(timeout=1000))
    clock.step(1)
    t.join(5)
    assert not t.is_alive() and out[0].key == "ns/a"
    stop.set()
    for th in threads:
        th.join(5)
        assert not th.is_alive()


def test_nominator(clock: FakeClock) -> None:
    q = SchedulingQueue(priority_sort, clock=clock)
    a = make_pod("a")
    a["status"] = {"nominatedNodeName": "n1"}
    q.add(a)
    q.add(make_pod("b"))
    assert [pi.key for pi in q.nominator.nominated_pods_for_node("n1")] == ["ns/a"]
    b = q.pop(timeout=0)
    assert b is not None and b.key == "ns/a"
    b = q.pop(timeout=0)
    assert b is not None and b.key == "ns/b"
    # Preemption nominated b to n2 in this scheduler only.
    q.nominator.add_nominated_pod(b.pod_info, "n2")
    q.add_unschedulable_if_not_present(b, q.scheduling_cycle())
    assert sorted(q.nominator.nodes_with_nominated_pods()) == ["n1", "n2"]
    # An update that does not carry the nomination keeps the in-memory one...
    b_new = copy.deepcopy(b.pod)
    b_new["metadata"]["labels"] = {"k": "v"}
    q.update(b.pod, b_new)
    assert [pi.pod for pi in q.nominator.nominated_pods_for_node("n2")] == [b_new]
    # ... an empty node name clears it, a delete drops the pod.
    q.nominator.add_nominated_pod(q.nominator.nominated_pods_for_node("n2")[0], "")
    assert q.nominator.nominated_pods_for_node("n2") == []
    q.nominator.delete_nominated_pod_if_exists(a)
    assert q.nominator.nodes_with_nominated_pods() == []
    unknown = PodInfo(make_pod("zzz"))
    q.nominator.add_nominated_pod(unknown, "n3")
    assert q.nominator.nominated_pods_for_node("n3") == []


def test_metrics(clock: FakeClock) -> None:
    registry = CollectorRegistry()
    m = SchedulerMetrics(registry, clock)
    gate = Gate()
    q = SchedulingQueue(priority_sort, pre_enqueue=gate, events_to_register=HINTS,
                        clock=clock, metrics=m)

    def pending(queue: str) -> float | None:
        return registry.get_sample_value("scheduler_pending_pods", {"queue": queue})

    def incoming(queue: str, event: str) -> float | None:
        return registry.get_sample_value("scheduler_queue_incoming_pods_total",
                                         {"queue": queue, "event": event})

    def blamed(plugin: str) -> float | None:
        return registry.get_sample_value("scheduler_unschedulable_pods",
                                         {"plugin": plugin, "profile": PROFILE})

    for name in ("a", "b", "c"):
        q.add(make_pod(name))
    q.add(make_pod("g", schedulingGates=[{"name": "g"}]))
    assert [pending(x) for x in ("active", "backoff", "unschedulable", "gated")] == [3, 0, 0, 1]
    assert incoming("active", "UnschedulablePodAdd") == 3
    assert incoming("unschedulable", "UnschedulablePodAdd") == 1
    assert blamed(GATE) == 1

    pop_and_fail(q, "Fit")
    pop_and_fail(q, "Taints")
    pop_and_fail(q)
    assert [pending(x) for x in ("active", "backoff", "unschedulable", "gated")] == [0, 1, 2, 1]
    assert incoming("unschedulable", "ScheduleAttemptFailure") == 2
    assert incoming("backoff", "ScheduleAttemptFailure") == 1
    assert (blamed("Fit"), blamed("Taints")) == (1, 1)

    q.move_all_to_active_or_backoff(NODE_TAINT, node(), node())
    assert incoming("backoff", "NodeUpdateNodeTaint") == 1
    clock.step(1)
    q.flush_backoff_completed()
    assert incoming("active", "BackoffComplete") == 2
    assert sorted(names(q)) == ["b", "c"]
    assert blamed("Taints") == 0
    clock.step(400)
    q.flush_unschedulable_left_over()
    assert incoming("active", "UnschedulableTimeout") == 1
    q.delete(make_pod("g"))
    assert blamed(GATE) == 0
    assert [pending(x) for x in ("active", "backoff", "unschedulable", "gated")] == [1, 0, 0, 0]
    names(q)
    assert blamed("Fit") == 0


def test_concurrent_producers_and_consumer(clock: FakeClock) -> None:
    q = SchedulingQueue(priority_sort, clock=clock)
    n = 500

    def produce(prefix: str) -> None:
        for i in range(n):
            q.add(make_pod(f"{prefix}{i}", priority=i % 7))

    producers = [threading.Thread(target=produce, args=(p,)) for p in "xy"]
    for t in producers:
        t.start()
    seen: set[str] = set()
    while len(seen) < 2 * n:
        qpi = q.pop(timeout=1000)
        assert qpi is not None and qpi.key not in seen
        seen.add(qpi.key)
        q.done(qpi.uid)
    for t in producers:
        t.join(5)
    assert counts(q) == (0, 0, 0, 0)


def test_next_pod_is_taken_from_any_sub_queue_but_never_while_gated(clock: FakeClock) -> None:
    """frameworkext's NextPod: the named pod is popped first wherever it waits, as upstream
    removes it by name; a name the queue does not hold (or holds gated) falls back to the
    queue's own order."""
    wanted: list[str] = []
    gate = Gate()
    q = SchedulingQueue(priority_sort, pre_enqueue=gate, clock=clock,
                        next_pod=lambda: wanted.pop(0) if wanted else None)
    for name in ("a", "b", "c", "d"):
        q.add(make_pod(name))
        clock.step(0.01)
    q.add(make_pod("g", schedulingGates=[{"name": "g"}]))
    pop_and_fail(q, "NodeResourcesFit")  # a: unschedulable
    clock.step(0.1)
    b = pop_and_fail(q)  # b: an error goes to backoff
    assert b.key == "ns/b"
    assert counts(q) == (2, 1, 1, 1)
    wanted[:] = ["ns/a", "ns/b", "ns/d", "ns/g", "ns/missing"]
    assert names(q) == ["a", "b", "d", "c"]
    assert wanted == []
    assert counts(q) == (0, 0, 0, 1)
