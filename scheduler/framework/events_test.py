"""Tests of cluster events: labels, matching, and the node and pod update classifiers."""

from __future__ import annotations

import copy
from typing import Any

from scheduler.framework.events import (
    ASSIGNED_POD,
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    FORCE_ACTIVATE,
    NODE,
    NODE_ADD,
    NODE_METRIC,
    POD,
    UNSCHEDULABLE_TIMEOUT,
    UNSCHEDULED_POD,
    UNSCHEDULED_POD_ADD,
    WILDCARD,
    WILDCARD_RESOURCE,
    ActionType,
    ClusterEvent,
    node_update_events,
    pod_update_events,
)

A = ActionType


def test_labels_follow_upstream() -> None:
    assert NODE_ADD.label == "NodeAdd"
    assert UNSCHEDULED_POD_ADD.label == "UnschedulablePodAdd"
    assert ASSIGNED_POD_DELETE.label == "AssignedPodDelete"
    assert ClusterEvent(NODE, A.UPDATE_NODE_TAINT).label == "NodeUpdateNodeTaint"
    assert UNSCHEDULABLE_TIMEOUT.label == "UnschedulableTimeout"
    assert FORCE_ACTIVATE.label == "ForceActivate"
    assert A.UPDATE.display() == "Update" and A.ALL.display() == "All"
    assert (A.ADD | A.DELETE).display() == "Add|Delete"


def test_update_covers_every_update_bit_and_all_everything() -> None:
    updates = [a for a in ActionType if a.display().startswith("Update")]
    assert len(updates) == 9
    for a in updates:
        assert a & A.UPDATE
    assert A.ALL == A.ADD | A.DELETE | A.UPDATE


def test_events_are_values() -> None:
    assert ClusterEvent(NODE, A.ADD) == NODE_ADD
    assert hash(ClusterEvent(NODE, A.ADD)) == hash(NODE_ADD)
    assert {NODE_ADD: 1}[ClusterEvent("Node", A.ADD, "NodeAdd")] == 1


def test_match() -> None:
    node_update = ClusterEvent(NODE, A.UPDATE)
    taint = ClusterEvent(NODE, A.UPDATE_NODE_TAINT)
    # Action bits must overlap.
    assert node_update.match(taint)
    assert not ClusterEvent(NODE, A.UPDATE_NODE_LABEL).match(taint)
    assert ClusterEvent(NODE, A.ADD | A.UPDATE_NODE_TAINT).match(NODE_ADD)
    assert not NODE_ADD.match(ClusterEvent(NODE, A.DELETE))
    # Resources: exact, Pod covers both pod kinds, "*" registration covers all.
    assert not NODE_ADD.match(UNSCHEDULED_POD_ADD)
    assert ClusterEvent(POD, A.DELETE).match(ASSIGNED_POD_DELETE)
    assert ClusterEvent(POD, A.ADD).match(UNSCHEDULED_POD_ADD)
    assert not ClusterEvent(ASSIGNED_POD, A.ADD).match(UNSCHEDULED_POD_ADD)
    assert WILDCARD.match(NODE_ADD)
    assert ClusterEvent(WILDCARD_RESOURCE, A.DELETE).match(ASSIGNED_POD_DELETE)
    # A wildcard event matches only wildcard registrations.
    assert not NODE_ADD.match(UNSCHEDULABLE_TIMEOUT)
    assert WILDCARD.match(UNSCHEDULABLE_TIMEOUT)
    # CRDs are free strings.
    metric = ClusterEvent(NODE_METRIC, A.ADD | A.UPDATE | A.DELETE)
    assert metric.match(ClusterEvent(NODE_METRIC, A.UPDATE))
    assert not metric.match(NODE_ADD)


def test_is_wildcard() -> None:
    assert WILDCARD.is_wildcard() and UNSCHEDULABLE_TIMEOUT.is_wildcard()
    assert not ClusterEvent(WILDCARD_RESOURCE, A.ADD).is_wildcard()
    assert not ClusterEvent(NODE, A.ALL).is_wildcard()


def _node() -> dict[str, Any]:
    return {
        "metadata": {"name": "n1", "labels": {"zone": "a"}, "annotations": {"x": "1"},
                     "resourceVersion": "1"},
        "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi"},
                   "conditions": [{"type": "Ready", "status": "True",
                                   "lastHeartbeatTime": "2024-01-01T00:00:00Z"}]},
    }


def _actions(events: list[ClusterEvent]) -> list[ActionType]:
    assert all(e.resource == NODE for e in events)
    return [e.action_type for e in events]


def test_node_update_events() -> None:
    old = _node()
    assert node_update_events(old, copy.deepcopy(old)) == []

    new = copy.deepcopy(old)
    new["metadata"]["resourceVersion"] = "2"
    new["status"]["conditions"][0]["lastHeartbeatTime"] = "2024-01-01T00:01:00Z"
    new["status"]["allocatable"]["cpu"] = "4000m"  # semantically equal
    assert node_update_events(old, new) == []

    new = copy.deepcopy(old)
    new["status"]["allocatable"]["cpu"] = "3"
    new["metadata"]["labels"]["zone"] = "b"
    new["spec"]["taints"] = []
    new["status"]["conditions"][0]["status"] = "False"
    new["metadata"]["annotations"] = {}
    assert _actions(node_update_events(old, new)) == [
        A.UPDATE_NODE_ALLOCATABLE, A.UPDATE_NODE_LABEL, A.UPDATE_NODE_TAINT,
        A.UPDATE_NODE_CONDITION, A.UPDATE_NODE_ANNOTATION]


def test_node_update_missing_and_empty_fields_are_equal() -> None:
    bare = {"metadata": {"name": "n1"}}
    empty = {"metadata": {"name": "n1", "labels": {}, "annotations": {}},
             "spec": {"taints": []}, "status": {"allocatable": {}, "conditions": []}}
    assert node_update_events(bare, empty) == []


def test_node_becoming_schedulable_is_a_taint_update() -> None:
    cordoned = _node()
    cordoned["spec"]["unschedulable"] = True
    uncordoned = copy.deepcopy(cordoned)
    del uncordoned["spec"]["unschedulable"]
    assert _actions(node_update_events(cordoned, uncordoned)) == [A.UPDATE_NODE_TAINT]
    # Cordoning cannot help any pod.
    assert node_update_events(uncordoned, cordoned) == []


def _pod(node: str = "") -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ns", "labels": {"app": "a"}},
        "spec": {"nodeName": node, "containers": [
            {"name": "c", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]},
    }


def test_pod_update_events() -> None:
    old = _pod("n1")
    new = copy.deepcopy(old)
    new["status"] = {"phase": "Running"}
    assert pod_update_events(old, new) == [ClusterEvent(ASSIGNED_POD, A.UPDATE)]

    new = copy.deepcopy(old)
    new["metadata"]["labels"]["app"] = "b"
    new["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "250m"
    new["spec"]["tolerations"] = [{"key": "k", "operator": "Exists"}]
    assert [e.action_type for e in pod_update_events(old, new)] == [
        A.UPDATE_POD_LABEL, A.UPDATE_POD_SCALE_DOWN, A.UPDATE_POD_TOLERATION]
    assert all(e.resource == ASSIGNED_POD for e in pod_update_events(old, new))


def test_pod_scale_down_includes_removed_requests_but_not_increases() -> None:
    old = _pod("n1")
    bigger = copy.deepcopy(old)
    bigger["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1"
    assert pod_update_events(old, bigger) == [ClusterEvent(ASSIGNED_POD, A.UPDATE)]
    removed = copy.deepcopy(old)
    del removed["spec"]["containers"][0]["resources"]["requests"]["memory"]
    assert pod_update_events(old, removed) == [ClusterEvent(ASSIGNED_POD,
                                                            A.UPDATE_POD_SCALE_DOWN)]


def test_unscheduled_pod_gates_eliminated() -> None:
    old = _pod()
    old["spec"]["schedulingGates"] = [{"name": "g1"}, {"name": "g2"}]
    one_left = copy.deepcopy(old)
    one_left["spec"]["schedulingGates"] = [{"name": "g2"}]
    assert pod_update_events(old, one_left) == [ClusterEvent(UNSCHEDULED_POD, A.UPDATE)]
    none_left = copy.deepcopy(old)
    none_left["spec"]["schedulingGates"] = []
    assert pod_update_events(one_left, none_left) == [
        ClusterEvent(UNSCHEDULED_POD, A.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)]


def test_assigned_pod_add_is_predefined() -> None:
    assert ASSIGNED_POD_ADD == ClusterEvent(ASSIGNED_POD, A.ADD)
