"""ScaleDownBinPack from the in-tree registry with DefaultEvictor, after upstream's
``scale_down_binpack_test.go``, ``ranker_test.go`` and ``executor_test.go``: the global rank
(cheapest node to empty first, then largest and newest pods), deletion costs for ranked and
skipped targets, EvictDirectly's limit, dry run, and the args' defaults and validation."""

from __future__ import annotations

import math
from typing import Any

import pytest

from descheduler.apis.config.args import ScaleDownBinPackArgs
from descheduler.framework.plugins.balance_testing import BalanceRun, balance_run
from descheduler.framework.plugins.scaledownbinpack.ranker import NodePods, rank_pods
from descheduler.framework.testing import DS, node, pod

COST = "controller.kubernetes.io/pod-deletion-cost"
WEB = {"app": "web"}


def cap_node(name: str, cpu: int = 4000, memory: int = 4000) -> dict[str, Any]:
    """A node whose capacity (what the ranker divides by) is its allocatable."""
    n = node(name, cpu, memory, pods=20)
    n["status"]["capacity"] = dict(n["status"]["allocatable"])
    return n


def web(name: str, cpu: int, node_name: str, **extra: Any) -> dict[str, Any]:
    return pod(name, cpu, 0, node_name, labels=WEB, **extra)


def cluster() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """n1 holds targets only (score 0); n2 also non-target load and a DaemonSet web pod
    (skipped: the evictor refuses it); n3 holds no target."""
    nodes = [cap_node("n1"), cap_node("n2"), cap_node("n3")]
    pods = [web("w2", 500, "n1"), web("w1", 1000, "n1"), web("w3", 1000, "n2"),
            pod("db", 2000, 0, "n2", labels={"app": "db"}), web("ds", 100, "n2", owners=DS),
            pod("other", 100, 0, "n3", labels={"app": "db"})]
    return nodes, pods


def env(dry_run: bool = False, **extra: Any) -> BalanceRun:
    nodes, pods = cluster()
    args = ScaleDownBinPackArgs.model_validate(
        {"podSelectors": [{"name": "web", "selector": {"matchLabels": WEB}}]} | extra)
    return balance_run("ScaleDownBinPack", args, nodes, pods, dry_run=dry_run)


def test_calculate_only_writes_the_ranks_as_deletion_costs() -> None:
    run = env()
    assert run.run() == []
    assert [(key, patch["metadata"]["annotations"][COST])
            for _, key, patch in run.kube.patches] == [
        ("default/w1", "0"), ("default/w2", "1"), ("default/w3", "2"),
        ("default/ds", "2147483647")]


def test_evict_directly_evicts_the_first_ranked_pods() -> None:
    run = env(strategy="EvictDirectly", maxPodsToEvict=2)
    assert run.run() == ["w1", "w2"]
    assert run.kube.patches == []


@pytest.mark.parametrize("extra", [{}, {"strategy": "EvictDirectly", "maxPodsToEvict": 2}])
def test_dry_run_patches_and_evicts_nothing(extra: dict[str, Any]) -> None:
    run = env(dry_run=True, **extra)
    assert run.run() == []
    assert run.kube.patches == []


def test_paused_and_unselected_nodes_do_nothing() -> None:
    for run in (env(paused=True), env(nodeSelector={"matchLabels": {"pool": "x"}})):
        assert run.run() == []
        assert run.kube.patches == []


def test_a_failed_patch_is_reported_and_the_others_still_written() -> None:
    run = env()
    run.kube.refuse.add("w2")
    status = run.framework.run_balance_plugins(list(run.framework.nodes.list()))
    assert status.errors == ["ScaleDownBinPack: failed to patch 1 pods"]
    assert [key for _, key, _ in run.kube.patches] == ["default/w1", "default/w3",
                                                       "default/ds"]


def test_rank_order() -> None:
    a, b, c, d = (cap_node(n) for n in ("a", "b", "c", "d"))
    # Equal size: the newer pod first. Equal scores: fewer eligible pods, then the name.
    older = web("older", 500, "b", created="2024-01-01T00:00:00Z")
    newer = web("newer", 500, "b", created="2024-02-01T00:00:00Z")
    free = pod("free", 0, 0, "d")
    free["spec"]["containers"][0]["resources"] = {}
    nodes = [NodePods(b, eligible=[older, newer]), NodePods(a, eligible=[web("x", 100, "a")]),
             NodePods(c, eligible=[web("y", 100, "c")]),
             # Only non-target requests: it frees nothing, so it comes last.
             NodePods(d, eligible=[free], non_target=[pod("db", 100, 0, "d")])]
    ranked = rank_pods(nodes, {"cpu": 1.0, "memory": 1.0})
    assert [(r.pod["metadata"]["name"], r.rank) for r in ranked] == [
        ("x", 0), ("y", 1), ("newer", 2), ("older", 3), ("free", 4)]
    assert ranked[-1].evacuation_score == math.inf


def test_defaults() -> None:
    a = ScaleDownBinPackArgs()
    assert (a.strategy, a.resources, a.resource_weights, a.max_pods_to_evict) == (
        "CalculateOnly", ["cpu", "memory"], {"cpu": 1.0, "memory": 1.0}, None)


@pytest.mark.parametrize("data, error", [
    ({"strategy": "Unknown"}, "strategy: strategy must be CalculateOnly or EvictDirectly"),
    ({"strategy": "EvictDirectly"},
     "maxPodsToEvict: maxPodsToEvict must be positive when strategy is EvictDirectly"),
    ({"resourceWeights": {"cpu": 0}}, "resourceWeights.cpu: weights must be positive finite"),
    ({"evictableNamespaces": {"include": ["a"], "exclude": ["b"]}},
     "evictableNamespaces: only one of Include/Exclude namespaces can be set"),
])
def test_args_validation(data: dict[str, Any], error: str) -> None:
    errors = [str(e) for e in ScaleDownBinPackArgs.model_validate(data).validate_args()]
    assert any(e.startswith(error) for e in errors), errors
