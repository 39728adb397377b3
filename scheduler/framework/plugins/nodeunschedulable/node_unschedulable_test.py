from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import NODE, POD, ActionType, QueueingHint
from scheduler.framework.plugins.nodeunschedulable.node_unschedulable import (
    ERR_REASON_UNSCHEDULABLE,
    NodeUnschedulable,
)
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status, is_success
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.testing import new_handle

TOLERATE = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
            "effect": "NoSchedule"}


def make_pod(*tolerations: dict[str, str], uid: str = "uid-p") -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "default", "uid": uid},
            "spec": {"containers": [{"name": "c"}], "tolerations": list(tolerations)}}


def make_node(name: str, unschedulable: bool = False) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"unschedulable": unschedulable}}


def test_a_cordoned_node_rejects_pods_for_good() -> None:
    status = NodeUnschedulable(None, new_handle()).filter(CycleState(), PodInfo(make_pod()),
                                        NodeInfo(make_node("n", True)))
    assert status == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNSCHEDULABLE)


@pytest.mark.parametrize("toleration", [
    TOLERATE,
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists"},
    {"operator": "Exists"},
])
def test_pods_tolerating_the_unschedulable_taint_pass(toleration: dict[str, str]) -> None:
    assert NodeUnschedulable(None, new_handle()).filter(CycleState(), PodInfo(make_pod(toleration)),
                                      NodeInfo(make_node("n", True))) is None


def test_a_toleration_for_another_effect_does_not_help() -> None:
    pod = make_pod({"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                    "effect": "NoExecute"})
    assert NodeUnschedulable(None, new_handle()).filter(CycleState(), PodInfo(pod),
                                      NodeInfo(make_node("n", True))) is not None


def test_filter_nodes_agrees_with_filter() -> None:
    rng = random.Random(2)
    plugin = NodeUnschedulable(None, new_handle())
    for _ in range(20):
        snap = Snapshot()
        snap.rebuild([NodeInfo(make_node(f"n{i}", rng.random() < 0.2)) for i in range(30)])
        for pod in (PodInfo(make_pod()), PodInfo(make_pod(TOLERATE))):
            mask = plugin.filter_nodes(CycleState(), pod, snap)
            got = np.ones(len(snap), dtype=bool) if mask is None else mask
            scalar = [is_success(plugin.filter(CycleState(), pod, ni)) for ni in snap.node_infos]
            assert got.tolist() == scalar


def test_uncordoning_a_node_is_seen_by_the_vectorised_filter() -> None:
    plugin = NodeUnschedulable(None, new_handle())
    snap = Snapshot()
    snap.rebuild([NodeInfo(make_node("a", True)), NodeInfo(make_node("b"))])
    pod = PodInfo(make_pod())
    mask = plugin.filter_nodes(CycleState(), pod, snap)
    assert mask is not None and mask.tolist() == [False, True]
    snap.set_node_info(0, NodeInfo(make_node("a")))
    snap.node_changed()
    assert plugin.filter_nodes(CycleState(), pod, snap) is None


def test_events_and_hints() -> None:
    node_event, pod_event = NodeUnschedulable(None, new_handle()).events_to_register()
    assert (node_event.event.resource, node_event.event.action_type) == (
        NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT)
    assert (pod_event.event.resource, pod_event.event.action_type) == (
        POD, ActionType.UPDATE_POD_TOLERATION)
    node_hint, pod_hint = node_event.hint_fn, pod_event.hint_fn
    assert node_hint is not None and pod_hint is not None
    pod = make_pod()
    assert node_hint(pod, None, make_node("n")) == QueueingHint.QUEUE
    assert node_hint(pod, None, make_node("n", True)) == QueueingHint.QUEUE_SKIP
    assert node_hint(pod, make_node("n", True), make_node("n")) == QueueingHint.QUEUE
    assert node_hint(pod, make_node("n"), make_node("n")) == QueueingHint.QUEUE_SKIP
    assert pod_hint(pod, pod, make_pod(TOLERATE)) == QueueingHint.QUEUE
    assert pod_hint(pod, pod, make_pod({"key": "x", "operator": "Exists"})) \
        == QueueingHint.QUEUE_SKIP
    assert pod_hint(pod, pod, make_pod(TOLERATE, uid="other")) == QueueingHint.QUEUE_SKIP
