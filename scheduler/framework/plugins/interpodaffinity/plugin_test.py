"""InterPodAffinity's registered events, queueing hints, explain and args."""

from __future__ import annotations

import copy

from scheduler.apis.config import InterPodAffinityArgs
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    ClusterEvent,
    QueueingHint,
    node_update_events,
    pod_update_events,
)
from scheduler.framework.plugins.interpodaffinity import InterPodAffinity
from scheduler.framework.plugins.interpodaffinity.plugin import (
    is_schedulable_after_node_change,
    is_schedulable_after_pod_change,
)
from scheduler.framework.plugins.interpodaffinity.testing import (
    ZONE,
    node,
    pod,
    snapshot_of,
    term,
)
from scheduler.framework.types import PodInfo
from scheduler.frameworkext.testing import new_handle

QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP

TARGET = pod("target", affinity={
    "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        term(ZONE, {"app": "db"})]},
    "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        term("rack", {"app": "noisy"})]}})


def test_registers_assigned_pod_and_node_label_events() -> None:
    events = [e.event for e in InterPodAffinity(None, new_handle()).events_to_register()]

    def registered(event: ClusterEvent) -> bool:
        return any(e.match(event) for e in events)

    assert registered(ASSIGNED_POD_ADD) and registered(ASSIGNED_POD_DELETE)
    assert registered(NODE_ADD)
    assert all(registered(e) for e in node_update_events(node("n", {ZONE: "a"}),
                                                         node("n", {ZONE: "b"})))
    assert all(registered(e) for e in pod_update_events(pod("p", {"a": "1"}),
                                                        pod("p", {"a": "2"})))
    taint_only = node_update_events(node("n"), node("n", taints=[{"key": "k",
                                                                  "effect": "NoSchedule"}]))
    assert not any(registered(e) for e in taint_only)


def test_pod_added_matching_all_affinity_terms_requeues() -> None:
    assert is_schedulable_after_pod_change(
        TARGET, None, pod("db", {"app": "db"}, node_name="n")) == QUEUE
    assert is_schedulable_after_pod_change(
        TARGET, None, pod("web", {"app": "web"}, node_name="n")) == SKIP
    # Unscheduled pods never change where the target fits.
    assert is_schedulable_after_pod_change(TARGET, None, pod("db", {"app": "db"})) == SKIP


def test_pod_updates_requeue_when_matching_changes_the_right_way() -> None:
    web = pod("w", {"app": "web"}, node_name="n")
    db = pod("w", {"app": "db"}, node_name="n")
    noisy = pod("w", {"app": "noisy"}, node_name="n")
    assert is_schedulable_after_pod_change(TARGET, web, db) == QUEUE
    assert is_schedulable_after_pod_change(TARGET, db, web) == SKIP
    assert is_schedulable_after_pod_change(TARGET, noisy, web) == QUEUE
    assert is_schedulable_after_pod_change(TARGET, web, noisy) == SKIP


def test_pod_deleted_requeues_when_it_clashed() -> None:
    assert is_schedulable_after_pod_change(
        TARGET, pod("x", {"app": "noisy"}, node_name="n"), None) == QUEUE
    assert is_schedulable_after_pod_change(
        TARGET, pod("x", {"app": "db"}, node_name="n"), None) == SKIP
    guard = pod("g", node_name="n", affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [term(ZONE, {"app": "x"})]}})
    assert is_schedulable_after_pod_change(pod("plain"), guard, None) == QUEUE


def test_node_changes_of_topology_labels() -> None:
    with_zone = node("n", {ZONE: "a"})
    assert is_schedulable_after_node_change(TARGET, None, with_zone) == QUEUE
    assert is_schedulable_after_node_change(TARGET, node("n"), with_zone) == QUEUE
    assert is_schedulable_after_node_change(TARGET, with_zone, node("n", {ZONE: "b"})) == QUEUE
    same = copy.deepcopy(with_zone)
    same["metadata"]["labels"]["other"] = "1"
    assert is_schedulable_after_node_change(TARGET, with_zone, same) == SKIP
    # Losing the anti-affinity key frees the node from the clash.
    assert is_schedulable_after_node_change(
        TARGET, node("n", {"rack": "r1", ZONE: "a"}), with_zone) == QUEUE
    assert is_schedulable_after_node_change(pod("plain"), None, with_zone) == SKIP


def test_args_and_explain() -> None:
    pl = InterPodAffinity(InterPodAffinityArgs(hard_pod_affinity_weight=7), new_handle())
    assert pl.hard_pod_affinity_weight == 7
    guard = pod("guard", node_name="n1", affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [term(ZONE, {"app": "web"})]}})
    snap = snapshot_of([node("n1", {ZONE: "z1"}), node("n2")], [guard])
    pl = InterPodAffinity(None, new_handle(snapshot=snap))
    state, pi = CycleState(), PodInfo(pod("p", {"app": "web"}))
    assert pl.pre_filter(state, pi, snap) == (None, None)
    assert pl.explain(state, pi, snap["n1"]) == (
        f"1 existing pod(s) with anti-affinity to this pod in {ZONE}=z1")
    assert pl.explain(state, pi, snap["n2"]) is None
    state, pi = CycleState(), PodInfo(TARGET)
    pl.pre_filter(state, pi, snap)
    assert pl.explain(state, pi, snap["n1"]) == (
        f"no pod matching all affinity terms in {ZONE}=z1")
    assert pl.explain(state, pi, snap["n2"]) == f"node has no label {ZONE}"
