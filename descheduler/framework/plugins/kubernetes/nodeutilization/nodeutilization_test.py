"""HighNodeUtilization and LowNodeUtilization (from the in-tree registry) over a framework with
DefaultEvictor as filter and evict plugin, mirroring sigs.k8s.io/descheduler's
``highnodeutilization_test.go`` and ``lownodeutilization_test.go`` tables (nodes of 4000m cpu /
3000 memory, 400m pods, n3 unschedulable) and the args' validation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from descheduler.apis.config.args import HighNodeUtilizationArgs, LowNodeUtilizationArgs
from descheduler.framework.plugins.balance_testing import balance_run
from descheduler.framework.testing import DS, node, pod, unevictable
from scheduler.apis.config.base import PluginArgs

EXT = "example.com/foo"
CRITICAL: dict[str, Any] = {"namespace": "kube-system", "priority": 2_000_000_000}


def run(plugin: str, args: PluginArgs, nodes: list[dict[str, Any]],
        pods: list[dict[str, Any]]) -> list[str]:
    """One balance pass; the names of the pods evicted, in order."""
    return balance_run(plugin, args, nodes, pods).run()


def with_ext(obj: dict[str, Any], count: int) -> dict[str, Any]:
    """A node with ``count`` of the extended resource, or a pod requesting it."""
    if "containers" in obj["spec"]:
        obj["spec"]["containers"][0]["resources"]["requests"][EXT] = str(count)
    else:
        obj["status"]["allocatable"][EXT] = str(count)
    return obj


def best_effort(p: dict[str, Any]) -> dict[str, Any]:
    p["spec"]["containers"][0]["resources"] = {}
    return p


# --- HighNodeUtilization ---------------------------------------------------------------------

def high(thresholds: Mapping[str, float], **extra: Any) -> HighNodeUtilizationArgs:
    return HighNodeUtilizationArgs.model_validate({"thresholds": thresholds} | extra)


CPU_PODS_20 = {"cpu": 20, "pods": 20}
CPU_PODS_30 = {"cpu": 30, "pods": 30}


@pytest.mark.parametrize("name, args, nodes, pods, evicted", [
    ("no node below threshold usage", high(CPU_PODS_20),
     [node("n1", pods=10), node("n2", pods=10), node("n3", pods=10)],
     [pod(f"p{i}", 400, 0, f"n{(i - 1) // 3 + 1}") for i in range(1, 10)], []),
    ("no evictable pods", high({"cpu": 40, "pods": 40}),
     [node("n1"), node("n2", pods=10), node("n3", pods=10)],
     [*unevictable("n1")[1:], pod("p3", 400, 0, "n2", DS), pod("p4", 400, 0, "n2", DS),
      *[pod(f"p{i}", 400, 0, "n3") for i in range(5, 9)]], []),
    ("no node to schedule evicted pods", high(CPU_PODS_20),
     [node("n1", pods=10), node("n2", pods=10), node("n3", pods=10, unschedulable=True)],
     [pod("p1", 400, 0, "n1"), pod("p2", 400, 0, "n2"),
      *[pod(f"p{i}", 400, 0, "n3") for i in range(3, 6)]], []),
    ("without priorities", high(CPU_PODS_30),
     [node("n1", pods=10), node("n2", pods=10), node("n3", pods=10, unschedulable=True)],
     [pod("p1", 400, 0, "n1"), pod("p2", 400, 0, "n1", **CRITICAL),
      *[pod(f"p{i}", 400, 0, "n2") for i in range(3, 7)], pod("p7", 400, 0, "n3")],
     ["p7", "p1"]),
    ("without priorities stop when resource capacity is depleted", high(CPU_PODS_30),
     [node("n1", 2000, pods=10), node("n2", 2000, pods=10),
      node("n3", 2000, pods=10, unschedulable=True)],
     [pod("p1", 400, 0, "n1"), *[pod(f"p{i}", 400, 0, "n2") for i in range(2, 6)],
      pod("p6", 400, 0, "n3", created="2024-01-02T00:00:00Z")], ["p1"]),
    ("with priorities", high({"cpu": 30}),
     [node("n1", pods=10), node("n2", 2000, pods=10),
      node("n3", 2000, pods=10, unschedulable=True)],
     [pod("p1", 400, 0, "n1", priority=1), pod("p2", 400, 0, "n1", priority=1000),
      *[pod(f"p{i}", 400, 0, "n2") for i in range(5, 9)], pod("p9", 400, 0, "n3", DS)],
     ["p1"]),
    ("without priorities evicting best-effort pods only", high({"cpu": 30}),
     [node("n1", 3000, pods=10), node("n2", 3000, pods=5),
      node("n3", 3000, pods=10, unschedulable=True)],
     [best_effort(pod("p1", 0, 0, "n1")), pod("p2", 400, 0, "n1"),
      *[pod(f"p{i}", 400, 0, "n2") for i in range(3, 7)]], ["p1"]),
    ("with extended resource", high({"cpu": 20, EXT: 40}),
     [with_ext(node("n1", pods=10), 8), with_ext(node("n2", pods=10), 8),
      node("n3", pods=10, unschedulable=True)],
     [with_ext(pod("p1", 100, 0, "n1"), 1), with_ext(pod("p2", 100, 0, "n1"), 1),
      *[with_ext(pod(f"p{i}", 500, 0, "n2"), 1) for i in range(3, 7)]], ["p1", "p2"]),
    ("with extended resource in some of nodes", high({"cpu": 40, EXT: 40}),
     [with_ext(node("n1", pods=10), 8), node("n2", pods=10),
      node("n3", pods=10, unschedulable=True)],
     [with_ext(pod("p1", 100, 0, "n1"), 1), with_ext(pod("p2", 100, 0, "n1"), 1),
      *[pod(f"p{i}", 500, 0, "n2") for i in range(3, 7)]], []),
    ("only thresholding resources: pods without the extended resource stay",
     high({EXT: 40}, evictionModes=["OnlyThresholdingResources"]),
     [with_ext(node("n1", pods=10), 10), with_ext(node("n2", pods=10), 10)],
     [pod("p1", 100, 0, "n1"), with_ext(pod("p2", 100, 0, "n1"), 1),
      *[with_ext(pod(f"p{i}", 100, 0, "n2"), 1) for i in range(3, 8)]], ["p2"]),
    ("excluded namespaces are not evicted",
     high(CPU_PODS_30, evictableNamespaces={"exclude": ["ns1"]}),
     [node("n1", pods=10), node("n2", pods=10)],
     [pod("p1", 400, 0, "n1", namespace="ns1"),
      *[pod(f"p{i}", 400, 0, "n2") for i in range(2, 6)]], []),
    ("numberOfNodes not exceeded", high(CPU_PODS_30, numberOfNodes=1),
     [node("n1", pods=10), node("n2", pods=10)],
     [pod("p1", 400, 0, "n1"), *[pod(f"p{i}", 400, 0, "n2") for i in range(2, 6)]], []),
    ("a pod that tolerates no destination's taints stays", high(CPU_PODS_30),
     [node("n1", pods=10), node("n2", pods=10)],
     [pod("p1", 400, 0, "n1"), *[pod(f"p{i}", 400, 0, "n2") for i in range(2, 6)]], "taint"),
])
def test_high_node_utilization(name: str, args: HighNodeUtilizationArgs,
                               nodes: list[dict[str, Any]], pods: list[dict[str, Any]],
                               evicted: list[str] | str) -> None:
    if evicted == "taint":
        nodes[1]["spec"]["taints"] = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
        assert run("HighNodeUtilization", args, nodes, pods) == [], name
        pods[0]["spec"]["tolerations"] = [{"key": "k", "operator": "Exists"}]
        assert run("HighNodeUtilization", args, nodes, pods) == ["p1"], name
        return
    assert run("HighNodeUtilization", args, nodes, pods) == evicted, name


# --- LowNodeUtilization ----------------------------------------------------------------------

def low(**extra: Any) -> LowNodeUtilizationArgs:
    return LowNodeUtilizationArgs.model_validate(
        {"thresholds": CPU_PODS_30, "targetThresholds": {"cpu": 50, "pods": 50}} | extra)


def three_nodes() -> list[dict[str, Any]]:
    return [node("n1"), node("n2", pods=10), node("n3", pods=10, unschedulable=True)]


def upstream_pods(**extra: Any) -> list[dict[str, Any]]:
    """p1–p5 evictable and p6–p8 not on n1 (cpu 80%, pods 8/9), p9 on n2 (10%, 1/10)."""
    return ([pod(f"p{i}", 400, 0, "n1", **extra) for i in range(1, 6)] + unevictable("n1")
            + [pod("p9", 400, 0, "n2")])


@pytest.mark.parametrize("name, args, pods, evicted", [
    ("no evictable pods", low(),
     [pod(f"p{i}", 400, 0, "n1", DS) for i in range(1, 5)] + unevictable("n1")
     + [pod("p9", 400, 0, "n2")], []),
    ("without priorities", low(), upstream_pods(), ["p1", "p2", "p3", "p4"]),
    ("without priorities, but excluding namespaces",
     low(evictableNamespaces={"exclude": ["namespace1"]}),
     upstream_pods(namespace="namespace1"), []),
    ("with priorities", low(),
     [pod(f"p{i}", 400, 0, "n1", priority=1000) for i in range(1, 5)]
     + [pod("p5", 400, 0, "n1", priority=1)] + unevictable("n1") + [pod("p9", 400, 0, "n2")],
     ["p5", "p1", "p2", "p3"]),
    ("without priorities evicting best-effort pods first", low(),
     [pod(f"p{i}", 400, 0, "n1") for i in range(1, 4)]
     + [best_effort(pod(f"p{i}", 400, 0, "n1")) for i in range(4, 6)] + unevictable("n1")
     + [pod("p9", 400, 0, "n2")], ["p4", "p5", "p1", "p2"]),
    ("with deviation thresholds the mean decides",
     low(useDeviationThresholds=True, thresholds={"cpu": 10, "pods": 10},
         targetThresholds={"cpu": 10, "pods": 10}), upstream_pods(), ["p1", "p2", "p3"]),
    ("numberOfNodes not exceeded", low(numberOfNodes=1), upstream_pods(), []),
    ("evictionLimits.node caps the evictions per node", low(evictionLimits={"node": 2}),
     upstream_pods(), ["p1", "p2"]),
])
def test_low_node_utilization(name: str, args: LowNodeUtilizationArgs,
                              pods: list[dict[str, Any]], evicted: list[str]) -> None:
    assert run("LowNodeUtilization", args, three_nodes(), pods) == evicted, name


def test_low_node_utilization_stops_once_the_source_is_within_target() -> None:
    # n1: 7 × 400m = 2800m of 4000m; the target (50%) is reached after two evictions.
    nodes = [node("n1", pods=100), node("n2", pods=100)]
    pods = [pod(f"p{i}", 400, 0, "n1") for i in range(1, 8)] + [pod("p9", 400, 0, "n2")]
    args = low(thresholds={"cpu": 30}, targetThresholds={"cpu": 50})
    assert run("LowNodeUtilization", args, nodes, pods) == ["p1", "p2"]


def test_low_node_utilization_does_nothing_when_all_nodes_are_underutilized() -> None:
    nodes = [node("n1", pods=10), node("n2", pods=10)]
    pods = [pod("p1", 400, 0, "n1"), pod("p2", 400, 0, "n2")]
    assert run("LowNodeUtilization", low(), nodes, pods) == []


# --- args ------------------------------------------------------------------------------------

@pytest.mark.parametrize("model, data, error", [
    (HighNodeUtilizationArgs, {}, "thresholds: no resource threshold is configured"),
    (HighNodeUtilizationArgs, {"thresholds": {"cpu": 120}},
     "thresholds.cpu: cpu threshold not in [0, 100] range"),
    (HighNodeUtilizationArgs, {"thresholds": {"cpu": 20},
                               "evictableNamespaces": {"include": ["a"]}},
     "evictableNamespaces: only Exclude namespaces can be set, inclusion is not supported"),
    (HighNodeUtilizationArgs, {"thresholds": {"cpu": 20}, "evictionModes": ["Foo"]},
     "evictionModes[0]: invalid eviction mode Foo"),
    (LowNodeUtilizationArgs, {"thresholds": {"cpu": 20}},
     "targetThresholds: no resource threshold is configured"),
    (LowNodeUtilizationArgs, {"thresholds": {"cpu": 20}, "targetThresholds": {"memory": 50}},
     "targetThresholds: thresholds and targetThresholds configured different resources"),
    (LowNodeUtilizationArgs, {"thresholds": {"cpu": 60}, "targetThresholds": {"cpu": 50}},
     "thresholds.cpu: thresholds' cpu percentage is greater than targetThresholds'"),
    (LowNodeUtilizationArgs, {"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50},
                              "metricsUtilization": {"metricsServer": True}},
     "metricsUtilization: not supported"),
])
def test_args_validation(model: type[PluginArgs], data: dict[str, Any], error: str) -> None:
    errors = [str(e) for e in model.model_validate(data).validate_args()]
    assert any(e.startswith(error) for e in errors), errors


def test_deviation_thresholds_may_exceed_the_targets() -> None:
    args = LowNodeUtilizationArgs.model_validate({
        "useDeviationThresholds": True, "thresholds": {"cpu": 60},
        "targetThresholds": {"cpu": 50}})
    assert args.validate_args() == []
