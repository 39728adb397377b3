"""PodTopologySpread's registered events and queueing hints."""

from __future__ import annotations

import copy
from typing import Any

from scheduler.apis.config import PodTopologySpreadArgs
from scheduler.framework.events import (
    ASSIGNED_POD_ADD,
    NODE_ADD,
    ClusterEvent,
    QueueingHint,
    node_update_events,
    pod_update_events,
)
from scheduler.framework.plugins.interpodaffinity.testing import ZONE, node, pod
from scheduler.framework.plugins.podtopologyspread import PodTopologySpread
from scheduler.frameworkext.testing import new_handle

QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP

PL = PodTopologySpread(PodTopologySpreadArgs(), new_handle())
TARGET = pod("target", {"app": "web"}, spread=[{
    "maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
    "labelSelector": {"matchLabels": {"app": "web"}}, "nodeTaintsPolicy": "Honor"}])


def registered(event: ClusterEvent) -> bool:
    return any(e.event.match(event) for e in PL.events_to_register())


def test_registers_pod_and_node_changes_that_can_help() -> None:
    assert registered(ASSIGNED_POD_ADD) and registered(NODE_ADD)
    old, new = node("n", {ZONE: "z1"}), node("n", {ZONE: "z2"})
    assert all(registered(e) for e in node_update_events(old, new))
    old_pod = pod("p", {"app": "web"})
    assert all(registered(e) for e in pod_update_events(old_pod, pod("p", {"app": "db"})))


def test_assigned_pods_of_the_namespace_matching_a_selector_requeue() -> None:
    hint = PL.is_schedulable_after_pod_change
    web = pod("w", {"app": "web"}, node_name="n1")
    assert hint(TARGET, None, web) == QUEUE
    assert hint(TARGET, web, None) == QUEUE
    assert hint(TARGET, None, pod("d", {"app": "db"}, node_name="n1")) == SKIP
    # Unscheduled pods and other namespaces do not change the spreading.
    assert hint(TARGET, None, pod("w", {"app": "web"})) == SKIP
    assert hint(TARGET, None, pod("w", {"app": "web"}, node_name="n1", namespace="o")) == SKIP


def test_label_updates_requeue_only_when_selector_matching_changes() -> None:
    hint = PL.is_schedulable_after_pod_change
    web = pod("w", {"app": "web"}, node_name="n1")
    assert hint(TARGET, web, pod("w", {"app": "db"}, node_name="n1")) == QUEUE
    assert hint(TARGET, web, pod("w", {"app": "web", "x": "1"}, node_name="n1")) == SKIP
    assert hint(TARGET, web, copy.deepcopy(web)) == SKIP


def test_a_new_toleration_of_the_pod_itself_requeues_under_taints_policy_honor() -> None:
    hint = PL.is_schedulable_after_pod_change
    tolerating = copy.deepcopy(TARGET)
    tolerating["spec"]["tolerations"] = [{"key": "k", "operator": "Exists"}]
    assert hint(TARGET, TARGET, tolerating) == QUEUE
    plain = pod("t2", {"app": "web"}, spread=[{
        "maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}}}])
    plain_tolerating = copy.deepcopy(plain)
    plain_tolerating["spec"]["tolerations"] = [{"key": "k", "operator": "Exists"}]
    assert hint(plain, plain, plain_tolerating) == SKIP


def test_node_changes() -> None:
    hint = PL.is_schedulable_after_node_change
    z1, z2, bare = node("n", {ZONE: "z1"}), node("n", {ZONE: "z2"}), node("n", {})
    assert hint(TARGET, None, z1) == QUEUE
    assert hint(TARGET, None, bare) == SKIP
    assert hint(TARGET, z1, None) == QUEUE
    assert hint(TARGET, bare, None) == SKIP
    assert hint(TARGET, z1, z2) == QUEUE
    assert hint(TARGET, bare, z1) == QUEUE
    relabelled: dict[str, Any] = copy.deepcopy(z1)
    relabelled["metadata"]["labels"]["other"] = "x"
    assert hint(TARGET, z1, relabelled) == SKIP
    tainted = node("n", {ZONE: "z1"}, [{"key": "k", "effect": "NoSchedule"}])
    assert hint(TARGET, z1, tainted) == QUEUE


def test_pods_without_constraints_are_not_requeued_by_pods() -> None:
    plain = pod("plain", {"app": "web"})
    assert PL.is_schedulable_after_pod_change(
        plain, None, pod("w", {"app": "web"}, node_name="n1")) == SKIP
