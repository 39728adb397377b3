"""The vectorised selectors agree with the scalar ones on randomised snapshots."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from pkg.util.nodeaffinity import (
    NodeSelector,
    PreferredSchedulingTerms,
    RequiredNodeAffinity,
)
from scheduler.apis.config import NodeAffinityArgs
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.plugins.nodeaffinity import NodeAffinity
from scheduler.framework.plugins.nodeaffinity.columns import (
    label_column,
    preferred_scores,
    required_mask,
    selector_mask,
)
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import is_success
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.testing import new_handle

KEYS = ("zone", "pool", "gpu", "cores")
VALUES = ("a", "b", "c", "1", "8", "16", "-3", "x9")


def random_node(rng: random.Random, i: int) -> NodeInfo:
    labels = {k: rng.choice(VALUES) for k in KEYS if rng.random() < 0.6}
    labels["kubernetes.io/hostname"] = f"node{i}"
    # Now and then a node without a name: its matchFields are not checked.
    name = "" if rng.random() < 0.03 else f"node{i}"
    return NodeInfo({"metadata": {"name": name, "labels": labels}})


def random_expr(rng: random.Random, infos: list[NodeInfo]) -> dict[str, Any]:
    op = rng.choice(("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Bad"))
    key = rng.choice(KEYS + ("kubernetes.io/hostname",))
    if op in ("Exists", "DoesNotExist"):
        return {"key": key, "operator": op}
    if op in ("Gt", "Lt"):
        return {"key": key, "operator": op, "values": [rng.choice(("0", "5", "10"))]}
    if key == "kubernetes.io/hostname":
        values = [rng.choice(infos).name or "node0" for _ in range(rng.randint(1, 3))]
    else:
        values = rng.sample(VALUES, rng.randint(1, 3))
    return {"key": key, "operator": op, "values": values}


def random_term(rng: random.Random, infos: list[NodeInfo]) -> dict[str, Any]:
    term: dict[str, Any] = {}
    if rng.random() < 0.8:
        term["matchExpressions"] = [random_expr(rng, infos) for _ in range(rng.randint(0, 3))]
    if rng.random() < 0.3:
        term["matchFields"] = [{
            "key": rng.choice(("metadata.name", "metadata.name", "spec.other")),
            "operator": rng.choice(("In", "NotIn")),
            "values": [rng.choice((rng.choice(infos).name, "nowhere", ""))]}]
    return term


def random_pod(rng: random.Random, infos: list[NodeInfo]) -> PodInfo:
    spec: dict[str, Any] = {}
    if rng.random() < 0.4:
        spec["nodeSelector"] = {k: rng.choice(VALUES) for k in rng.sample(KEYS, 1)}
    node_affinity: dict[str, Any] = {}
    if rng.random() < 0.7:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [random_term(rng, infos) for _ in range(rng.randint(0, 3))]}
    if rng.random() < 0.7:
        terms = [{"weight": rng.randint(0, 50), "preference": random_term(rng, infos)}
                 for _ in range(rng.randint(0, 3))]
        # Preferred terms are parsed strictly: keep only those that parse.
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            t for t in terms if _parses(t)]
    spec["affinity"] = {"nodeAffinity": node_affinity}
    return PodInfo({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec})


def _parses(term: dict[str, Any]) -> bool:
    try:
        PreferredSchedulingTerms.parse([term])
    except ValueError:
        return False
    return True


def make_snapshot(rng: random.Random) -> tuple[Snapshot, list[NodeInfo]]:
    infos = [random_node(rng, i) for i in range(rng.randint(1, 80))]
    snap = Snapshot()
    snap.rebuild(infos)
    return snap, infos


@pytest.mark.parametrize("seed", range(30))
def test_masks_and_scores_agree_with_scalar(seed: int) -> None:
    rng = random.Random(seed)
    snap, infos = make_snapshot(rng)
    for _ in range(10):
        pod = random_pod(rng, infos)
        required = RequiredNodeAffinity.from_pod(pod.pod)
        assert required_mask(snap, required).tolist() == [
            required.matches(ni.labels, ni.name) for ni in infos]
        if required.affinity is not None:
            assert selector_mask(snap, required.affinity).tolist() == [
                required.affinity.matches(ni.labels, ni.name) for ni in infos]
        terms = PreferredSchedulingTerms.parse(
            pod.affinity["nodeAffinity"].get("preferredDuringSchedulingIgnoredDuringExecution")
            or [])
        assert preferred_scores(snap, terms).tolist() == [
            terms.score(ni.labels, ni.name) for ni in infos]


@pytest.mark.parametrize("seed", range(20))
def test_plugin_vectorised_agrees_with_scalar(seed: int) -> None:
    rng = random.Random(seed)
    snap, infos = make_snapshot(rng)
    added: dict[str, Any] = {}
    if rng.random() < 0.5:
        added["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["c"]}]}]}
    if rng.random() < 0.5:
        added["preferredDuringSchedulingIgnoredDuringExecution"] = [{"weight": 7, "preference": {
            "matchExpressions": [{"key": "pool", "operator": "In", "values": ["a", "b"]}]}}]
    plugin = NodeAffinity(NodeAffinityArgs.model_validate({"addedAffinity": added}), new_handle())
    for _ in range(10):
        pod = random_pod(rng, infos)
        state = CycleState()
        _, status = plugin.pre_filter(state, pod, snap)
        if status is None:
            mask = plugin.filter_nodes(state, pod, snap)
            got = np.ones(len(infos), bool) if mask is None else mask
            assert got.tolist() == [is_success(plugin.filter(state, pod, ni)) for ni in infos]
        if plugin.pre_score(state, pod, infos) is None:
            idx = np.array(sorted(rng.sample(range(len(infos)), rng.randint(1, len(infos)))))
            scores, status = plugin.score_nodes(state, pod, snap, idx)
            assert status is None
            assert scores.tolist() == [plugin.score(state, pod, infos[i])[0] for i in idx]


def test_label_column_codes_distinct_values() -> None:
    infos = [NodeInfo({"metadata": {"name": f"n{i}", "labels": labels}})
             for i, labels in enumerate(({"zone": "a"}, {}, {"zone": "b"}, {"zone": "a"}))]
    snap = Snapshot()
    snap.rebuild(infos)
    col = label_column(snap, "zone")
    assert col.values == ("a", "b")
    assert col.codes.tolist() == [0, -1, 1, 0]
    assert col.equal("a").tolist() == [True, False, False, True]
    assert not col.equal("zzz").any()


def test_masks_are_memoised_read_only_and_follow_node_changes() -> None:
    infos = [NodeInfo({"metadata": {"name": "n0", "labels": {"zone": "a"}}}),
             NodeInfo({"metadata": {"name": "n1", "labels": {"zone": "b"}}})]
    snap = Snapshot()
    snap.rebuild(infos)
    selector = NodeSelector.parse({"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]})
    mask = selector_mask(snap, selector)
    assert mask.tolist() == [True, False]
    assert selector_mask(snap, selector) is mask
    with pytest.raises(ValueError):
        mask[1] = True
    snap.set_node_info(1, NodeInfo({"metadata": {"name": "n1", "labels": {"zone": "a"}}}))
    snap.node_changed()
    assert selector_mask(snap, selector).tolist() == [True, True]


def test_node_naming_affinities_are_not_memoised() -> None:
    # A DaemonSet's pods each name their node: one memo entry per pod would pile up.
    infos = [NodeInfo({"metadata": {"name": f"n{i}", "labels": {}}}) for i in range(3)]
    snap = Snapshot()
    snap.rebuild(infos)
    for i in range(3):
        required = RequiredNodeAffinity.from_pod({"spec": {"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In",
                                  "values": [f"n{i}"]}]}]}}}}})
        assert required_mask(snap, required).tolist() == [j == i for j in range(3)]
    assert not any(key[1] == "required" for key in snap.memo)
