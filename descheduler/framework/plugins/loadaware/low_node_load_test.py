"""LowNodeLoad over a framework with DefaultEvictor as filter and evict plugin, mirroring
upstream's ``low_node_load_test.go`` cases (4 cpu / 3000 memory nodes, 400m pods, n3
unschedulable) and the behaviour of §9: gates, anomaly detection, dry run, pools, reasons."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from descheduler.apis.config.args import LowNodeLoadArgs
from descheduler.apis.config.types import DeschedulerProfile
from descheduler.framework.limiter import EvictionLimiter
from descheduler.framework.plugins.defaultevictor import DefaultEvictor
from descheduler.framework.plugins.loadaware import LowNodeLoad
from descheduler.framework.runtime import Framework
from descheduler.framework.testing import (
    DS,
    NOW,
    FakeClient,
    listers,
    metrics,
    node,
    pod,
    unevictable,
)
from pkg.util.clock import FakeClock


class Env:
    def __init__(self, nodes: list[dict[str, Any]], pods: list[dict[str, Any]],
                 args: dict[str, Any], usage: dict[str, dict[str, str]] | None = None,
                 dry_run: bool = False, update_time: float = NOW) -> None:
        args = {"anomalyCondition": {"consecutiveAbnormalities": 1}} | args
        self.clock = FakeClock(NOW)
        self.client = FakeClient()
        self.nodes = nodes
        profile = DeschedulerProfile.model_validate({
            "name": "p", "plugins": {"balance": {"enabled": [{"name": "LowNodeLoad"}]},
                                     "evict": {"enabled": [{"name": "DefaultEvictor"}]},
                                     "filter": {"enabled": [{"name": "DefaultEvictor"}]}},
            "pluginConfig": [{"name": "LowNodeLoad",
                              "args": LowNodeLoadArgs.model_validate(args)}]})
        registry = {"DefaultEvictor": DefaultEvictor.new,
                    "LowNodeLoad": lambda a, h: LowNodeLoad(a, h, self.clock)}
        self.framework = Framework(
            profile, registry, listers(nodes, pods, metrics(nodes, pods, usage, update_time)),
            self.client, EvictionLimiter(), dry_run=dry_run)

    def run(self) -> list[str]:
        """One pass; the names of the pods evicted in it."""
        before = len(self.client.evicted())
        assert self.framework.run_balance_plugins(self.nodes).ok
        return [key.split("/")[1] for key in self.client.evicted()[before:]]


def upstream_pods(**extra: Any) -> list[dict[str, Any]]:
    """Upstream's "without priorities" pods: p1–p5 evictable and p6–p8 not on n1 (8 pods of
    400m: cpu 80%, pods 8/9), p9 on n2 (cpu 10%, pods 1/10)."""
    return ([pod(f"p{i}", 400, 0, "n1", **extra) for i in range(1, 6)] + unevictable("n1")
            + [pod("p9", 400, 0, "n2")])


THRESHOLDS = {"lowThresholds": {"cpu": 30, "pods": 30}, "highThresholds": {"cpu": 50, "pods": 50}}


def three_nodes() -> list[dict[str, Any]]:
    return [node("n1"), node("n2", pods=10), node("n3", pods=10, unschedulable=True)]


def ns_pod(name: str, namespace: str) -> dict[str, Any]:
    return pod(name, 400, 0, "n1", namespace=namespace)


@pytest.mark.parametrize("name, pods, args, evicted", [
    ("no evictable pods",
     [pod(f"p{i}", 400, 0, "n1", DS) for i in range(1, 5)] + unevictable("n1")
     + [pod("p9", 400, 0, "n2")], {}, 0),
    ("without priorities",
     [pod(f"p{i}", 400, 0, "n1") for i in range(1, 6)] + unevictable("n1")
     + [pod("p9", 400, 0, "n2")], {}, 4),
    ("without priorities, but excluding namespaces",
     [ns_pod(f"p{i}", "namespace1") for i in range(1, 6)] + unevictable("n1")
     + [pod("p9", 400, 0, "n2")], {"evictableNamespaces": {"exclude": ["namespace1"]}}, 0),
    ("without priorities, but include only default namespace",
     [pod("p1", 400, 0, "n1"), pod("p2", 400, 0, "n1")]
     + [ns_pod(f"p{i}", f"namespace{i}") for i in range(3, 6)] + unevictable("n1")
     + [pod("p9", 400, 0, "n2")], {"evictableNamespaces": {"include": ["default"]}}, 2),
    ("without priorities stop when cpu capacity is depleted",
     [pod(f"p{i}", 400, 300, "n1") for i in range(1, 6)]
     + unevictable("n1", 300) + [pod("p9", 400, 2100, "n2")], {}, 3),
])
def test_low_node_load(name: str, pods: list[dict[str, Any]], args: dict[str, Any],
                       evicted: int) -> None:
    env = Env(three_nodes(), pods, THRESHOLDS | args)
    assert len(env.run()) == evicted, name


def test_without_node_fit_every_filtered_pod_is_a_candidate() -> None:
    # Target room (cpu 1600m, 4 pods) still stops the loop after four pods.
    env = Env(three_nodes(), upstream_pods(), THRESHOLDS | {"nodeFit": False})
    assert len(env.run()) == 4


def test_node_fit_refuses_pods_no_target_can_take() -> None:
    pods = upstream_pods(nodeSelector={"zone": "b"})
    assert Env(three_nodes(), pods, THRESHOLDS).run() == []


def test_pods_are_evicted_lowest_priority_class_first() -> None:
    pods = [pod("prod", 400, 0, "n1", labels={"koordinator.sh/priority-class": "koord-prod"}),
            pod("batch", 400, 0, "n1", labels={"koordinator.sh/priority-class": "koord-batch"}),
            pod("mid", 400, 0, "n1", labels={"koordinator.sh/priority-class": "koord-mid"}),
            pod("free", 400, 0, "n1", labels={"koordinator.sh/priority-class": "koord-free"}),
            pod("p5", 400, 0, "n1", DS), *unevictable("n1"), pod("p9", 400, 0, "n2")]
    # Target room: cpu 2000m - 400m = 4 pods; all four candidates move, in order.
    assert Env(three_nodes(), pods, THRESHOLDS).run() == ["free", "batch", "mid", "prod"]


def test_the_loop_stops_once_the_source_is_no_longer_overutilized() -> None:
    # n1: 7 pods of 400m = 2800m > 2000m (50%); two evictions bring it to 2000m.
    nodes = [node("n1", pods=100), node("n2", pods=100)]
    pods = [pod(f"p{i}", 400, 0, "n1") for i in range(1, 8)] + [pod("p9", 400, 0, "n2")]
    env = Env(nodes, pods, {"lowThresholds": {"cpu": 30}, "highThresholds": {"cpu": 50}})
    assert len(env.run()) == 2


def test_an_expired_node_metric_leaves_the_node_out() -> None:
    pods = upstream_pods()
    assert Env(three_nodes(), pods, THRESHOLDS, update_time=NOW - 180).run() == []
    assert len(Env(three_nodes(), pods, THRESHOLDS, update_time=NOW - 179).run()) == 4


@pytest.mark.parametrize("number_of_nodes, evicted", [(0, 4), (1, 0)])
def test_number_of_nodes(number_of_nodes: int, evicted: int) -> None:
    pods = upstream_pods()
    env = Env(three_nodes(), pods, THRESHOLDS | {"numberOfNodes": number_of_nodes})
    assert len(env.run()) == evicted


def test_paused_does_nothing() -> None:
    pods = upstream_pods()
    assert Env(three_nodes(), pods, THRESHOLDS | {"paused": True}).run() == []


def test_pod_selectors_pick_the_candidates() -> None:
    pods = [pod(f"p{i}", 400, 0, "n1", labels={"app": "a" if i < 3 else "b"})
            for i in range(1, 6)] + unevictable("n1") + [pod("p9", 400, 0, "n2")]
    args = THRESHOLDS | {"podSelectors": [{"name": "a", "selector": {"matchLabels": {"app": "a"}}}]}
    assert sorted(Env(three_nodes(), pods, args).run()) == ["p1", "p2"]


def test_a_node_must_stay_abnormal_for_more_than_n_passes() -> None:
    pods = upstream_pods()
    env = Env(three_nodes(), pods, THRESHOLDS | {"anomalyCondition": {
        "consecutiveAbnormalities": 2, "consecutiveNormalities": 1}})
    # Evictions here go through a fake client, so n1 stays overutilized across passes.
    assert env.run() == [] and env.run() == []
    assert len(env.run()) == 4


def test_dry_run_evicts_nothing_and_logs_why(caplog: pytest.LogCaptureFixture) -> None:
    pods = upstream_pods()
    env = Env(three_nodes(), pods, THRESHOLDS | {"dryRun": True})
    with caplog.at_level(logging.INFO):
        assert env.run() == []
    lines = [r.getMessage() for r in caplog.records if "dry run" in r.getMessage()]
    # Still accounted as moved: the target room (4 pods) ends the loop.
    assert len(lines) == 4
    assert lines[0] == (
        "Evict pod in dry run mode: pod default/p1, node n1, nodePool __default_node_pool__, "
        "node is overutilized, node cpu usage(80.00%)>threshold(50.00%), "
        "node pods usage(88.89%)>threshold(50.00%), pod usage {'cpu': 400}; "
        # Why this victim (koordinator#1975): its place in upstream's order and the key.
        "victim 1/4: priorityClass koord-prod, priority 0, QoS Burstable/LS, "
        "usage {'cpu': 400} matches excess {'cpu': 1200, 'pods': 4} with score 0.333")


def test_eviction_reason_names_each_resource_over_its_high_threshold(
        caplog: pytest.LogCaptureFixture) -> None:
    pods = [pod(f"p{i}", 400, 0, "n1") for i in range(1, 9)] + [pod("p9", 400, 0, "n2")]
    env = Env(three_nodes(), pods, THRESHOLDS)
    with caplog.at_level(logging.INFO):
        env.run()
    first = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("Evicted"))
    assert ("node is overutilized, node cpu usage(80.00%)>threshold(50.00%), "
            "node pods usage(88.89%)>threshold(50.00%); victim 1/") in first


def test_framework_dry_run_evicts_nothing() -> None:
    pods = upstream_pods()
    assert Env(three_nodes(), pods, THRESHOLDS, dry_run=True).run() == []


def test_deviation_thresholds() -> None:
    # Average cpu usage: (80% + 10%) / 2 = 45%; high = 45 + 10 = 55% → n1 (80%) is a source;
    # low = 45 - 10 = 35% → n2 (10%) is a target.
    nodes = [node("n1", pods=100), node("n2", pods=100)]
    pods = [pod(f"p{i}", 400, 0, "n1") for i in range(1, 9)] + [pod("p9", 400, 0, "n2")]
    env = Env(nodes, pods, {"useDeviationThresholds": True, "lowThresholds": {"cpu": 10},
                            "highThresholds": {"cpu": 10}})
    # n1 must come down to 2200m (55%): its excess 1000m takes three pods of 400m.
    assert len(env.run()) == 3


def test_pools_skip_nodes_an_earlier_pool_balanced() -> None:
    nodes = [node("n1", pool="a"), node("n2", pods=10, pool="a"),
             node("n3", pods=10, pool="b")]
    pods = [pod(f"p{i}", 400, 0, "n1") for i in range(1, 9)] + [pod("p9", 400, 0, "n2")]
    env = Env(nodes, pods, {"nodeSelector": {"matchLabels": {"pool": "a"}}, **THRESHOLDS,
                            "nodePools": [{"name": "all", "nodeSelector": {}}]})
    # The default pool moves four pods off n1; the second pool (every node) skips n1.
    assert len(env.run()) == 4


def test_a_malformed_node_metric_leaves_only_its_node_out() -> None:
    # n2, the only target, reports a usage no quantity parses: nothing can move.
    env = Env(three_nodes(), upstream_pods(), THRESHOLDS, usage={"default/p9": {"cpu": "x"}})
    assert env.run() == []


def test_prod_pass_moves_prod_pods_off_a_prod_high_node(
        caplog: pytest.LogCaptureFixture) -> None:
    # n1 is not over its node threshold (80%) but its prod pods use 80% > prodHigh 40%; n2 is
    # bothLow. Room for prod on n2: 40% of 4000m - 400m = 1200m, three pods of 400m.
    args = {"lowThresholds": {"cpu": 30}, "highThresholds": {"cpu": 80},
            "prodLowThresholds": {"cpu": 10}, "prodHighThresholds": {"cpu": 40}}
    env = Env(three_nodes(), upstream_pods(), args)
    with caplog.at_level(logging.INFO):
        assert env.run() == ["p1", "p2", "p3"]
    assert any(r.getMessage().endswith(
        "node is overutilized, prod cpu usage(80.00%)>threshold(40.00%)")
        for r in caplog.records)
