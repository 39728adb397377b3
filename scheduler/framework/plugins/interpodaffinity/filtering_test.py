"""InterPodAffinity PreFilter/Filter: upstream-style tables, the vectorised Filter against
the scalar one, and the PreFilterExtensions."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from scheduler.apis.config import InterPodAffinityArgs
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.plugins.interpodaffinity import InterPodAffinity
from scheduler.framework.plugins.interpodaffinity.terms import pod_terms
from scheduler.framework.plugins.interpodaffinity.testing import (
    HOSTNAME,
    REGION,
    ZONE,
    FakeInformers,
    node,
    pod,
    random_cluster,
    snapshot_of,
    term,
)
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, is_success
from scheduler.framework.types import PodInfo
from scheduler.frameworkext.testing import new_handle

AFFINITY = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"


def affinity(required: list[dict[str, Any]] | None = None,
             anti: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if required:
        out["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": required}
    if anti:
        out["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": anti}
    return out


def plugin(snap: Snapshot, informers: Any = None) -> InterPodAffinity:
    return InterPodAffinity(InterPodAffinityArgs(),
                            new_handle(snapshot=snap, informer_factory=informers))


def run(snap: Snapshot, incoming: dict[str, Any], informers: Any = None
        ) -> tuple[InterPodAffinity, CycleState, PodInfo, Any]:
    pl = plugin(snap, informers)
    state, pi = CycleState(), PodInfo(incoming)
    _, status = pl.pre_filter(state, pi, snap)
    return pl, state, pi, status


def results(snap: Snapshot, incoming: dict[str, Any], informers: Any = None
            ) -> dict[str, tuple[Code, str] | None]:
    """Per node name: None (passes) or (code, reason)."""
    pl, state, pi, status = run(snap, incoming, informers)
    assert status is None, status
    out = {}
    for ni in snap.node_infos:
        st = pl.filter(state, pi, ni)
        out[ni.name] = None if st is None or st.is_success() else (st.code, st.message())
    return out


ZONES = [node("n1", {ZONE: "z1"}), node("n2", {ZONE: "z1"}), node("n3", {ZONE: "z2"}),
         node("n4")]


def test_pod_without_affinity_and_no_anti_affinity_anywhere_skips() -> None:
    snap = snapshot_of(ZONES, [pod("web", {"app": "web"}, node_name="n1")])
    _, _, _, status = run(snap, pod("p", {"app": "web"}))
    assert status is not None and status.code == Code.SKIP


def test_required_affinity_allows_only_the_topology_of_a_matching_pod() -> None:
    snap = snapshot_of(ZONES, [pod("db", {"app": "db"}, node_name="n2")])
    got = results(snap, pod("p", affinity=affinity([term(ZONE, {"app": "db"})])))
    unresolvable = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, AFFINITY)
    # n4 has no zone label at all: all topology labels must exist.
    assert got == {"n1": None, "n2": None, "n3": unresolvable, "n4": unresolvable}


def test_affinity_terms_all_match_one_pod() -> None:
    # Two terms: both must be satisfied by the same existing pod's topology.
    nodes = [node("n1", {ZONE: "z1", REGION: "r1"}), node("n2", {ZONE: "z2", REGION: "r1"})]
    snap = snapshot_of(nodes, [pod("a", {"app": "db", "tier": "x"}, node_name="n1"),
                               pod("b", {"app": "db"}, node_name="n2")])
    incoming = pod("p", affinity=affinity([term(ZONE, {"app": "db"}),
                                           term(REGION, {"tier": "x"})]))
    got = results(snap, incoming)
    assert got == {"n1": None, "n2": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, AFFINITY)}


def test_required_anti_affinity_keeps_the_pod_out_of_matching_topologies() -> None:
    snap = snapshot_of(ZONES, [pod("web", {"app": "web"}, node_name="n1")])
    got = results(snap, pod("p", affinity=affinity(anti=[term(ZONE, {"app": "web"})])))
    anti = (Code.UNSCHEDULABLE, ANTI_AFFINITY)
    # A node without the topology label cannot be in the clashing domain.
    assert got == {"n1": anti, "n2": anti, "n3": None, "n4": None}


def test_existing_pods_anti_affinity_rejects_its_topology() -> None:
    guard = pod("guard", {"app": "guard"}, node_name="n3",
                affinity=affinity(anti=[term(ZONE, {"app": "web"})]))
    snap = snapshot_of(ZONES, [guard])
    got = results(snap, pod("p", {"app": "web"}))
    assert got == {"n1": None, "n2": None, "n3": (Code.UNSCHEDULABLE, EXISTING_ANTI_AFFINITY),
                   "n4": None}
    # A pod the guard does not select is not kept out (and needs no Filter at all).
    _, _, _, status = run(snap, pod("q", {"app": "other"}))
    assert status is not None and status.code == Code.SKIP


def test_first_pod_of_a_group_with_affinity_to_itself() -> None:
    incoming = pod("p", {"app": "cache"}, affinity=affinity([term(ZONE, {"app": "cache"})]))
    snap = snapshot_of(ZONES, [pod("other", {"app": "web"}, node_name="n1")])
    got = results(snap, incoming)
    # No pod matches anywhere and the pod matches its own term: any node with the label.
    assert got == {"n1": None, "n2": None, "n3": None,
                   "n4": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, AFFINITY)}
    # Once one matching pod exists, only its zone is allowed.
    snap = snapshot_of(ZONES, [pod("c1", {"app": "cache"}, node_name="n3")])
    assert [name for name, r in results(snap, incoming).items() if r is None] == ["n3"]


def test_first_pod_not_matching_its_own_terms_stays_pending() -> None:
    incoming = pod("p", {"app": "web"}, affinity=affinity([term(ZONE, {"app": "cache"})]))
    got = results(snapshot_of(ZONES), incoming)
    assert all(r == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, AFFINITY) for r in got.values())


def test_namespaces_of_terms() -> None:
    nodes = [node("n1", {ZONE: "z1"}), node("n2", {ZONE: "z2"})]
    pods = [pod("db", {"app": "db"}, node_name="n1", namespace="data"),
            pod("db", {"app": "db"}, node_name="n2", namespace="default")]
    snap = snapshot_of(nodes, pods)
    # By default only the pod's own namespace counts.
    own = results(snap, pod("p", affinity=affinity([term(ZONE, {"app": "db"})])))
    assert [n for n, r in own.items() if r is None] == ["n2"]
    listed = results(snap, pod("p", affinity=affinity(
        [term(ZONE, {"app": "db"}, namespaces=["data"])])))
    assert [n for n, r in listed.items() if r is None] == ["n1"]
    # An empty namespaceSelector selects every namespace.
    every = results(snap, pod("p", affinity=affinity(
        [term(ZONE, {"app": "db"}, namespaceSelector={})])))
    assert [n for n, r in every.items() if r is None] == ["n1", "n2"]


def test_namespace_selector_reads_namespace_labels() -> None:
    nodes = [node("n1", {ZONE: "z1"}), node("n2", {ZONE: "z2"})]
    pods = [pod("db", {"app": "db"}, node_name="n1", namespace="data"),
            pod("db", {"app": "db"}, node_name="n2", namespace="scratch")]
    snap = snapshot_of(nodes, pods)
    informers = FakeInformers({"namespaces": [
        {"metadata": {"name": "data", "labels": {"team": "a"}}},
        {"metadata": {"name": "scratch", "labels": {"team": "b"}}},
        {"metadata": {"name": "default", "labels": {"team": "b"}}}]})
    incoming = pod("p", affinity=affinity(
        [term(ZONE, {"app": "db"}, namespaceSelector={"matchLabels": {"team": "a"}})]))
    assert [n for n, r in results(snap, incoming, informers).items() if r is None] == ["n1"]
    # Without namespace informers a selector with requirements selects no namespace.
    assert all(r is not None for r in results(snap, incoming).values())
    # An existing pod's anti-affinity selecting namespaces by label sees the incoming pod's.
    guard = pod("guard", node_name="n2", namespace="data", affinity=affinity(anti=[
        term(ZONE, {"app": "web"}, namespaceSelector={"matchLabels": {"team": "b"}})]))
    snap = snapshot_of(nodes, [guard])
    got = results(snap, pod("p", {"app": "web"}), informers)
    assert got == {"n1": None, "n2": (Code.UNSCHEDULABLE, EXISTING_ANTI_AFFINITY)}


def test_invalid_selector_is_unresolvable() -> None:
    bad = {"topologyKey": ZONE, "labelSelector": {"matchExpressions": [
        {"key": "app", "operator": "In"}]}}
    _, _, _, status = run(snapshot_of(ZONES), pod("p", affinity=affinity([bad])))
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message().startswith("parsing pod: ")


def test_filter_without_pre_filter_state_is_an_error() -> None:
    snap = snapshot_of(ZONES)
    st = plugin(snap).filter(CycleState(), PodInfo(pod("p")), snap.node_infos[0])
    assert st is not None and st.code == Code.ERROR


# PreFilterExtensions ---------------------------------------------------------------------------


def test_add_pod_satisfies_affinity_and_remove_pod_undoes_it() -> None:
    snap = snapshot_of(ZONES, [pod("db", {"app": "db"}, node_name="n1")])
    incoming = pod("p", affinity=affinity([term(ZONE, {"app": "db"})]))
    pl, state, pi, _ = run(snap, incoming)
    n3 = snap["n3"]
    assert not is_success(pl.filter(state, pi, n3))
    added = PodInfo(pod("db2", {"app": "db"}, node_name="n3"))
    assert pl.add_pod(state, pi, added, n3) is None
    assert pl.filter(state, pi, n3) is None
    assert pl.filter_nodes(state, pi, snap) is not None  # n4 still lacks the zone
    pl.remove_pod(state, pi, added, n3)
    assert not is_success(pl.filter(state, pi, n3))


def test_removing_the_clashing_pods_lifts_anti_affinity() -> None:
    guard_pod = pod("guard", {"app": "guard"}, node_name="n1",
                    affinity=affinity(anti=[term(ZONE, {"app": "web"})]))
    web = pod("web", {"app": "web"}, node_name="n3")
    snap = snapshot_of(ZONES, [guard_pod, web])
    incoming = pod("p", {"app": "web"}, affinity=affinity(anti=[term(ZONE, {"app": "web"})]))
    pl, state, pi, _ = run(snap, incoming)
    clone = state.clone()
    pl.remove_pod(clone, pi, snap["n1"].pods["default/guard"], snap["n1"])
    pl.remove_pod(clone, pi, snap["n3"].pods["default/web"], snap["n3"])
    for name in ("n1", "n3"):
        assert pl.filter(clone, pi, snap[name]) is None
        # The original state is untouched by the simulation on the clone.
        assert not is_success(pl.filter(state, pi, snap[name]))


def test_add_pod_with_anti_affinity_against_the_incoming_pod() -> None:
    snap = snapshot_of(ZONES, [])
    incoming = pod("p", {"app": "web"}, affinity=affinity(anti=[term(HOSTNAME, {"x": "y"})]))
    pl, state, pi, _ = run(snap, incoming)
    guard = PodInfo(pod("guard", node_name="n2",
                        affinity=affinity(anti=[term(ZONE, {"app": "web"})])))
    pl.add_pod(state, pi, guard, snap["n2"])
    st = pl.filter(state, pi, snap["n1"])
    assert st is not None and st.reasons == (EXISTING_ANTI_AFFINITY,)
    assert pl.filter(state, pi, snap["n3"]) is None


# Vectorised Filter -----------------------------------------------------------------------------


def _random_affinity(rng: random.Random, names: list[str]) -> dict[str, Any]:
    def one() -> dict[str, Any]:
        key = rng.choice([ZONE, REGION, HOSTNAME])
        extra: dict[str, Any] = {}
        if rng.random() < 0.2:
            extra["namespaces"] = ["default", "other"]
        return term(key, {"app": rng.choice(names)}, **extra)

    return affinity([one() for _ in range(rng.randrange(3))],
                    [one() for _ in range(rng.randrange(3))])


def _reference(snap: Snapshot, incoming: PodInfo) -> list[bool]:
    """Upstream's PreFilter and Filter, walking every pod of every node."""
    terms = pod_terms(incoming)
    existing: Counter[tuple[str, str]] = Counter()
    aff: Counter[tuple[str, str]] = Counter()
    anti: Counter[tuple[str, str]] = Counter()
    for ni in snap.node_infos:
        labels = ni.labels
        for p in ni.pods.values():
            for t in pod_terms(p).required_anti_affinity:
                if t.matches_pod(incoming, {}) and t.topology_key in labels:
                    existing[t.topology_key, labels[t.topology_key]] += 1
            if terms.required_affinity and all(t.matches_pod(p, None)
                                               for t in terms.required_affinity):
                for t in terms.required_affinity:
                    if t.topology_key in labels:
                        aff[t.topology_key, labels[t.topology_key]] += 1
            for t in terms.required_anti_affinity:
                if t.matches_pod(p, None) and t.topology_key in labels:
                    anti[t.topology_key, labels[t.topology_key]] += 1
    self_match = bool(terms.required_affinity) and all(
        t.matches_pod(incoming, None) for t in terms.required_affinity)
    out = []
    for ni in snap.node_infos:
        labels = ni.labels
        keys = [t.topology_key for t in terms.required_affinity]
        ok = all(k in labels for k in keys) and (
            all(aff[k, labels[k]] > 0 for k in keys) or (not +aff and self_match))
        ok = ok and not any(anti[t.topology_key, labels[t.topology_key]] > 0
                            for t in terms.required_anti_affinity if t.topology_key in labels)
        ok = ok and not any(existing[k, v] > 0 for k, v in labels.items())
        out.append(ok)
    return out


@pytest.mark.parametrize("seed", range(12))
def test_filter_nodes_agrees_with_filter(seed: int) -> None:
    rng = random.Random(seed)
    names = ["a", "b", "c"]

    def make(name: str, node_name: str) -> dict[str, Any]:
        return pod(name, {"app": rng.choice(names)}, node_name=node_name,
                   namespace=rng.choice(["default", "other"]),
                   affinity=_random_affinity(rng, names) if rng.random() < 0.15 else None)

    nodes, pods = random_cluster(rng, 40, 60, make)
    snap = snapshot_of(nodes, pods)
    pl = plugin(snap)
    for k in range(8):
        incoming = PodInfo(pod(f"in{k}", {"app": rng.choice(names)},
                               affinity=_random_affinity(rng, names)))
        state = CycleState()
        _, status = pl.pre_filter(state, incoming, snap)
        reference = _reference(snap, incoming)
        if status is not None:
            assert status.code == Code.SKIP and all(reference)
            continue
        scalar = [is_success(pl.filter(state, incoming, ni)) for ni in snap.node_infos]
        mask = pl.filter_nodes(state, incoming, snap)
        vector = [True] * len(scalar) if mask is None else mask.tolist()
        assert scalar == vector == reference
