"""PodTopologySpread PreFilter/Filter: upstream-style tables, the vectorised Filter against the
scalar one and a walk over every pod, the PreFilterExtensions, and placement over cycles."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from scheduler.apis.config import PodTopologySpreadArgs
from scheduler.framework.cache import Cache
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.plugins.interpodaffinity.testing import (
    HOSTNAME,
    REGION,
    ZONE,
    node,
    pod,
    random_cluster,
    snapshot_of,
)
from scheduler.framework.plugins.podtopologyspread import PodTopologySpread
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, is_success
from scheduler.framework.types import PodInfo
from scheduler.frameworkext.testing import new_handle

NOT_MATCH = "node(s) didn't match pod topology spread constraints"
MISSING_LABEL = "node(s) didn't match pod topology spread constraints (missing required label)"


def spread(key: str = ZONE, max_skew: int = 1, labels: dict[str, str] | None = None,
           when: str = "DoNotSchedule", **extra: Any) -> dict[str, Any]:
    return {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": labels if labels is not None else {"foo": ""}},
            **extra}


FOO = {"foo": ""}


def plugin(snap: Snapshot) -> PodTopologySpread:
    return PodTopologySpread(PodTopologySpreadArgs(), new_handle(snapshot=snap))


def run(snap: Snapshot, incoming: dict[str, Any]
        ) -> tuple[PodTopologySpread, CycleState, PodInfo, Any]:
    pl = plugin(snap)
    state, pi = CycleState(), PodInfo(incoming)
    _, status = pl.pre_filter(state, pi, snap)
    return pl, state, pi, status


def passing(snap: Snapshot, incoming: dict[str, Any]) -> list[str]:
    pl, state, pi, status = run(snap, incoming)
    assert status is None, status
    return [ni.name for ni in snap.node_infos if is_success(pl.filter(state, pi, ni))]


FOUR = [node("a", {ZONE: "z1"}), node("b", {ZONE: "z1"}), node("x", {ZONE: "z2"}),
        node("y", {ZONE: "z2"})]


def foo_pods(*node_names: str, labels: dict[str, str] | None = None,
             **kw: Any) -> list[dict[str, Any]]:
    return [pod(f"p{i}-{n}", labels or FOO, node_name=n, **kw)
            for i, n in enumerate(node_names)]


def test_pod_without_hard_constraints_skips() -> None:
    snap = snapshot_of(FOUR)
    for incoming in (pod("p", FOO), pod("p", FOO, spread=[spread(when="ScheduleAnyway")])):
        _, _, _, status = run(snap, incoming)
        assert status is not None and status.code == Code.SKIP


def test_no_existing_pods_all_nodes_fit() -> None:
    assert passing(snapshot_of(FOUR), pod("p", FOO, spread=[spread()])) == ["a", "b", "x", "y"]


def test_zones_three_to_one_only_the_emptier_zone_fits() -> None:
    snap = snapshot_of(FOUR, foo_pods("a", "a", "b", "x"))
    assert passing(snap, pod("p", FOO, spread=[spread()])) == ["x", "y"]
    # maxSkew 3 tolerates it: 3 + 1 - 1 = 3.
    assert passing(snap, pod("p", FOO, spread=[spread(max_skew=3)])) == ["a", "b", "x", "y"]


def test_a_pod_not_matching_its_selector_does_not_count_itself() -> None:
    snap = snapshot_of(FOUR, foo_pods("a", "x", "x"))
    # z1: 1, z2: 2; the pod lacks "foo": skew = count - 1.
    assert passing(snap, pod("p", {"bar": ""}, spread=[spread()])) == ["a", "b", "x", "y"]
    assert passing(snap, pod("p", FOO, spread=[spread()])) == ["a", "b"]


def test_node_without_the_topology_label_is_unresolvable() -> None:
    snap = snapshot_of(FOUR + [node("n", {})])
    pl, state, pi, _ = run(snap, pod("p", FOO, spread=[spread()]))
    status = pl.filter(state, pi, snap["n"])
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == (MISSING_LABEL,)
    status = pl.filter(state, pi, snap["a"])
    assert status is None


def test_skew_too_high_is_unschedulable() -> None:
    snap = snapshot_of(FOUR, foo_pods("a", "b"))
    pl, state, pi, _ = run(snap, pod("p", FOO, spread=[spread()]))
    status = pl.filter(state, pi, snap["a"])
    assert status is not None and status.code == Code.UNSCHEDULABLE
    assert status.reasons == (NOT_MATCH,)
    assert pl.explain(state, pi, snap["a"]) == (
        f"{ZONE}=z1: 2 matching pod(s) + 1 - global minimum 0 = skew 3 > maxSkew 1")


def test_min_domains() -> None:
    snap = snapshot_of(FOUR, foo_pods("a", "x"))
    # Two eligible domains: with minDomains 3 the global minimum is 0, so 1 + 1 - 0 > 1.
    assert passing(snap, pod("p", FOO, spread=[spread(minDomains=3)])) == []
    assert passing(snap, pod("p", FOO, spread=[spread(minDomains=2)])) == ["a", "b", "x", "y"]


def test_two_constraints_must_both_hold() -> None:
    snap = snapshot_of(FOUR, foo_pods("a", "x"))
    incoming = pod("p", FOO, spread=[spread(), spread(HOSTNAME)])
    # Zones are 1/1; per host a and x have one pod, b and y none.
    assert passing(snap, incoming) == ["b", "y"]


NODE_SELECTED = [node("a", {ZONE: "z1", "pool": "x"}), node("b", {ZONE: "z2", "pool": "x"}),
                 node("c", {ZONE: "z3", "pool": "y"})]


def test_node_affinity_policy() -> None:
    snap = snapshot_of(NODE_SELECTED, foo_pods("a", "b"))
    honor = pod("p", FOO, spread=[spread()], nodeSelector={"pool": "x"})
    # Honor (default): z3 is not eligible, so the minimum is 1 and z1, z2 fit.
    assert passing(snap, honor) == ["a", "b", "c"]
    ignore = pod("p", FOO, spread=[spread(nodeAffinityPolicy="Ignore")],
                 nodeSelector={"pool": "x"})
    assert passing(snap, ignore) == ["c"]


def test_node_taints_policy() -> None:
    taint = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    nodes = [node("a", {ZONE: "z1"}), node("b", {ZONE: "z2"}), node("c", {ZONE: "z3"}, taint)]
    snap = snapshot_of(nodes, foo_pods("a", "b"))
    # Ignore (default): the tainted empty zone holds the minimum at 0.
    assert passing(snap, pod("p", FOO, spread=[spread()])) == ["c"]
    honor = [spread(nodeTaintsPolicy="Honor")]
    assert passing(snap, pod("p", FOO, spread=honor)) == ["a", "b", "c"]
    tolerating = pod("p", FOO, spread=honor,
                     tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule"}])
    assert passing(snap, tolerating) == ["c"]


def test_other_namespaces_and_terminating_pods_do_not_count() -> None:
    terminating = pod("t", FOO, node_name="a")
    terminating["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    snap = snapshot_of(FOUR, foo_pods("a", "a", namespace="other") + [terminating])
    assert passing(snap, pod("p", FOO, spread=[spread()])) == ["a", "b", "x", "y"]


def test_match_label_keys_narrow_the_selector_to_the_pods_revision() -> None:
    old = foo_pods("a", "a", labels={"foo": "", "rev": "1"})
    snap = snapshot_of(FOUR, old)
    incoming = pod("p", {"foo": "", "rev": "2"}, spread=[spread(matchLabelKeys=["rev"])])
    assert passing(snap, incoming) == ["a", "b", "x", "y"]
    same_rev = pod("p", {"foo": "", "rev": "1"}, spread=[spread(matchLabelKeys=["rev"])])
    assert passing(snap, same_rev) == ["x", "y"]


def test_empty_selector_counts_no_pods() -> None:
    snap = snapshot_of(FOUR, foo_pods("a", "a", "a"))
    assert passing(snap, pod("p", FOO, spread=[spread(labels={})])) == ["a", "b", "x", "y"]


def test_invalid_selector_is_an_error() -> None:
    bad = spread()
    bad["labelSelector"] = {"matchExpressions": [{"key": "foo", "operator": "Bogus"}]}
    _, _, _, status = run(snapshot_of(FOUR), pod("p", FOO, spread=[bad]))
    assert status is not None and status.code == Code.ERROR
    assert status.message().startswith(
        "get constraints from pod: obtaining pod's hard topology spread constraints: ")


# PreFilterExtensions ---------------------------------------------------------------------------


def test_add_and_remove_pod_update_the_counts() -> None:
    snap = snapshot_of(FOUR, foo_pods("a", "x"))
    pl, state, pi, _ = run(snap, pod("p", FOO, spread=[spread()]))
    assert pl.filter_nodes(state, pi, snap) is None
    clone = state.clone()
    pl.add_pod(clone, pi, PodInfo(pod("n", FOO, node_name="b")), snap["b"])
    assert [ni.name for ni in snap.node_infos
            if is_success(pl.filter(clone, pi, ni))] == ["x", "y"]
    mask = pl.filter_nodes(clone, pi, snap)
    assert mask is not None and mask.tolist() == [False, False, True, True]
    # The original state is untouched.
    assert pl.filter_nodes(state, pi, snap) is None
    # Removing the pods of z2 makes z1 the fuller zone.
    pl.remove_pod(state, pi, snap["x"].pods["default/p1-x"], snap["x"])
    mask = pl.filter_nodes(state, pi, snap)
    assert mask is not None and mask.tolist() == [False, False, True, True]


def test_add_pod_ignores_other_namespaces_and_unselected_pods() -> None:
    snap = snapshot_of(FOUR)
    pl, state, pi, _ = run(snap, pod("p", FOO, spread=[spread()]))
    pl.add_pod(state, pi, PodInfo(pod("o", FOO, node_name="a", namespace="o")), snap["a"])
    pl.add_pod(state, pi, PodInfo(pod("u", {"bar": ""}, node_name="a")), snap["a"])
    assert pl.filter_nodes(state, pi, snap) is None


# Vectorised Filter and placement ---------------------------------------------------------------


def _reference(snap: Snapshot, pl: PodTopologySpread, incoming: PodInfo) -> list[bool]:
    """Upstream's calPreFilterState and Filter, walking every pod of every node."""
    spread_info = pl._spread(incoming)
    constraints = spread_info.own["DoNotSchedule"]
    assert not isinstance(constraints, str)
    counts: list[dict[str, int]] = [{} for _ in constraints]
    for ni in snap.node_infos:
        labels = ni.labels
        if not all(c.topology_key in labels for c in constraints):
            continue
        for i, c in enumerate(constraints):
            if not spread_info.inclusion(incoming.pod).includes(c, ni):
                continue
            n = sum(1 for p in ni.pods.values()
                    if c.selector.requirements and p.namespace == incoming.namespace
                    and c.selector.matches(p.labels))
            value = labels[c.topology_key]
            counts[i][value] = counts[i].get(value, 0) + n
    out = []
    for ni in snap.node_infos:
        ok = True
        for i, c in enumerate(constraints):
            node_value = ni.labels.get(c.topology_key)
            if node_value is None:
                ok = False
                break
            least = 0 if len(counts[i]) < c.min_domains else min(counts[i].values())
            self_match = 1 if c.selector.matches(incoming.labels) else 0
            if counts[i].get(node_value, 0) + self_match - least > c.max_skew:
                ok = False
                break
        out.append(ok)
    return out


def _random_constraint(rng: random.Random) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if rng.random() < 0.3:
        extra["minDomains"] = rng.randrange(1, 5)
    if rng.random() < 0.3:
        extra["nodeAffinityPolicy"] = rng.choice(["Honor", "Ignore"])
    if rng.random() < 0.3:
        extra["nodeTaintsPolicy"] = rng.choice(["Honor", "Ignore"])
    return spread(rng.choice([ZONE, REGION, HOSTNAME]), rng.randrange(1, 4),
                  {"app": rng.choice("ab")}, **extra)


@pytest.mark.parametrize("seed", range(12))
def test_filter_nodes_agrees_with_filter_and_a_walk_over_all_pods(seed: int) -> None:
    rng = random.Random(seed)
    nodes, pods = random_cluster(rng, 40, 120, lambda name, n: pod(
        name, {"app": rng.choice("abc")}, node_name=n, namespace=rng.choice(["default", "o"])))
    for n in nodes:
        if rng.random() < 0.2:
            n["spec"]["taints"] = [{"key": "t", "effect": "NoSchedule"}]
    snap = snapshot_of(nodes, pods)
    pl = plugin(snap)
    for k in range(8):
        extra: dict[str, Any] = {}
        if rng.random() < 0.4:
            extra["nodeSelector"] = {REGION: "r0"}
        if rng.random() < 0.4:
            extra["tolerations"] = [{"key": "t", "operator": "Exists"}]
        incoming = PodInfo(pod(f"in{k}", {"app": rng.choice("ab")}, spread=[
            _random_constraint(rng) for _ in range(rng.randrange(1, 3))], **extra))
        state = CycleState()
        _, status = pl.pre_filter(state, incoming, snap)
        assert status is None
        scalar = [is_success(pl.filter(state, incoming, ni)) for ni in snap.node_infos]
        mask = pl.filter_nodes(state, incoming, snap)
        vector = [True] * len(scalar) if mask is None else mask.tolist()
        assert scalar == vector == _reference(snap, pl, incoming)


def test_placing_pods_one_by_one_keeps_zones_within_max_skew() -> None:
    cache = Cache()
    zones = ["z1", "z2", "z3"]
    for i in range(9):
        cache.add_node(node(f"n{i}", {ZONE: zones[i % 3]}))
    # An uneven start: z1 already has 4 pods.
    for j in range(4):
        cache.add_pod(pod(f"old{j}", {"app": "web"}, node_name="n0"))
    snap = Snapshot()
    pl = PodTopologySpread(PodTopologySpreadArgs(), new_handle(snapshot=snap))
    constraint = [spread(ZONE, 1, {"app": "web"})]
    for j in range(20):
        cache.update_snapshot(snap)
        incoming = PodInfo(pod(f"new{j}", {"app": "web"}, spread=constraint))
        state = CycleState()
        assert pl.pre_filter(state, incoming, snap)[1] is None
        mask = pl.filter_nodes(state, incoming, snap)
        # The counts kept across cycles give what a fresh plugin computes.
        fresh = PodTopologySpread(PodTopologySpreadArgs(), new_handle(snapshot=snap))
        fresh_state = CycleState()
        fresh.pre_filter(fresh_state, incoming, snap)
        fresh_mask = fresh.filter_nodes(fresh_state, incoming, snap)
        assert (None if mask is None else mask.tolist()) == (
            None if fresh_mask is None else fresh_mask.tolist())
        chosen = 0 if mask is None else int(np.flatnonzero(mask)[0])
        cache.assume_pod(incoming.with_node(snap.node_infos[chosen].name))
    cache.update_snapshot(snap)
    per_zone = {z: 0 for z in zones}
    for ni in snap.node_infos:
        per_zone[ni.labels[ZONE]] += len(ni.pods)
    assert per_zone == {"z1": 8, "z2": 8, "z3": 8}
