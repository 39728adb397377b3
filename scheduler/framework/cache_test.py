"""Tests of the scheduler cache (``scheduler/framework/cache.py``): assumed pods and their
confirmation, forgetting and expiry; pods that arrive before their node; node removal; and the
incremental snapshot checked against a from-scratch one after random operations."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from pkg.util.clock import FakeClock
from scheduler.framework.cache import Cache, CacheError
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.types import PodInfo


def make_node(name: str, cpu: str = "4", memory: str = "8Gi",
              labels: dict[str, str] | None = None,
              extra: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110",
                                       **(extra or {})}}}


def make_pod(name: str, node: str = "", cpu: str = "1", *, affinity: bool = False,
             host_port: int = 0, extra: dict[str, str] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c",
                                 "resources": {"requests": {"cpu": cpu, **(extra or {})}}}
    if host_port:
        container["ports"] = [{"containerPort": 80, "hostPort": host_port}]
    spec: dict[str, Any] = {"nodeName": node, "containers": [container]}
    if affinity:
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname",
             "labelSelector": {"matchLabels": {"app": "x"}}}]}}
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": spec}


def cpu_requested(cache: Cache, node: str) -> int:
    ni = cache.node_info(node)
    assert ni is not None
    return ni.requested_of("cpu")


def assumed(name: str, node: str, cpu: str = "1") -> PodInfo:
    return PodInfo(make_pod(name, cpu=cpu)).with_node(node)


# Assume, confirm, forget, expire -----------------------------------------------------------------


def test_an_assumed_pod_counts_on_its_node_until_forgotten() -> None:
    cache = Cache()
    cache.add_node(make_node("n1"))
    pi = assumed("p", "n1")
    cache.assume_pod(pi)
    assert cache.is_assumed("default/p")
    assert cpu_requested(cache, "n1") == 1000
    cache.forget_pod(pi)
    assert not cache.is_assumed("default/p")
    assert cpu_requested(cache, "n1") == 0
    assert cache.pod_count() == 0


def test_a_pod_cannot_be_assumed_twice() -> None:
    cache = Cache()
    cache.add_node(make_node("n1"))
    cache.assume_pod(assumed("p", "n1"))
    with pytest.raises(CacheError, match="default/p"):
        cache.assume_pod(assumed("p", "n1"))


def test_forgetting_on_another_node_is_an_error() -> None:
    cache = Cache()
    cache.add_node(make_node("n1"))
    cache.assume_pod(assumed("p", "n1"))
    with pytest.raises(CacheError, match="assumed on n1 but forgotten on n2"):
        cache.forget_pod(assumed("p", "n2"))
    assert cpu_requested(cache, "n1") == 1000


def test_the_informers_bound_pod_confirms_the_assumed_one() -> None:
    clock = FakeClock()
    cache = Cache(clock=clock, ttl=30)
    cache.add_node(make_node("n1"))
    pi = assumed("p", "n1")
    cache.assume_pod(pi)
    cache.finish_binding(pi)
    cache.add_pod(make_pod("p", "n1"))
    assert not cache.is_assumed("default/p")
    assert cpu_requested(cache, "n1") == 1000  # counted once
    clock.step(60)
    assert cache.cleanup_assumed_pods() == []
    cache.forget_pod(pi)  # a confirmed pod is not forgotten
    assert cpu_requested(cache, "n1") == 1000


def test_a_confirmation_on_another_node_moves_the_pod() -> None:
    cache = Cache()
    cache.add_node(make_node("n1"))
    cache.add_node(make_node("n2"))
    cache.assume_pod(assumed("p", "n1"))
    cache.add_pod(make_pod("p", "n2"))
    assert (cpu_requested(cache, "n1"), cpu_requested(cache, "n2")) == (0, 1000)


def test_an_assumed_pod_expires_ttl_after_its_binding_finished() -> None:
    clock = FakeClock()
    cache = Cache(clock=clock, ttl=30)
    cache.add_node(make_node("n1"))
    pi = assumed("p", "n1")
    cache.assume_pod(pi)
    clock.step(100)
    assert cache.cleanup_assumed_pods() == []  # binding not finished: never expires
    cache.finish_binding(pi)
    clock.step(29)
    assert cache.cleanup_assumed_pods() == []
    clock.step(1)
    assert cache.cleanup_assumed_pods() == ["default/p"]
    assert cpu_requested(cache, "n1") == 0
    assert not cache.is_assumed("default/p")


def test_with_ttl_zero_assumed_pods_never_expire() -> None:
    clock = FakeClock()
    cache = Cache(clock=clock)
    cache.add_node(make_node("n1"))
    pi = assumed("p", "n1")
    cache.assume_pod(pi)
    cache.finish_binding(pi)
    clock.step(10**6)
    assert cache.cleanup_assumed_pods() == []
    assert cache.is_assumed("default/p")


# Pods before nodes, node removal --------------------------------------------------------------


def snapshot(cache: Cache, snap: Snapshot | None = None) -> Snapshot:
    snap = snap if snap is not None else Snapshot()
    cache.update_snapshot(snap)
    return snap


def test_a_pod_arriving_before_its_node_is_counted_once_the_node_arrives() -> None:
    cache = Cache()
    cache.add_node(make_node("n0"))
    snap = snapshot(cache)
    cache.add_pod(make_pod("early", "n1", cpu="3"))
    assert cache.node_count() == 1
    snapshot(cache, snap)
    assert [ni.name for ni in snap.node_infos] == ["n0"]  # no node object yet
    cache.add_node(make_node("n1"))
    snapshot(cache, snap)
    ni = snap.get("n1")
    assert ni is not None and list(ni.pods) == ["default/early"]
    assert snap.requested_of("cpu")[snap.index["n1"]] == 3000


def test_a_removed_node_leaves_the_snapshot_but_its_pods_stay_counted() -> None:
    cache = Cache()
    for n in ("n1", "n2"):
        cache.add_node(make_node(n))
    cache.add_pod(make_pod("a", "n1"))
    snap = snapshot(cache)
    cache.remove_node(make_node("n1"))
    snapshot(cache, snap)
    assert [ni.name for ni in snap.node_infos] == ["n2"]
    assert cache.node_count() == 1
    assert cache.pod_count() == 1
    # The node comes back before its pod was deleted: the pod is still there.
    cache.add_node(make_node("n1"))
    snapshot(cache, snap)
    assert list(snap.get("n1").pods) == ["default/a"]  # type: ignore[union-attr]


def test_a_removed_node_is_dropped_once_its_last_pod_is_deleted() -> None:
    cache = Cache()
    cache.add_node(make_node("n1"))
    cache.add_pod(make_pod("a", "n1"))
    cache.remove_node(make_node("n1"))
    cache.remove_pod(make_pod("a", "n1"))
    assert cache.node_info("n1") is None
    cache.add_node(make_node("n1"))
    assert cpu_requested(cache, "n1") == 0


# The incremental snapshot ------------------------------------------------------------------------


def test_a_node_change_clears_the_snapshot_memo_and_a_pod_change_does_not() -> None:
    cache = Cache()
    cache.add_node(make_node("n1"))
    snap = snapshot(cache)
    snap.memo["mask"] = "cached"
    cache.add_pod(make_pod("a", "n1"))
    snapshot(cache, snap)
    assert snap.memo == {"mask": "cached"}
    cache.update_node(None, make_node("n1", labels={"zone": "b"}))
    snapshot(cache, snap)
    assert snap.memo == {}
    assert snap.get("n1").labels == {"zone": "b"}  # type: ignore[union-attr]


def test_the_affinity_lists_see_a_relabelled_node() -> None:
    # InterPodAffinity counts existing pods' anti-affinity by their node's labels.
    cache = Cache()
    cache.add_node(make_node("n1", labels={"zone": "a"}))
    cache.add_pod(make_pod("a", "n1", affinity=True))
    snap = snapshot(cache)
    cache.update_node(None, make_node("n1", labels={"zone": "b"}))
    snapshot(cache, snap)
    assert [ni.labels for ni in snap.have_pods_with_required_anti_affinity] == [{"zone": "b"}]
    assert [ni.labels for ni in snap.have_pods_with_affinity] == [{"zone": "b"}]


def describe(snap: Snapshot) -> dict[str, Any]:
    """Everything a plugin may read from a snapshot, keyed by node name."""
    # Rows of resources no node has any more may stay (as zeros): read a fixed list.
    resources = ("cpu", "memory", "ephemeral-storage", "pods", "example.com/gpu")
    nodes = {}
    for i, ni in enumerate(snap.node_infos):
        assert snap.index[ni.name] == i
        assert snap.names[i] == ni.name
        nodes[ni.name] = {
            "node": ni.node, "pods": sorted(ni.pods), "requested": ni.requested,
            "allocatable": ni.allocatable, "ports": ni.used_ports,
            "non_zero": (ni.non_zero_cpu, ni.non_zero_memory),
            "with_affinity": sorted(ni.pods_with_affinity),
            "with_anti_affinity": sorted(ni.pods_with_required_anti_affinity),
            "columns": ({r: int(snap.allocatable_of(r)[i]) for r in resources},
                        {r: int(snap.requested_of(r)[i]) for r in resources},
                        (int(snap.non_zero[0, i]), int(snap.non_zero[1, i]))),
        }
    # The affinity lists must hold the snapshot's current NodeInfos (fresh labels and pods).
    for lst in (snap.have_pods_with_affinity, snap.have_pods_with_required_anti_affinity):
        for ni in lst:
            assert snap.node_infos[snap.index[ni.name]] is ni, f"stale NodeInfo {ni.name}"
    return {"nodes": nodes,
            "with_affinity": sorted(ni.name for ni in snap.have_pods_with_affinity),
            "with_anti_affinity": sorted(
                ni.name for ni in snap.have_pods_with_required_anti_affinity)}


Op = Callable[[Cache], None]


def random_op(rng: random.Random, state: dict[str, Any]) -> Op:
    """One random cache operation; ``state`` tracks what exists so operations make sense."""
    nodes: set[str] = state["nodes"]
    pods: dict[str, str] = state["pods"]  # name → node of bound pods
    assumed_pods: dict[str, str] = state["assumed"]
    n = f"n{rng.randrange(8)}"
    kind = rng.choice(["add_node", "update_node", "remove_node", "add_pod", "add_pod",
                       "remove_pod", "assume", "forget", "confirm"])
    if kind in ("add_node", "update_node"):
        nodes.add(n)
        node = make_node(n, cpu=str(rng.randrange(1, 16)),
                         labels={"zone": rng.choice("ab")},
                         extra={"example.com/gpu": "2"} if rng.random() < 0.3 else None)
        return lambda c: c.update_node(None, node) if kind == "update_node" else c.add_node(node)
    if kind == "remove_node" and nodes:
        name = rng.choice(sorted(nodes))
        nodes.discard(name)
        return lambda c: c.remove_node(make_node(name))
    if kind == "add_pod":
        name = f"p{state['next']}"
        state["next"] += 1
        pods[name] = n
        pod = make_pod(name, n, cpu=f"{rng.randrange(0, 2000, 100)}m",
                       affinity=rng.random() < 0.3,
                       host_port=rng.choice([0, 0, 8080]),
                       extra={"example.com/gpu": "1"} if rng.random() < 0.2 else None)
        return lambda c: c.add_pod(pod)
    if kind == "remove_pod" and pods:
        name = rng.choice(sorted(pods))
        node_name = pods.pop(name)
        return lambda c: c.remove_pod(make_pod(name, node_name))
    if kind == "assume":
        name = f"p{state['next']}"
        state["next"] += 1
        assumed_pods[name] = n
        pi_pod = make_pod(name, cpu=f"{rng.randrange(0, 2000, 100)}m",
                          affinity=rng.random() < 0.3)
        return lambda c: c.assume_pod(PodInfo(pi_pod).with_node(n))
    if kind == "forget" and assumed_pods:
        name = rng.choice(sorted(assumed_pods))
        node_name = assumed_pods.pop(name)
        return lambda c: c.forget_pod(PodInfo(make_pod(name)).with_node(node_name))
    if kind == "confirm" and assumed_pods:
        name = rng.choice(sorted(assumed_pods))
        node_name = pods[name] = assumed_pods.pop(name)
        return lambda c: c.add_pod(make_pod(name, node_name))
    return lambda c: None


@pytest.mark.parametrize("seed", range(12))
def test_the_incremental_snapshot_matches_a_rebuilt_one(seed: int) -> None:
    rng = random.Random(seed)
    state: dict[str, Any] = {"nodes": set(), "pods": {}, "assumed": {}, "next": 0}
    cache = Cache()
    snap = Snapshot()
    log: list[Op] = []
    for _ in range(40):
        for _ in range(rng.randrange(1, 5)):
            op = random_op(rng, state)
            log.append(op)
            op(cache)
        cache.update_snapshot(snap)
        fresh_cache = Cache()
        for op in log:
            op(fresh_cache)
        assert describe(snap) == describe(snapshot(fresh_cache))
