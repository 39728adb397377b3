"""InterPodAffinity PreScore/Score/NormalizeScore: upstream-style tables and the vectorised
Score against the scalar one."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import numpy as np
import pytest

from scheduler.apis.config import InterPodAffinityArgs
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.plugins.interpodaffinity import InterPodAffinity
from scheduler.framework.plugins.interpodaffinity.terms import AffinityTerm, pod_terms
from scheduler.framework.plugins.interpodaffinity.testing import (
    HOSTNAME,
    REGION,
    ZONE,
    node,
    pod,
    random_cluster,
    snapshot_of,
    term,
)
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code
from scheduler.framework.types import PodInfo
from scheduler.frameworkext.testing import new_handle


def preferred(affinity: list[tuple[int, dict[str, Any]]] | None = None,
              anti: list[tuple[int, dict[str, Any]]] | None = None,
              required: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    def weighted(terms: list[tuple[int, dict[str, Any]]]) -> list[dict[str, Any]]:
        return [{"weight": w, "podAffinityTerm": t} for w, t in terms]

    out: dict[str, Any] = {}
    pa: dict[str, Any] = {}
    if affinity:
        pa["preferredDuringSchedulingIgnoredDuringExecution"] = weighted(affinity)
    if required:
        pa["requiredDuringSchedulingIgnoredDuringExecution"] = required
    if pa:
        out["podAffinity"] = pa
    if anti:
        out["podAntiAffinity"] = {
            "preferredDuringSchedulingIgnoredDuringExecution": weighted(anti)}
    return out


def scores(snap: Snapshot, incoming: dict[str, Any],
           args: InterPodAffinityArgs | None = None) -> tuple[Any, dict[str, int] | None]:
    """(PreScore status, normalized score per node name) over every node of the snapshot."""
    pl = InterPodAffinity(args or InterPodAffinityArgs(), new_handle(snapshot=snap))
    state, pi = CycleState(), PodInfo(incoming)
    status = pl.pre_score(state, pi, snap.node_infos)
    if status is not None:
        return status, None
    idx = np.arange(len(snap))
    raw, status = pl.score_nodes(state, pi, snap, idx)
    assert status is None
    pl.normalize_score(state, pi, raw)
    return None, dict(zip(snap.names, raw.tolist(), strict=True))


NODES = [node("n1", {ZONE: "z1"}), node("n2", {ZONE: "z1"}), node("n3", {ZONE: "z2"}),
         node("n4", {ZONE: "z3"})]


def test_preferred_affinity_favours_the_topology_of_matching_pods() -> None:
    snap = snapshot_of(NODES, [pod("db1", {"app": "db"}, node_name="n1"),
                               pod("db2", {"app": "db"}, node_name="n3"),
                               pod("db3", {"app": "db"}, node_name="n3")])
    status, got = scores(snap, pod("p", affinity=preferred([(5, term(ZONE, {"app": "db"}))])))
    # z1 has one match (5), z2 two (10), z3 none: min-max over 0..10.
    assert status is None and got == {"n1": 50, "n2": 50, "n3": 100, "n4": 0}


def test_preferred_anti_affinity_subtracts() -> None:
    snap = snapshot_of(NODES, [pod("web", {"app": "web"}, node_name="n2"),
                               pod("db", {"app": "db"}, node_name="n3")])
    incoming = pod("p", affinity=preferred([(10, term(ZONE, {"app": "db"}))],
                                           [(5, term(ZONE, {"app": "web"}))]))
    status, got = scores(snap, incoming)
    # z1: -5, z2: +10, z3: 0 → 100 * (s + 5) / 15, truncated.
    assert status is None and got == {"n1": 0, "n2": 0, "n3": 100, "n4": 33}


def test_existing_pods_required_affinity_weighs_hard_pod_affinity_weight() -> None:
    lover = pod("lover", node_name="n3",
                affinity=preferred(required=[term(ZONE, {"app": "web"})]))
    snap = snapshot_of(NODES, [lover])
    status, got = scores(snap, pod("p", {"app": "web"}))
    assert status is None and got == {"n1": 0, "n2": 0, "n3": 100, "n4": 0}
    # Weight 0 ignores them: nothing matched, so Score is skipped.
    status, _ = scores(snap, pod("p", {"app": "web"}),
                       InterPodAffinityArgs(hard_pod_affinity_weight=0))
    assert status is not None and status.code == Code.SKIP


def test_existing_pods_preferred_terms_count_unless_ignored() -> None:
    hater = pod("hater", node_name="n1",
                affinity=preferred(anti=[(7, term(ZONE, {"app": "web"}))]))
    fan = pod("fan", node_name="n4", affinity=preferred([(3, term(ZONE, {"app": "web"}))]))
    snap = snapshot_of(NODES, [hater, fan])
    status, got = scores(snap, pod("p", {"app": "web"}))
    # z1: -7, z2: 0, z3: +3 → 100 * (s + 7) / 10.
    assert status is None and got == {"n1": 0, "n2": 0, "n3": 70, "n4": 100}
    status, _ = scores(snap, pod("p", {"app": "web"}),
                       InterPodAffinityArgs(ignore_preferred_terms_of_existing_pods=True))
    assert status is not None and status.code == Code.SKIP


def test_no_term_matching_anything_skips() -> None:
    snap = snapshot_of(NODES, [pod("web", {"app": "web"}, node_name="n1")])
    status, _ = scores(snap, pod("p", affinity=preferred([(5, term(ZONE, {"app": "db"}))])))
    assert status is not None and status.code == Code.SKIP
    status, _ = scores(snap, pod("p"))
    assert status is not None and status.code == Code.SKIP


def test_equal_scores_normalize_to_zero() -> None:
    nodes = [node("n1", {ZONE: "z1"}), node("n2", {ZONE: "z1"})]
    snap = snapshot_of(nodes, [pod("db", {"app": "db"}, node_name="n1")])
    status, got = scores(snap, pod("p", affinity=preferred([(5, term(ZONE, {"app": "db"}))])))
    assert status is None and got == {"n1": 0, "n2": 0}


def test_pre_score_without_nodes_skips() -> None:
    snap = snapshot_of(NODES)
    pl = InterPodAffinity(InterPodAffinityArgs(), new_handle(snapshot=snap))
    status = pl.pre_score(CycleState(), PodInfo(pod("p")), [])
    assert status is not None and status.code == Code.SKIP


def _reference(snap: Snapshot, incoming: PodInfo, hard_weight: int,
               idx: np.ndarray) -> list[int]:
    """Upstream's PreScore and Score, walking every pod of every node."""
    terms = pod_terms(incoming)
    topo: Counter[tuple[str, str]] = Counter()

    def process(t: AffinityTerm, weight: int, p: PodInfo, ns_labels: Any,
                labels: dict[str, str]) -> None:
        if t.matches_pod(p, ns_labels) and t.topology_key in labels:
            topo[t.topology_key, labels[t.topology_key]] += weight

    for ni in snap.node_infos:
        labels = ni.labels
        for p in ni.pods.values():
            for wt in terms.preferred_affinity:
                process(wt.term, wt.weight, p, None, labels)
            for wt in terms.preferred_anti_affinity:
                process(wt.term, -wt.weight, p, None, labels)
            existing = pod_terms(p)
            if hard_weight > 0:
                for t in existing.required_affinity:
                    process(t, hard_weight, incoming, {}, labels)
            for wt in existing.preferred_affinity:
                process(wt.term, wt.weight, incoming, {}, labels)
            for wt in existing.preferred_anti_affinity:
                process(wt.term, -wt.weight, incoming, {}, labels)
    return [sum(topo[k, v] for k, v in snap.node_infos[i].labels.items()) for i in idx]


@pytest.mark.parametrize("seed", range(10))
def test_score_nodes_agrees_with_score(seed: int) -> None:
    rng = random.Random(seed)
    names = ["a", "b", "c"]

    def terms(n: int) -> list[tuple[int, dict[str, Any]]]:
        return [(rng.randrange(1, 10),
                 term(rng.choice([ZONE, REGION, HOSTNAME]), {"app": rng.choice(names)}))
                for _ in range(n)]

    def make(name: str, node_name: str) -> dict[str, Any]:
        aff = None
        if rng.random() < 0.3:
            aff = preferred(terms(rng.randrange(2)), terms(rng.randrange(2)),
                            [term(ZONE, {"app": rng.choice(names)})])
        return pod(name, {"app": rng.choice(names)}, node_name=node_name, affinity=aff)

    nodes, pods = random_cluster(rng, 40, 80, make)
    snap = snapshot_of(nodes, pods)
    hard_weight = rng.randrange(3)
    pl = InterPodAffinity(InterPodAffinityArgs(hard_pod_affinity_weight=hard_weight),
                          new_handle(snapshot=snap))
    checked = 0
    for k in range(6):
        incoming = PodInfo(pod(f"in{k}", {"app": rng.choice(names)},
                               affinity=preferred(terms(rng.randrange(3)),
                                                  terms(rng.randrange(3)))))
        idx = np.array(sorted(rng.sample(range(len(snap)), 25)))
        state = CycleState()
        if pl.pre_score(state, incoming, [snap.node_infos[i] for i in idx]) is not None:
            continue
        vector, _ = pl.score_nodes(state, incoming, snap, idx)
        scalar = [pl.score(state, incoming, snap.node_infos[i])[0] for i in idx]
        assert vector.tolist() == scalar == _reference(snap, incoming, hard_weight, idx)
        checked += 1
    assert checked
