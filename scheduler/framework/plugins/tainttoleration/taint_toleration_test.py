"""TaintToleration: upstream's Filter and Score tables, vector-vs-scalar agreement, hints."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import NODE, POD, ActionType, ClusterEvent, QueueingHint
from scheduler.framework.plugins.tainttoleration import TaintToleration
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, is_success
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.testing import new_handle


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


def tol(key: str = "", value: str = "", effect: str = "", operator: str = "Equal",
        **extra: Any) -> dict[str, Any]:
    t: dict[str, Any] = {"key": key, "operator": operator, "value": value, "effect": effect}
    t.update(extra)
    return t


def make_node(name: str, *taints: dict[str, str]) -> NodeInfo:
    spec = {"taints": list(taints)} if taints else {}
    return NodeInfo({"metadata": {"name": name}, "spec": spec})


def make_pod(*tolerations: dict[str, Any], uid: str = "uid-1") -> PodInfo:
    return PodInfo({"metadata": {"name": "pod", "namespace": "ns", "uid": uid},
                    "spec": {"tolerations": list(tolerations)}})


def snapshot_of(*infos: NodeInfo) -> Snapshot:
    snap = Snapshot()
    snap.rebuild(list(infos))
    return snap


# Filter -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("tolerations", "taints", "reason"), [
    # A pod without tolerations cannot land on a node with a NoSchedule taint.
    ((), (taint("dedicated", "user1"),), "node(s) had untolerated taint {dedicated: user1}"),
    # A toleration of exactly that taint lets it.
    ((tol("dedicated", "user1", "NoSchedule"),), (taint("dedicated", "user1"),), None),
    # Equal with another value does not.
    ((tol("dedicated", "user2", "NoSchedule"),), (taint("dedicated", "user1"),),
     "node(s) had untolerated taint {dedicated: user1}"),
    # Exists tolerates any value of the key.
    ((tol("foo", operator="Exists", effect="NoSchedule"),), (taint("foo", "bar"),), None),
    # Every taint must be tolerated; the first untolerated one is named.
    ((tol("dedicated", "user2", "NoSchedule"),),
     (taint("dedicated", "user2"), taint("foo", "bar"), taint("baz")),
     "node(s) had untolerated taint {foo: bar}"),
    # An empty value prints as nothing.
    ((), (taint("node-role.kubernetes.io/control-plane"),),
     "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"),
    # PreferNoSchedule taints never reject.
    ((tol("foo", "bar", "PreferNoSchedule"),), (taint("foo", "bar", "PreferNoSchedule"),), None),
    ((), (taint("foo", "bar", "PreferNoSchedule"),), None),
    # NoExecute taints reject too.
    ((), (taint("dedicated", "user1", "NoExecute"),),
     "node(s) had untolerated taint {dedicated: user1}"),
    # A toleration without effect covers NoSchedule and NoExecute.
    ((tol("dedicated", "user1"),), (taint("dedicated", "user1", "NoExecute"),), None),
    # A toleration of another effect does not.
    ((tol("dedicated", "user1", "NoSchedule"),), (taint("dedicated", "user1", "NoExecute"),),
     "node(s) had untolerated taint {dedicated: user1}"),
    # Empty key with Exists tolerates everything.
    ((tol(operator="Exists"),), (taint("a", "1"), taint("b", "2", "NoExecute")), None),
])
def test_filter(tolerations: tuple[dict[str, Any], ...], taints: tuple[dict[str, str], ...],
                reason: str | None) -> None:
    plugin = TaintToleration(None, new_handle())
    ni = make_node("n1", *taints)
    status = plugin.filter(CycleState(), make_pod(*tolerations), ni)
    if reason is None:
        assert is_success(status)
    else:
        assert status is not None
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.reasons == (reason,)
    mask = plugin.filter_nodes(CycleState(), make_pod(*tolerations), snapshot_of(ni))
    assert (mask is None) == (reason is None)


def test_filter_nodes_is_none_without_blocking_taints() -> None:
    snap = snapshot_of(make_node("a"), make_node("b", taint("x", effect="PreferNoSchedule")))
    assert TaintToleration(None, new_handle()).filter_nodes(CycleState(), make_pod(), snap) is None


def test_filter_nodes_masks_only_untolerated_nodes() -> None:
    snap = snapshot_of(make_node("a"), make_node("b", taint("gpu")), make_node("c", taint("x")),
                       make_node("d", taint("gpu")))
    mask = TaintToleration(None, new_handle()).filter_nodes(
        CycleState(), make_pod(tol("gpu", operator="Exists")), snap)
    assert mask is not None
    assert mask.tolist() == [True, True, False, True]
    # The memoised mask is shared by later pods: it must not be writable.
    with pytest.raises(ValueError):
        mask[0] = False


def test_explain_lists_every_untolerated_taint() -> None:
    ni = make_node("n", taint("a", "1"), taint("b", effect="NoExecute"),
                   taint("c", effect="PreferNoSchedule"), taint("d", "4"))
    pod = make_pod(tol("d", "4"))
    assert TaintToleration(None, new_handle()).explain(CycleState(), pod, ni) == \
        "untolerated taints: a=1:NoSchedule, b:NoExecute"
    assert TaintToleration(None, new_handle()).explain(CycleState(), pod, make_node("m")) is None


# Score --------------------------------------------------------------------------------------

def run_score(plugin: TaintToleration, pod: PodInfo, infos: list[NodeInfo]) -> list[int]:
    """PreScore, Score (vectorised) and NormalizeScore over every node, as the framework runs
    them; also checks that the scalar Score gives the raw scores."""
    snap = snapshot_of(*infos)
    state = CycleState()
    assert plugin.pre_score(state, pod, infos) is None
    idx = np.arange(len(infos))
    scores, status = plugin.score_nodes(state, pod, snap, idx)
    assert status is None
    raw = [plugin.score(state, pod, ni) for ni in infos]
    assert [s for s, _ in raw] == scores.tolist()
    assert plugin.normalize_score(state, pod, scores) is None
    return scores.tolist()


@pytest.mark.parametrize(("tolerations", "nodes", "want"), [
    # Tolerated taints score higher than intolerable ones.
    ((tol("foo", "bar", "PreferNoSchedule"),),
     [make_node("A", taint("foo", "bar", "PreferNoSchedule")),
      make_node("B", taint("foo", "blah", "PreferNoSchedule"))],
     [100, 0]),
    # Nodes whose taints are all tolerated score the same, however many they have.
    ((tol("cpu-type", "arm64", "PreferNoSchedule"), tol("disk-type", "ssd", "PreferNoSchedule")),
     [make_node("A"), make_node("B", taint("cpu-type", "arm64", "PreferNoSchedule")),
      make_node("C", taint("cpu-type", "arm64", "PreferNoSchedule"),
                taint("disk-type", "ssd", "PreferNoSchedule"))],
     [100, 100, 100]),
    # The more intolerable taints, the lower the score.
    ((tol("foo", "bar", "PreferNoSchedule"),),
     [make_node("A"), make_node("B", taint("cpu-type", "arm64", "PreferNoSchedule")),
      make_node("C", taint("cpu-type", "arm64", "PreferNoSchedule"),
                taint("disk-type", "ssd", "PreferNoSchedule"))],
     [100, 50, 0]),
    # Only PreferNoSchedule taints and tolerations count.
    ((tol("cpu-type", "arm64", "NoSchedule"), tol("disk-type", "ssd", "NoSchedule")),
     [make_node("A"), make_node("B", taint("cpu-type", "arm64", "NoSchedule")),
      make_node("C", taint("cpu-type", "arm64", "PreferNoSchedule"),
                taint("disk-type", "ssd", "PreferNoSchedule"))],
     [100, 100, 0]),
    # A toleration without effect also covers PreferNoSchedule.
    ((tol("foo", operator="Exists"),),
     [make_node("A", taint("foo", "x", "PreferNoSchedule")),
      make_node("B", taint("bar", "x", "PreferNoSchedule"))],
     [100, 0]),
    # No taints, no tolerations.
    ((), [make_node("A"), make_node("B")], [100, 100]),
])
def test_score(tolerations: tuple[dict[str, Any], ...], nodes: list[NodeInfo],
               want: list[int]) -> None:
    assert run_score(TaintToleration(None, new_handle()), make_pod(*tolerations), nodes) == want


def test_score_without_pre_score_is_an_error() -> None:
    plugin = TaintToleration(None, new_handle())
    ni = make_node("A", taint("foo", effect="PreferNoSchedule"))
    _, status = plugin.score(CycleState(), make_pod(), ni)
    assert status is not None and status.code == Code.ERROR
    _, status = plugin.score_nodes(CycleState(), make_pod(), snapshot_of(ni), np.arange(1))
    assert status is not None and status.code == Code.ERROR


# Vectorised vs scalar -----------------------------------------------------------------------

KEYS = ("dedicated", "gpu", "zone", "spot")
EFFECTS = ("NoSchedule", "NoExecute", "PreferNoSchedule")


def random_taint(rng: random.Random) -> dict[str, str]:
    return taint(rng.choice(KEYS), rng.choice(("", "a", "b")), rng.choice(EFFECTS))


def random_toleration(rng: random.Random) -> dict[str, Any]:
    if rng.random() < 0.3:
        return tol(rng.choice(("",) + KEYS), operator="Exists",
                   effect=rng.choice(("",) + EFFECTS))
    return tol(rng.choice(KEYS), rng.choice(("", "a", "b")), rng.choice(("",) + EFFECTS),
               tolerationSeconds=rng.choice((None, 30)))


@pytest.mark.parametrize("seed", range(20))
def test_vectorised_agrees_with_scalar(seed: int) -> None:
    rng = random.Random(seed)
    infos = [make_node(f"n{i}", *(random_taint(rng) for _ in range(rng.choice((0, 0, 1, 2, 3)))))
             for i in range(rng.randint(1, 60))]
    snap = snapshot_of(*infos)
    plugin = TaintToleration(None, new_handle())
    for _ in range(10):
        pod = make_pod(*(random_toleration(rng) for _ in range(rng.randint(0, 4))))
        state = CycleState()
        mask = plugin.filter_nodes(state, pod, snap)
        scalar = [is_success(plugin.filter(state, pod, ni)) for ni in infos]
        assert (np.ones(len(infos), bool) if mask is None else mask).tolist() == scalar
        plugin.pre_score(state, pod, infos)
        idx = np.array(sorted(rng.sample(range(len(infos)), rng.randint(1, len(infos)))))
        scores, status = plugin.score_nodes(state, pod, snap, idx)
        assert status is None
        assert scores.tolist() == [plugin.score(state, pod, infos[i])[0] for i in idx]


def test_memo_follows_node_changes() -> None:
    infos = [make_node("a"), make_node("b", taint("x"))]
    snap = snapshot_of(*infos)
    plugin = TaintToleration(None, new_handle())
    mask = plugin.filter_nodes(CycleState(), make_pod(), snap)
    assert mask is not None and mask.tolist() == [True, False]
    snap.set_node_info(1, make_node("b"))
    snap.node_changed()
    assert plugin.filter_nodes(CycleState(), make_pod(), snap) is None


# Events -------------------------------------------------------------------------------------

def test_events_to_register() -> None:
    events = [e.event for e in TaintToleration(None, new_handle()).events_to_register()]
    assert events == [ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                      ClusterEvent(POD, ActionType.UPDATE_POD_TOLERATION)]


def node_obj(*taints: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": "n"}, "spec": {"taints": list(taints)}}


@pytest.mark.parametrize(("old", "new", "want"), [
    # A new node without untolerated taints may help.
    (None, node_obj(), QueueingHint.QUEUE),
    (None, node_obj(taint("foo", "bar")), QueueingHint.QUEUE_SKIP),
    (None, node_obj(taint("tolerated", "yes")), QueueingHint.QUEUE),
    # The untolerated taint went away.
    (node_obj(taint("foo", "bar")), node_obj(), QueueingHint.QUEUE),
    # It did not, or there was none to begin with.
    (node_obj(taint("foo", "bar")), node_obj(taint("foo", "bar"), taint("tolerated", "yes")),
     QueueingHint.QUEUE_SKIP),
    (node_obj(), node_obj(taint("tolerated", "yes")), QueueingHint.QUEUE_SKIP),
])
def test_node_change_hint(old: dict[str, Any] | None, new: dict[str, Any],
                          want: QueueingHint) -> None:
    (node_hint, _) = TaintToleration(None, new_handle()).events_to_register()
    pod = make_pod(tol("tolerated", "yes", "NoSchedule")).pod
    assert node_hint.hint_fn is not None
    assert node_hint.hint_fn(pod, old, new) == want


def test_pod_toleration_hint_queues_only_this_pod_with_new_tolerations() -> None:
    (_, pod_hint) = TaintToleration(None, new_handle()).events_to_register()
    assert pod_hint.hint_fn is not None
    old = make_pod(uid="u1").pod
    added = make_pod(tol("foo", "bar"), uid="u1").pod
    other = make_pod(tol("foo", "bar"), uid="u2").pod
    assert pod_hint.hint_fn(old, old, added) == QueueingHint.QUEUE
    assert pod_hint.hint_fn(old, old, old) == QueueingHint.QUEUE_SKIP
    assert pod_hint.hint_fn(old, make_pod(uid="u2").pod, other) == QueueingHint.QUEUE_SKIP
