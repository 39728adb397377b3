"""NodeAffinity: upstream's PreFilter/Filter and Score tables, addedAffinity, explain, hints."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pkg.util.nodeaffinity import InvalidSelectorError
from scheduler.apis.config import NodeAffinityArgs
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import NODE, ActionType, ClusterEvent, QueueingHint
from scheduler.framework.plugins.nodeaffinity import NodeAffinity
from scheduler.framework.plugins.nodeaffinity.node_affinity import (
    ERR_REASON_CONFLICT,
    ERR_REASON_ENFORCED,
    ERR_REASON_POD,
)
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status, is_success
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.testing import new_handle


def make_node(name: str = "node1", **labels: str) -> NodeInfo:
    return NodeInfo({"metadata": {"name": name, "labels": labels}})


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        e["values"] = list(values)
    return e


def labels_term(*exprs: dict[str, Any]) -> dict[str, Any]:
    return {"matchExpressions": list(exprs)}


def name_in(*names: str) -> dict[str, Any]:
    return {"matchFields": [expr("metadata.name", "In", *names)]}


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": list(terms)}}}


def make_pod(node_selector: dict[str, str] | None = None,
             affinity: dict[str, Any] | None = None, uid: str = "uid-1") -> PodInfo:
    spec: dict[str, Any] = {}
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    if affinity is not None:
        spec["affinity"] = affinity
    return PodInfo({"metadata": {"name": "pod", "namespace": "ns", "uid": uid}, "spec": spec})


def added_args(**affinity: Any) -> NodeAffinityArgs:
    return NodeAffinityArgs.model_validate({"addedAffinity": affinity})


def snapshot_of(*infos: NodeInfo) -> Snapshot:
    snap = Snapshot()
    snap.rebuild(list(infos))
    return snap


# PreFilter / Filter -------------------------------------------------------------------------

SKIP = Status(Code.SKIP)
ADDED_ZONE_FOO = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    labels_term(expr("zone", "In", "foo"))]}}

FILTER_CASES: list[tuple[str, PodInfo, NodeInfo, Any, Status | None, set[str] | None, str]] = [
    ("missing labels", make_pod({"foo": "bar"}), make_node(), None, None, None, ERR_REASON_POD),
    ("same labels", make_pod({"foo": "bar"}), make_node(foo="bar"), None, None, None, ""),
    ("node labels are superset", make_pod({"foo": "bar"}), make_node(foo="bar", baz="blah"),
     None, None, None, ""),
    ("node labels are subset", make_pod({"foo": "bar", "baz": "blah"}), make_node(foo="bar"),
     None, None, None, ERR_REASON_POD),
    ("In matches", make_pod(affinity=required(labels_term(expr("foo", "In", "bar", "value2")))),
     make_node(foo="bar"), None, None, None, ""),
    ("Gt matches", make_pod(affinity=required(labels_term(expr("kernel-version", "Gt", "0204")))),
     make_node(**{"kernel-version": "0206"}), None, None, None, ""),
    ("NotIn matches", make_pod(affinity=required(labels_term(
        expr("mem-type", "NotIn", "DDR", "DDR2")))),
     make_node(**{"mem-type": "DDR3"}), None, None, None, ""),
    ("Exists matches", make_pod(affinity=required(labels_term(expr("GPU", "Exists")))),
     make_node(GPU="NVIDIA-GRID-K1"), None, None, None, ""),
    ("affinity does not match", make_pod(affinity=required(labels_term(
        expr("foo", "In", "value1", "value2")))),
     make_node(foo="bar"), None, None, None, ERR_REASON_POD),
    ("no terms", make_pod(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {}}}),
     make_node(foo="bar"), None, None, None, ERR_REASON_POD),
    ("empty terms", make_pod(affinity=required()), make_node(foo="bar"), None, None, None,
     ERR_REASON_POD),
    ("empty matchExpressions", make_pod(affinity=required(labels_term())),
     make_node(foo="bar"), None, None, None, ERR_REASON_POD),
    ("no affinity", make_pod(), make_node(foo="bar"), None, SKIP, None, ""),
    ("affinity without node affinity", make_pod(affinity={"nodeAffinity": {}}),
     make_node(foo="bar"), None, SKIP, None, ""),
    ("expressions ANDed, all match", make_pod(affinity=required(labels_term(
        expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")))),
     make_node(GPU="NVIDIA-GRID-K1"), None, None, None, ""),
    ("expressions ANDed, one misses", make_pod(affinity=required(labels_term(
        expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")))),
     make_node(GPU="NVIDIA-GRID-K1"), None, None, None, ERR_REASON_POD),
    ("terms ORed", make_pod(affinity=required(
        labels_term(expr("foo", "In", "bar", "value2")),
        labels_term(expr("diffkey", "In", "wrong", "value2")))),
     make_node(foo="bar"), None, None, None, ""),
    ("affinity and nodeSelector both hold", make_pod(
        {"foo": "bar"}, required(labels_term(expr("foo", "Exists")))),
     make_node(foo="bar"), None, None, None, ""),
    ("affinity holds but nodeSelector does not", make_pod(
        {"foo": "bar"}, required(labels_term(expr("foo", "Exists")))),
     make_node(foo="barrrrrr"), None, None, None, ERR_REASON_POD),
    ("invalid value in a term", make_pod(affinity=required(labels_term(
        expr("foo", "NotIn", "invalid value: ___@#$%^")))),
     make_node(foo="bar"), None, None, None, ERR_REASON_POD),
    ("matchFields In matches", make_pod(affinity=required(name_in("node1"))),
     make_node("node1"), None, None, {"node1"}, ""),
    ("matchFields In does not match", make_pod(affinity=required(name_in("node1"))),
     make_node("node2"), None, None, {"node1"}, ERR_REASON_POD),
    ("two terms: fields miss, labels match", make_pod(affinity=required(
        name_in("node1"), labels_term(expr("foo", "In", "bar")))),
     make_node("node2", foo="bar"), None, None, None, ""),
    ("one term: fields miss, labels match", make_pod(affinity=required(
        {**name_in("node1"), **labels_term(expr("foo", "In", "bar"))})),
     make_node("node2", foo="bar"), None, None, {"node1"}, ERR_REASON_POD),
    ("one term: both match", make_pod(affinity=required(
        {**name_in("node1"), **labels_term(expr("foo", "In", "bar"))})),
     make_node("node1", foo="bar"), None, None, {"node1"}, ""),
    ("two terms: neither matches", make_pod(affinity=required(
        name_in("node1"), labels_term(expr("foo", "In", "not-match-to-bar")))),
     make_node("node2", foo="bar"), None, None, None, ERR_REASON_POD),
    ("two terms of node names", make_pod(affinity=required(name_in("node1"), name_in("node2"))),
     make_node("node2"), None, None, {"node1", "node2"}, ""),
    ("conflicting name requirements", make_pod(affinity=required({"matchFields": [
        expr("metadata.name", "In", "node1"), expr("metadata.name", "In", "node2")]})),
     make_node("node2"), None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_CONFLICT),
     None, ERR_REASON_POD),
    ("matches added affinity and the pod's", make_pod(affinity=required(labels_term(
        expr("foo", "In", "bar")))),
     make_node(zone="foo", foo="bar"), ADDED_ZONE_FOO, None, None, ""),
    ("matches added affinity but not the pod's", make_pod(affinity=required(labels_term(
        expr("foo", "In", "bar")))),
     make_node(zone="foo", foo="baz"), ADDED_ZONE_FOO, None, None, ERR_REASON_POD),
    ("misses added affinity", make_pod(), make_node(zone="bar"), ADDED_ZONE_FOO, None, None,
     ERR_REASON_ENFORCED),
    ("misses added affinity and the pod's", make_pod({"foo": "x"}), make_node(zone="bar"),
     ADDED_ZONE_FOO, None, None, ERR_REASON_ENFORCED),
]


@pytest.mark.parametrize(("pod", "ni", "added", "pre_status", "pre_names", "reason"),
                         [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES])
def test_pre_filter_and_filter(pod: PodInfo, ni: NodeInfo, added: dict[str, Any] | None,
                               pre_status: Status | None, pre_names: set[str] | None,
                               reason: str) -> None:
    plugin = NodeAffinity(added_args(**added) if added else NodeAffinityArgs(), new_handle())
    state = CycleState()
    result, status = plugin.pre_filter(state, pod, snapshot_of(ni))
    assert status == pre_status
    assert (None if result is None else result.node_names) == pre_names
    status = plugin.filter(state, pod, ni)
    if reason:
        assert status == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reason)
    else:
        assert is_success(status)
    if pre_status is None:
        mask = plugin.filter_nodes(state, pod, snapshot_of(ni))
        assert (mask is None) == (not reason)


def test_bad_added_affinity_is_refused() -> None:
    with pytest.raises(InvalidSelectorError,
                       match=r"^parsing addedAffinity\.requiredDuringSchedulingIgnored"):
        NodeAffinity(added_args(requiredDuringSchedulingIgnoredDuringExecution={
            "nodeSelectorTerms": [labels_term(expr("zone", "Gt", "x"))]}), new_handle())


def test_without_args_nothing_is_added() -> None:
    assert NodeAffinity(None, new_handle()).added_node_selector is None


def test_explain_names_the_missed_requirements() -> None:
    plugin = NodeAffinity(added_args(**ADDED_ZONE_FOO), new_handle())
    pod = make_pod({"disk": "ssd"}, required(
        labels_term(expr("zone", "In", "b", "a"), expr("gpu", "Exists")),
        {**name_in("node9"), **labels_term(expr("cores", "Gt", "8"))}))
    ni = make_node("node1", disk="hdd", zone="c", cores="4")
    assert plugin.explain(CycleState(), pod, ni) == (
        "scheduler-enforced affinity: no required term matched: [0] zone In [foo] "
        "(node has zone=c); "
        "nodeSelector disk=ssd (node has disk=hdd); "
        "no required term matched: [0] zone In [a, b] (node has zone=c), gpu Exists "
        "(node has no label gpu); [1] cores Gt 8 (node has cores=4), metadata.name In [node9] "
        "(node is node1)")
    no_args = NodeAffinity(None, new_handle())
    assert no_args.explain(CycleState(), pod, make_node("n", zone="a", gpu="")) == \
        "nodeSelector disk=ssd (node has no label disk)"
    # Nothing to say about a node that passes.
    assert plugin.explain(CycleState(), make_pod({"disk": "ssd"}),
                          make_node("node1", disk="ssd", zone="foo")) is None


# Score --------------------------------------------------------------------------------------

def preferred(*terms: tuple[int, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"weight": w, "preference": t} for w, t in terms]


AFFINITY1 = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred(
    (2, labels_term(expr("foo", "In", "bar"))))}}
AFFINITY2 = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred(
    (2, labels_term(expr("foo", "In", "bar"))),
    (4, labels_term(expr("key", "In", "value"))),
    (5, labels_term(expr("foo", "In", "bar"), expr("key", "In", "value"),
                    expr("az", "In", "az1"))))}}
LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}


def run_score(plugin: NodeAffinity, pod: PodInfo,
              infos: list[NodeInfo]) -> tuple[Status | None, list[int]]:
    """PreScore, Score (vectorised, checked against the scalar Score) and NormalizeScore."""
    state = CycleState()
    status = plugin.pre_score(state, pod, infos)
    if status is not None:
        return status, []
    scores, status = plugin.score_nodes(state, pod, snapshot_of(*infos), np.arange(len(infos)))
    assert status is None
    assert scores.tolist() == [plugin.score(state, pod, ni)[0] for ni in infos]
    plugin.normalize_score(state, pod, scores)
    return None, scores.tolist()


@pytest.mark.parametrize(("affinity", "labels", "added", "want_status", "want"), [
    # No preferred affinity anywhere: Skip.
    ({}, [LABEL1, LABEL2, LABEL3], None, SKIP, []),
    ({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": []}}}, [LABEL1], None, SKIP, []),
    # Nothing matches.
    (AFFINITY1, [LABEL4, LABEL2, LABEL3], None, None, [0, 0, 0]),
    (AFFINITY1, [LABEL1, LABEL2, LABEL3], None, None, [100, 0, 0]),
    (AFFINITY2, [LABEL1, LABEL5, LABEL2], None, None, [18, 100, 36]),
    # addedAffinity's preferred terms count even for a pod without its own.
    ({}, [LABEL1, {"zone": "foo"}, {"zone": "bar"}], {
        "preferredDuringSchedulingIgnoredDuringExecution": preferred(
            (3, labels_term(expr("zone", "In", "foo"))))}, None, [0, 100, 0]),
    (AFFINITY1, [LABEL1, {"zone": "foo", **LABEL1}, {"zone": "bar"}], {
        "preferredDuringSchedulingIgnoredDuringExecution": preferred(
            (3, labels_term(expr("zone", "In", "foo"))))}, None, [40, 100, 0]),
])
def test_score(affinity: dict[str, Any], labels: list[dict[str, str]],
               added: dict[str, Any] | None, want_status: Status | None,
               want: list[int]) -> None:
    plugin = NodeAffinity(added_args(**added) if added else NodeAffinityArgs(), new_handle())
    infos = [make_node(f"node{i}", **ls) for i, ls in enumerate(labels)]
    status, scores = run_score(plugin, make_pod(affinity=affinity), infos)
    assert status == want_status
    assert scores == want


def test_bad_preferred_term_is_a_pre_score_error() -> None:
    pod = make_pod(affinity={"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": preferred(
            (1, labels_term(expr("foo", "Foo"))))}})
    status = NodeAffinity(None, new_handle()).pre_score(CycleState(), pod, [make_node()])
    assert status is not None and status.code == Code.ERROR
    assert "Unsupported value: \"Foo\"" in status.message()


# Events -------------------------------------------------------------------------------------

def node_obj(name: str = "n", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}}


def test_events_to_register() -> None:
    (reg,) = NodeAffinity(None, new_handle()).events_to_register()
    assert reg.event == ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)


@pytest.mark.parametrize(("pod", "old", "new", "added", "want"), [
    # A new node that matches.
    (make_pod({"foo": "bar"}), None, node_obj(foo="bar"), None, QueueingHint.QUEUE),
    # A new node that does not.
    (make_pod({"foo": "bar"}), None, node_obj(), None, QueueingHint.QUEUE_SKIP),
    # A label added so that the node now matches.
    (make_pod({"foo": "bar"}), node_obj(), node_obj(foo="bar"), None, QueueingHint.QUEUE),
    # It matched before as well.
    (make_pod({"foo": "bar"}), node_obj(foo="bar"), node_obj(foo="bar", x="y"), None,
     QueueingHint.QUEUE_SKIP),
    # Still no match.
    (make_pod(affinity=required(labels_term(expr("foo", "In", "bar")))), node_obj(),
     node_obj(foo="baz"), None, QueueingHint.QUEUE_SKIP),
    # The node misses the scheduler-enforced affinity.
    (make_pod(), None, node_obj(zone="bar"), ADDED_ZONE_FOO, QueueingHint.QUEUE_SKIP),
    (make_pod(), None, node_obj(zone="foo"), ADDED_ZONE_FOO, QueueingHint.QUEUE),
])
def test_node_change_hint(pod: PodInfo, old: dict[str, Any] | None, new: dict[str, Any],
                          added: dict[str, Any] | None, want: QueueingHint) -> None:
    plugin = NodeAffinity(added_args(**added) if added else NodeAffinityArgs(), new_handle())
    (reg,) = plugin.events_to_register()
    assert reg.hint_fn is not None
    assert reg.hint_fn(pod.pod, old, new) == want
