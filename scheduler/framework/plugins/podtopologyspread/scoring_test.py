"""PodTopologySpread PreScore/Score/NormalizeScore: worked examples, default constraints from
Services and controllers, and the vectorised Score against the scalar one and a walk over
every pod."""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pytest

from scheduler.apis.config import PodTopologySpreadArgs
from scheduler.apis.config.kube_args import TopologySpreadConstraint
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.plugins.interpodaffinity.testing import (
    HOSTNAME,
    REGION,
    ZONE,
    FakeInformers,
    node,
    pod,
    random_cluster,
    snapshot_of,
)
from scheduler.framework.plugins.podtopologyspread import PodTopologySpread
from scheduler.framework.plugins.podtopologyspread.scoring import PRE_SCORE_STATE_KEY
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code
from scheduler.framework.types import PodInfo
from scheduler.frameworkext.testing import new_handle

FOO = {"foo": ""}


def soft(key: str = ZONE, max_skew: int = 1, labels: dict[str, str] | None = None,
         **extra: Any) -> dict[str, Any]:
    return {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": labels if labels is not None else FOO}, **extra}


def scores(snap: Snapshot, incoming: dict[str, Any], args: Any = None,
           informers: Any = None, names: list[str] | None = None
           ) -> tuple[Any, dict[str, int] | None]:
    """(PreScore status, normalized score per node) over ``names`` (default: every node)."""
    pl = PodTopologySpread(args or PodTopologySpreadArgs(),
                           new_handle(snapshot=snap, informer_factory=informers))
    state, pi = CycleState(), PodInfo(incoming)
    idx = np.array([snap.index[n] for n in names or snap.names])
    status = pl.pre_score(state, pi, [snap.node_infos[i] for i in idx])
    if status is not None:
        return status, None
    raw, status = pl.score_nodes(state, pi, snap, idx)
    assert status is None
    pl.normalize_score(state, pi, raw)
    return None, dict(zip([snap.node_infos[i].name for i in idx], raw.tolist(), strict=True))


FOUR = [node("a", {ZONE: "z1"}), node("b", {ZONE: "z1"}), node("x", {ZONE: "z2"}),
        node("y", {ZONE: "z2"})]


def foo_pods(*node_names: str, labels: dict[str, str] | None = None) -> list[dict[str, Any]]:
    return [pod(f"p{i}-{n}", labels or FOO, node_name=n) for i, n in enumerate(node_names)]


def test_pod_without_soft_constraints_skips() -> None:
    snap = snapshot_of(FOUR)
    for incoming in (pod("p", FOO), pod("p", FOO, spread=[dict(soft(), whenUnsatisfiable=
                                                              "DoNotSchedule")])):
        status, _ = scores(snap, incoming)
        assert status is not None and status.code == Code.SKIP


def test_zone_spreading_worked_example() -> None:
    snap = snapshot_of(FOUR, foo_pods("a", "a", "b", "x"))
    status, got = scores(snap, pod("p", FOO, spread=[soft()]))
    # Two zones: weight ln 4. z1: round(3 × 1.386) = 4, z2: round(1.386) = 1; normalized
    # 100 × (4 + 1 − s) / 4.
    assert status is None and got == {"a": 25, "b": 25, "x": 100, "y": 100}


def test_hostname_spreading_counts_each_nodes_pods() -> None:
    snap = snapshot_of(FOUR, foo_pods("a", "a", "a", "b"))
    status, got = scores(snap, pod("p", FOO, spread=[soft(HOSTNAME, 2)]))
    w = math.log(4 + 2)
    raw = {"a": round(3 * w + 1), "b": round(w + 1), "x": 1, "y": 1}
    hi, lo = max(raw.values()), min(raw.values())
    assert status is None and got == {n: 100 * (hi + lo - s) // hi for n, s in raw.items()}


def test_domain_sizes_come_from_the_scored_nodes() -> None:
    nodes = FOUR + [node("c", {ZONE: "z3"})]
    snap = snapshot_of(nodes, foo_pods("a", "x", "x"))
    # Only z1 and z2 are scored: weight ln 4, counts over all nodes still (z2 has 2).
    _, got = scores(snap, pod("p", FOO, spread=[soft()]), names=["a", "x"])
    raw = {"a": round(math.log(4)), "x": round(2 * math.log(4))}
    assert got == {n: 100 * (raw["x"] + raw["a"] - s) // raw["x"] for n, s in raw.items()}


def test_nodes_without_the_topology_label_score_zero() -> None:
    snap = snapshot_of(FOUR + [node("n", {})], foo_pods("a"))
    status, got = scores(snap, pod("p", FOO, spread=[soft()]))
    assert status is None and got == {"a": 0, "b": 0, "x": 100, "y": 100, "n": 0}


def test_no_matching_pods_all_score_max() -> None:
    snap = snapshot_of(FOUR)
    _, got = scores(snap, pod("p", FOO, spread=[soft()]))
    # raw = 0 × w + (maxSkew − 1) = 0 everywhere: max 0 means 100 for all.
    assert got == {"a": 100, "b": 100, "x": 100, "y": 100}


def test_system_defaults_spread_by_the_pods_services() -> None:
    nodes = FOUR + [node("n", {})]
    snap = snapshot_of(nodes, foo_pods("a", "a", "x", labels={"app": "web"}))
    web = pod("p", {"app": "web", "v": "1"})
    # No Service selects the pod: no default constraints.
    status, _ = scores(snap, web, informers=FakeInformers())
    assert status is not None and status.code == Code.SKIP
    services: dict[str, list[dict[str, Any]]] = {"services": [
        {"metadata": {"name": "web", "namespace": "default"}, "spec": {"selector": {
            "app": "web"}}},
        {"metadata": {"name": "none", "namespace": "default"}, "spec": {}},
        {"metadata": {"name": "db", "namespace": "default"}, "spec": {"selector": {
            "app": "db"}}}]}
    status, got = scores(snap, web, informers=FakeInformers(services))
    assert status is None and got is not None
    # System defaults do not ignore the node without a zone: it is spread by hostname.
    assert got["n"] > 0
    # hostname (maxSkew 3) and zone (maxSkew 5): a has 2 pods in z1 (2), x 1 in z2 (1).
    wz, wh = math.log(2 + 2 + 1), math.log(5 + 2)
    raw = {"a": round(2 * wh + 2 + 2 * wz + 4), "b": round(2 + 2 * wz + 4),
           "x": round(wh + 2 + wz + 4), "y": round(2 + wz + 4), "n": round(2)}
    hi, lo = max(raw.values()), min(raw.values())
    assert got == {k: 100 * (hi + lo - s) // hi for k, s in raw.items()}


def test_list_defaults_spread_by_the_controlling_replica_set() -> None:
    snap = snapshot_of(FOUR, foo_pods("a", "b", labels={"app": "web", "rs": "r1"})
                       + foo_pods("x", "x", labels={"app": "web", "rs": "r2"}))
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r1", "controller": True}
    web = pod("p", {"app": "web", "rs": "r1"})
    web["metadata"]["ownerReferences"] = [owner]
    informers = FakeInformers({"replicasets": [{
        "metadata": {"name": "r1", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"rs": "r1"}}}}]})
    args = PodTopologySpreadArgs(defaulting_type="List", default_constraints=[
        TopologySpreadConstraint(max_skew=1, topology_key=ZONE,
                                 when_unsatisfiable="ScheduleAnyway")])
    status, got = scores(snap, web, args, informers)
    # Only r1's pods count (both in z1): z2 is preferred.
    assert status is None and got == {"a": 0, "b": 0, "x": 100, "y": 100}
    # Without the controller in the cache, nothing selects the pod.
    status, _ = scores(snap, web, args, FakeInformers())
    assert status is not None and status.code == Code.SKIP


def test_normalize_after_scalar_scores_uses_the_pre_score_nodes() -> None:
    snap = snapshot_of(FOUR + [node("n", {})], foo_pods("a"))
    pl = PodTopologySpread(PodTopologySpreadArgs(), new_handle(snapshot=snap))
    state, pi = CycleState(), PodInfo(pod("p", FOO, spread=[soft()]))
    assert pl.pre_score(state, pi, snap.node_infos) is None
    raw = np.array([pl.score(state, pi, ni)[0] for ni in snap.node_infos])
    pl.normalize_score(state, pi, raw)
    assert raw.tolist() == [0, 0, 100, 100, 0]
    assert state.read(PRE_SCORE_STATE_KEY).clone() is state.read(PRE_SCORE_STATE_KEY)


def _reference(snap: Snapshot, pl: PodTopologySpread, incoming: PodInfo,
               filtered: list[int], require_all: bool) -> list[int]:
    """Upstream's PreScore and Score, walking every pod of every node (raw scores)."""
    info = pl._spread(incoming)
    constraints = pl.constraints(incoming.pod, info, "ScheduleAnyway")
    assert not isinstance(constraints, str)

    def has_all(labels: dict[str, str]) -> bool:
        return all(c.topology_key in labels for c in constraints)

    def count(ni: Any, c: Any) -> int:
        return sum(1 for p in ni.pods.values() if c.selector.requirements
                   and p.namespace == incoming.namespace and c.selector.matches(p.labels))

    ignored = {i for i in filtered if require_all and not has_all(snap.node_infos[i].labels)}
    domains: list[dict[str, int]] = [{} for _ in constraints]
    for i in filtered:
        if i in ignored:
            continue
        for j, c in enumerate(constraints):
            if c.topology_key != HOSTNAME:
                domains[j].setdefault(snap.node_infos[i].labels.get(c.topology_key, ""), 0)
    weights = [math.log((len(filtered) - len(ignored) if c.topology_key == HOSTNAME
                         else len(domains[j])) + 2) for j, c in enumerate(constraints)]
    for ni in snap.node_infos:
        if require_all and not has_all(ni.labels):
            continue
        for j, c in enumerate(constraints):
            value = ni.labels.get(c.topology_key, "")
            if info.inclusion(incoming.pod).includes(c, ni) and value in domains[j]:
                domains[j][value] += count(ni, c)
    out = []
    for i in filtered:
        ni = snap.node_infos[i]
        if i in ignored:
            out.append(0)
            continue
        total = 0.0
        for j, c in enumerate(constraints):
            if c.topology_key in ni.labels:
                cnt = count(ni, c) if c.topology_key == HOSTNAME else domains[j][
                    ni.labels[c.topology_key]]
                total += cnt * weights[j] + (c.max_skew - 1)
        whole = math.floor(total)
        out.append(whole + 1 if total - whole >= 0.5 else whole)
    return out


@pytest.mark.parametrize("seed", range(12))
def test_score_nodes_agrees_with_score_and_a_walk_over_all_pods(seed: int) -> None:
    rng = random.Random(seed)
    nodes, pods = random_cluster(rng, 40, 120, lambda name, n: pod(
        name, {"app": rng.choice("abc")}, node_name=n, namespace=rng.choice(["default", "o"])))
    snap = snapshot_of(nodes, pods)
    system = rng.random() < 0.5
    services = FakeInformers({"services": [{"metadata": {"name": "s", "namespace": "default"},
                                            "spec": {"selector": {"app": "a"}}}]})
    args = PodTopologySpreadArgs() if system else PodTopologySpreadArgs(
        defaulting_type="List", default_constraints=[TopologySpreadConstraint(
            max_skew=2, topology_key=REGION, when_unsatisfiable="ScheduleAnyway")])
    pl = PodTopologySpread(args, new_handle(snapshot=snap, informer_factory=services))
    for k in range(8):
        own = [soft(rng.choice([ZONE, REGION, HOSTNAME]), rng.randrange(1, 4),
                    {"app": rng.choice("ab")},
                    nodeAffinityPolicy=rng.choice(["Honor", "Ignore"]))
               for _ in range(rng.randrange(0, 3))]
        extra: dict[str, Any] = {"nodeSelector": {REGION: "r1"}} if rng.random() < 0.3 else {}
        incoming = PodInfo(pod(f"in{k}", {"app": "a"}, spread=own, **extra))
        filtered = sorted(rng.sample(range(len(snap)), rng.randrange(5, 40)))
        idx = np.array(filtered)
        state = CycleState()
        status = pl.pre_score(state, incoming, [snap.node_infos[i] for i in filtered])
        assert status is None  # the Service selects app=a when there are no own constraints
        vector, _ = pl.score_nodes(state, incoming, snap, idx)
        scalar_state = CycleState()
        pl.pre_score(scalar_state, incoming, [snap.node_infos[i] for i in filtered])
        scalar = [pl.score(scalar_state, incoming, snap.node_infos[i])[0] for i in filtered]
        require_all = bool(own) or not system
        assert vector.tolist() == scalar == _reference(snap, pl, incoming, filtered,
                                                        require_all)
