"""LowNodeLoad's arithmetic: thresholds, node classes, target room, scores, pod order, node
fit (mirroring upstream's ``utilization_util_test.go`` and ``sorter_test.go`` cases)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from descheduler.apis.config.args import LowNodeLoadNodePool
from descheduler.framework.plugins.loadaware.low_node_load import (
    eviction_reason,
    normalize_thresholds,
)
from descheduler.framework.plugins.loadaware.utilization import (
    NodeInfo,
    NodeThresholds,
    NodeUsage,
    available,
    classify,
    node_thresholds,
    pod_usage_score,
    raw_allocatable,
    sort_nodes_by_usage,
    sort_pods,
    threshold_quantity,
    usage_score,
)
from descheduler.framework.plugins.nodeutil import node_fit
from descheduler.framework.types import Obj

GI = 1024**3
ALLOC = {"cpu": 32000, "memory": 32 * GI, "pods": 110}


def usage(name: str, used: dict[str, int], *, prod: dict[str, int] | None = None,
          alloc: dict[str, int] = ALLOC, unschedulable: bool = False,
          metrics: dict[str, dict[str, int]] | None = None) -> NodeUsage:
    node = {"metadata": {"name": name}, "spec": {"unschedulable": unschedulable}}
    return NodeUsage(node, name, dict(alloc), [], [], dict(used),
                     dict(prod or dict.fromkeys(used, 0)), metrics or {})


def test_sort_nodes_by_usage() -> None:
    n1 = NodeInfo(usage("node1", {"cpu": 1730, "memory": 3038982964, "pods": 25}),
                  NodeThresholds({}, {}, {}, {}))
    n2 = NodeInfo(usage("node2", {"cpu": 1220, "memory": 3038982964, "pods": 11}), n1.thresholds)
    n3 = NodeInfo(usage("node3", {"cpu": 1530, "memory": 5038982964, "pods": 20}), n1.thresholds)
    weights = {"cpu": 1, "memory": 1, "pods": 1}
    nodes = [n1, n2, n3]
    sort_nodes_by_usage(nodes, weights, prod=False)
    assert [n.name for n in nodes] == ["node3", "node1", "node2"]
    sort_nodes_by_usage(nodes, weights, prod=False, ascending=True)
    assert [n.name for n in nodes] == ["node2", "node1", "node3"]


def test_usage_score_truncates_per_resource_and_ignores_unweighted() -> None:
    # cpu 1730/32000 → 54‰, memory 3038982964/32Gi → 88‰; pods has no weight.
    assert usage_score({"cpu": 1730, "memory": 3038982964, "pods": 25}, ALLOC,
                       {"cpu": 1, "memory": 1}) == (54 + 88) // 2
    assert usage_score({"cpu": 1}, ALLOC, {}) == 0


@pytest.mark.parametrize("percent, alloc, expected", [
    (30, 4000, 1200), (50, 9, 4), (100, 3000, 3000), (0, 3000, 0),
    # float64 arithmetic as upstream: 33.3 * 0.01 * 1000 = 332.99999999999994.
    (33.3, 1000, 332),
])
def test_threshold_quantity_truncates(percent: float, alloc: int, expected: int) -> None:
    assert threshold_quantity({"r": alloc}, "r", percent) == expected


def test_missing_low_threshold_overrides_high_with_100() -> None:
    pool = LowNodeLoadNodePool(low_thresholds={"cpu": 30}, high_thresholds={"cpu": 50,
                                                                             "pods": 60})
    names = normalize_thresholds(pool)
    assert names == ["cpu", "pods", "memory"]
    # Quirk: pods was given only as a high threshold; it is overwritten to 100.
    assert pool.high_thresholds == {"cpu": 50, "pods": 100, "memory": 100}
    assert pool.prod_low_thresholds == pool.prod_high_thresholds == {
        "cpu": 100, "pods": 100, "memory": 100}


def test_deviation_mode_fills_with_zero() -> None:
    pool = LowNodeLoadNodePool(use_deviation_thresholds=True, low_thresholds={"cpu": 10},
                               high_thresholds={"cpu": 10})
    normalize_thresholds(pool)
    assert pool.low_thresholds == {"cpu": 10, "memory": 0}
    assert pool.prod_low_thresholds == {"cpu": 0, "memory": 0}


def _thresholds(usages: dict[str, NodeUsage], low: dict[str, float], high: dict[str, float],
                prod_low: dict[str, float], prod_high: dict[str, float],
                deviation: bool = False) -> dict[str, NodeThresholds]:
    return node_thresholds(usages, low, high, prod_low, prod_high, list(low), deviation)


def test_classification() -> None:
    alloc = {"cpu": 1000, "memory": 1000}
    usages = {
        "low": usage("low", {"cpu": 100, "memory": 100}, alloc=alloc),
        "bothLow": usage("bothLow", {"cpu": 100, "memory": 100}, prod={"cpu": 10, "memory": 10},
                         alloc=alloc),
        "lowProdHigh": usage("lowProdHigh", {"cpu": 250, "memory": 100},
                             prod={"cpu": 250, "memory": 0}, alloc=alloc),
        "high": usage("high", {"cpu": 900, "memory": 100}, prod={"cpu": 900, "memory": 0},
                      alloc=alloc),
        "prodHigh": usage("prodHigh", {"cpu": 500, "memory": 100},
                          prod={"cpu": 450, "memory": 0}, alloc=alloc),
        "prodLow": usage("prodLow", {"cpu": 500, "memory": 500}, prod={"cpu": 10, "memory": 0},
                         alloc=alloc),
        "fine": usage("fine", {"cpu": 500, "memory": 500}, prod={"cpu": 100, "memory": 0},
                      alloc=alloc),
        "cordoned": usage("cordoned", {"cpu": 100, "memory": 100}, alloc=alloc,
                          unschedulable=True),
    }
    # low 30/high 80; prod low 5 / prod high 20 on cpu, 100 on memory.
    t = _thresholds(usages, {"cpu": 30, "memory": 100}, {"cpu": 80, "memory": 100},
                    {"cpu": 5, "memory": 100}, {"cpu": 20, "memory": 100})
    usages["low"].prod_usage = {"cpu": 100, "memory": 0}
    c = classify(usages, t)
    assert [n.name for n in c.low] == ["low"]
    assert [n.name for n in c.both_low] == ["bothLow"]
    assert [n.name for n in c.high] == ["high"]
    assert sorted(n.name for n in c.prod_high) == ["lowProdHigh", "prodHigh"]
    assert [n.name for n in c.prod_low] == ["prodLow"]


def test_deviation_thresholds_follow_the_pool_average() -> None:
    alloc = {"cpu": 1000}
    usages = {"a": usage("a", {"cpu": 800}, alloc=alloc), "b": usage("b", {"cpu": 200},
                                                                      alloc=alloc)}
    t = _thresholds(usages, {"cpu": 10}, {"cpu": 20}, {"cpu": 0}, {"cpu": 0}, deviation=True)
    # average 50%: low 40%, high 70%; prod low 0 → the whole allocatable.
    assert (t["a"].low, t["a"].high) == ({"cpu": 400}, {"cpu": 700})
    assert (t["a"].prod_low, t["a"].prod_high) == ({"cpu": 1000}, {"cpu": 1000})
    t = _thresholds(usages, {"cpu": 60}, {"cpu": 60}, {"cpu": 0}, {"cpu": 0}, deviation=True)
    assert (t["a"].low, t["a"].high) == ({"cpu": 0}, {"cpu": 1000})  # clamped to 0..100


def test_available_sums_room_under_high_thresholds() -> None:
    t = NodeThresholds({}, {"cpu": 2000, "pods": 5}, {}, {"cpu": 3000, "pods": 9})
    a = NodeInfo(usage("a", {"cpu": 400, "pods": 1}, prod={"cpu": 100, "pods": 1}), t)
    b = NodeInfo(usage("b", {"cpu": 1000, "pods": 2}, prod={"cpu": 1000, "pods": 2}), t)
    assert available([a, b], ["cpu", "pods"], prod=False) == {"cpu": 2600, "pods": 7}
    assert available([a, b], ["cpu", "pods"], prod=True) == {"cpu": 4900, "pods": 15}


def test_raw_allocatable_annotation_wins_when_parsable() -> None:
    node: dict[str, Any] = {"metadata": {"annotations": {
        "node.koordinator.sh/raw-allocatable": json.dumps({"cpu": "2", "memory": "1Gi"})}},
        "status": {"allocatable": {"cpu": "4", "memory": "2Gi"}}}
    assert raw_allocatable(node) == {"cpu": 2000, "memory": GI}
    node["metadata"]["annotations"]["node.koordinator.sh/raw-allocatable"] = "{"
    assert raw_allocatable(node) == {"cpu": 4000, "memory": 2 * GI}


def pod(name: str, *, labels: dict[str, str] | None = None, priority: int | None = None,
        annotations: dict[str, str] | None = None, requests: dict[str, str] | None = None,
        limits: dict[str, str] | None = None, created: str = "2024-01-01T00:00:00Z",
        **spec: Any) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    out: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "default", "labels": labels or {},
                     "annotations": annotations or {}, "creationTimestamp": created},
        "spec": {"containers": [{"name": "c", "resources": resources}], **spec},
        "status": {"phase": "Running"}}
    if priority is not None:
        out["spec"]["priority"] = priority
    return out


BURSTABLE = {"requests": {"cpu": "1"}}


def order(given: Sequence[Obj], metrics: dict[str, dict[str, int]] | None = None,
          used: dict[str, int] | None = None, high: dict[str, int] | None = None) -> list[str]:
    source = NodeInfo(usage("n", used or {"cpu": 3000, "memory": 100},
                            metrics={f"default/{k}": v for k, v in (metrics or {}).items()}),
                      NodeThresholds({}, high or {"cpu": 2000, "memory": 1000}, {}, {}))
    pods = list(given)
    sort_pods(pods, source, {"cpu": 1, "memory": 1}, prod=False)
    return [p["metadata"]["name"] for p in pods]


def test_pod_order_priority_class_then_priority() -> None:
    pods = [pod("prod", priority=9100), pod("mid", priority=7100),
            pod("batch-high", priority=5900), pod("batch-low", priority=5100),
            pod("free", priority=3100),
            # No class by value: a BestEffort pod is batch (from its QoS), priority 100.
            pod("derived-batch", priority=100)]
    assert order(pods) == ["free", "derived-batch", "batch-low", "batch-high", "mid", "prod"]


def test_pod_order_qos() -> None:
    label = "koordinator.sh/qosClass"
    pods = [pod("guaranteed", priority=10, requests={"cpu": "1", "memory": "1"},
                limits={"cpu": "1", "memory": "1"}, labels={label: "LS"}),
            pod("burstable-lsr", priority=10, labels={label: "LSR"}),
            pod("burstable-ls", priority=10, labels={label: "LS"}),
            pod("besteffort", priority=10)]
    for p in pods[1:3]:
        p["spec"]["containers"][0]["resources"] = BURSTABLE
    assert order(pods) == ["besteffort", "burstable-ls", "burstable-lsr", "guaranteed"]


def test_pod_order_costs_then_usage_then_age() -> None:
    pods = [pod("old", created="2024-01-01T00:00:00Z"),
            pod("new", created="2024-06-01T00:00:00Z"),
            pod("expensive", annotations={"controller.kubernetes.io/pod-deletion-cost": "10"}),
            pod("cheap-eviction", annotations={"scheduling.koordinator.sh/eviction-cost": "-5"}),
            pod("bad-cost", annotations={"scheduling.koordinator.sh/eviction-cost": "x"})]
    assert order(pods) == ["cheap-eviction", "new", "old", "bad-cost", "expensive"]
    # With metrics: the pod best matching the 1000m excess first; no metric last.
    pods = [pod("none"), pod("small"), pod("exact"), pod("big")]
    got = order(pods, metrics={"small": {"cpu": 200}, "exact": {"cpu": 1000},
                               "big": {"cpu": 4000}})
    assert got == ["exact", "big", "small", "none"]


def test_pod_usage_score() -> None:
    assert pod_usage_score({"cpu": 500}, {"cpu": 1000}, {"cpu": 1}) == 0.5
    assert pod_usage_score({"cpu": 2000}, {"cpu": 1000}, {"cpu": 1}) == 1.5
    # memory is not over its threshold: weight 0.
    assert pod_usage_score({"cpu": 500, "memory": 9}, {"cpu": 1000}, {"cpu": 1, "memory": 5}) \
        == 0.5
    assert pod_usage_score({"memory": 9}, {"cpu": 1000}, {"cpu": 1}) == 0.0


def test_node_fit() -> None:
    target = {"metadata": {"name": "t", "labels": {"zone": "a"}},
              "spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
              "status": {"allocatable": {"cpu": "2", "memory": "1Gi", "pods": "2"}}}
    on_target: list[Obj] = [pod("x", requests={"cpu": "1500m"}, nodeName="t")]
    tolerate = [{"key": "k", "operator": "Exists"}]

    def fit(p: dict[str, Any]) -> list[str]:
        return node_fit(p, target, lambda name: on_target if name == "t" else [])

    assert fit(pod("ok", requests={"cpu": "500m"}, tolerations=tolerate)) == []
    assert fit(pod("taint", requests={"cpu": "500m"})) == [
        "pod does not tolerate taints on the node: k"]
    assert fit(pod("cpu", requests={"cpu": "600m"}, tolerations=tolerate)) == ["insufficient cpu"]
    assert fit(pod("sel", nodeSelector={"zone": "b"}, tolerations=tolerate)) == [
        "pod node selector does not match the node label"]
    assert fit(pod("ext", requests={"example.com/foo": "1"}, tolerations=tolerate)) == [
        "insufficient example.com/foo"]
    on_target.append(pod("y", nodeName="t"))
    assert fit(pod("pods", tolerations=tolerate)) == ["insufficient pods"]


def test_eviction_reason_is_sorted_by_resource_and_uses_configured_percents() -> None:
    pool = LowNodeLoadNodePool(high_thresholds={"memory": 70, "cpu": 50},
                               prod_high_thresholds={"cpu": 40})
    source = NodeInfo(usage("n", {"cpu": 2500, "memory": 900}, prod={"cpu": 1800},
                            alloc={"cpu": 4000, "memory": 1000}),
                      NodeThresholds({}, {"memory": 700, "cpu": 2000}, {}, {"cpu": 1600}))
    assert eviction_reason(source, pool, prod=False) == (
        "node is overutilized, node cpu usage(62.50%)>threshold(50.00%), "
        "node memory usage(90.00%)>threshold(70.00%)")
    assert eviction_reason(source, pool, prod=True) == (
        "node is overutilized, prod cpu usage(45.00%)>threshold(40.00%)")
