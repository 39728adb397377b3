"""Every plugin arg in upstream's shipped scheduler-config.yaml loads and takes effect.

The file is upstream's ``config/manager/scheduler-config.yaml`` (a ConfigMap whose
``koord-scheduler-config`` key holds the configuration). One test per arg group, each through
the plugin the built scheduler runs, compared with what the plugin does without that arg.
ElasticQuota runs with its ``quotaGroupNamespace``: a pod without quota passes it (the default
quota's max is huge) and a quota's max bounds its pods.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from pkg.util.clock import FakeClock
from pkg.util.testdata import upstream_data_dir
from scheduler.apis.config import (
    KubeSchedulerConfiguration,
    NodeResourcesFitArgs,
    load_scheduler_config,
)
from scheduler.factory import Built, build_scheduler
from scheduler.framework.binder import InMemoryBinder
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.plugins.noderesources import Fit
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Status
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.coscheduling import Coscheduling
from scheduler.plugins.elasticquota import ElasticQuota
from scheduler.plugins.elasticquota.testing import make_quota
from scheduler.plugins.loadaware.load_aware import LoadAwareScheduling
from scheduler.plugins.loadaware.testing import NOW, make_metric, make_node, make_pod

GI = 1024**3
BATCH_CPU = "kubernetes.io/batch-cpu"
BATCH_MEMORY = "kubernetes.io/batch-memory"


def shipped_config() -> KubeSchedulerConfiguration:
    path = upstream_data_dir() / "config" / "manager" / "scheduler-config.yaml"
    configmap = yaml.safe_load(path.read_text())
    return load_scheduler_config(configmap["data"]["koord-scheduler-config"], source=str(path))


@pytest.fixture
def built() -> Iterator[Built]:
    b = build_scheduler(shipped_config(), binder=InMemoryBinder(), clock=FakeClock(NOW))
    yield b
    b.scheduler.stop()


@pytest.fixture
def fwk(built: Built) -> Framework:
    return built.scheduler.profiles["koord-scheduler"]


def load_aware(fwk: Framework) -> LoadAwareScheduling:
    plugin = fwk.plugin("LoadAwareScheduling")
    assert isinstance(plugin, LoadAwareScheduling)
    return plugin


def with_nodes(fwk: Framework, *infos: NodeInfo) -> list[NodeInfo]:
    fwk.snapshot.rebuild(list(infos))
    return fwk.snapshot.node_infos


# NodeResourcesFit: scoringStrategy -----------------------------------------------------------


def fit_scores(plugin: Fit, pod: dict[str, Any], nodes: list[NodeInfo]) -> list[int]:
    pi, state = PodInfo(pod), CycleState()
    plugin.pre_score(state, pi, nodes)
    scores = []
    for ni in nodes:
        score, status = plugin.score(state, pi, ni)
        assert status is None
        scores.append(score)
    return scores


def batch_node(name: str, batch_cpu_used: int) -> NodeInfo:
    node = {"metadata": {"name": name},
            "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110",
                                       BATCH_CPU: "16000", BATCH_MEMORY: str(64 * GI)}}}
    requests = {"cpu": "2", "memory": "8Gi"}  # the same on both nodes
    if batch_cpu_used:
        requests[BATCH_CPU] = str(batch_cpu_used)
    ni = NodeInfo(node)
    ni.add_pod(PodInfo({"metadata": {"name": f"on-{name}", "namespace": "default", "uid": name},
                        "spec": {"nodeName": name, "containers": [
                            {"name": "c", "resources": {"requests": requests}}]}}))
    return ni


def test_fit_scores_least_allocated_over_batch_resources_too(fwk: Framework) -> None:
    plugin = fwk.plugin("NodeResourcesFit")
    assert isinstance(plugin, Fit)
    strategy = plugin.args.scoring_strategy
    assert strategy.type == "LeastAllocated"
    assert [(r.name, r.weight) for r in strategy.resources] == [
        ("cpu", 1), ("memory", 1), (BATCH_CPU, 1), (BATCH_MEMORY, 1)]
    nodes = with_nodes(fwk, batch_node("busy", 12000), batch_node("free", 0))
    batch_pod = {"metadata": {"name": "b", "namespace": "default", "uid": "b"},
                 "spec": {"containers": [{"name": "c", "resources": {"requests": {
                     BATCH_CPU: "2000", BATCH_MEMORY: str(4 * GI)}}}]}}
    busy, free = fit_scores(plugin, batch_pod, nodes)
    assert free > busy
    # The in-tree default (cpu and memory only) cannot tell the nodes apart.
    default = Fit(NodeResourcesFitArgs(), fwk)
    assert len(set(fit_scores(default, batch_pod, nodes))) == 1


# LoadAwareScheduling -------------------------------------------------------------------------


def filter_status(plugin: LoadAwareScheduling, pod: dict[str, Any],
                  ni: NodeInfo) -> Status | None:
    return plugin.filter(CycleState(), PodInfo(pod), ni)


def score(plugin: LoadAwareScheduling, pod: dict[str, Any], ni: NodeInfo) -> int:
    value, status = plugin.score(CycleState(), PodInfo(pod), ni)
    assert status is None
    return value


def other_plugin(fwk: Framework, **args: Any) -> LoadAwareScheduling:
    """The plugin as the shipped file configures it, except for ``args``."""
    return LoadAwareScheduling(load_aware(fwk).args.model_copy(update=args), fwk)


def test_load_aware_keeps_nodes_whose_metric_expired(fwk: Framework) -> None:
    plugin = load_aware(fwk)
    assert plugin.args.filter_expired_node_metrics is False
    (ni,) = with_nodes(fwk, NodeInfo(make_node("n1")))
    stale = make_metric("n1", update_time=NOW - 3600, usage={"cpu": "1", "memory": "1Gi"})
    pod = make_pod("p", requests={"cpu": "1", "memory": "1Gi"})
    plugin.cache.set_node_metric(stale)
    assert filter_status(plugin, pod, ni) is None
    strict = other_plugin(fwk, filter_expired_node_metrics=True,
                          usage_thresholds={"cpu": 65, "memory": 95})
    strict.cache.set_node_metric(stale)
    status = filter_status(strict, pod, ni)
    assert status is not None and status.message() == "node(s) nodeMetric expired"


def test_load_aware_zero_usage_thresholds_filter_nothing(fwk: Framework) -> None:
    plugin = load_aware(fwk)
    assert plugin.args.usage_thresholds == {"cpu": 0, "memory": 0}
    (ni,) = with_nodes(fwk, NodeInfo(make_node("n1", cpu="100", memory="100Gi")))
    hot = make_metric("n1", usage={"cpu": "99", "memory": "99Gi"})
    pod = make_pod("p", requests={"cpu": "1", "memory": "1Gi"})
    plugin.cache.set_node_metric(hot)
    assert filter_status(plugin, pod, ni) is None
    default = other_plugin(fwk, usage_thresholds={"cpu": 65, "memory": 95})
    default.cache.set_node_metric(hot)
    status = filter_status(default, pod, ni)
    assert status is not None and status.message() == "node(s) cpu usage exceed threshold"


@pytest.mark.parametrize(("age", "scored"), [(200, True), (299, True), (300, False),
                                             (400, False)])
def test_load_aware_scores_metrics_younger_than_300_seconds(fwk: Framework, age: int,
                                                            scored: bool) -> None:
    plugin = load_aware(fwk)
    assert plugin.args.node_metric_expiration_seconds == 300
    (ni,) = with_nodes(fwk, NodeInfo(make_node("n1")))
    plugin.cache.set_node_metric(make_metric("n1", update_time=NOW - age,
                                             usage={"cpu": "32", "memory": "10Gi"}))
    value = score(plugin, make_pod("p", requests={"cpu": "16", "memory": "32Gi"}), ni)
    assert value == (72 if scored else 0)


def test_load_aware_estimates_with_the_scaling_factors(fwk: Framework) -> None:
    plugin = load_aware(fwk)
    assert plugin.args.estimated_scaling_factors == {"cpu": 85, "memory": 70}
    resources = {"cpu": "4", "memory": "8Gi"}
    pod = make_pod("p", requests=resources, limits=resources)
    estimate = plugin.estimator.estimate_pod(pod)
    assert (estimate["cpu"], estimate["memory"]) == (3400, 6012954214)


def test_load_aware_score_is_the_mean_of_cpu_and_memory(fwk: Framework) -> None:
    plugin = load_aware(fwk)
    assert plugin.args.resource_weights == {"cpu": 1, "memory": 1}
    (ni,) = with_nodes(fwk, NodeInfo(make_node("n1")))  # 96 cpu, 512Gi
    metric = make_metric("n1", usage={"cpu": "32", "memory": "10Gi"})
    plugin.cache.set_node_metric(metric)
    pod = make_pod("p", requests={"cpu": "16", "memory": "32Gi"})
    # cpu: 32 + 16 × 85% = 45.6 of 96 → 52 free; memory: 10Gi + 32Gi × 70% of 512Gi → 93.
    assert score(plugin, pod, ni) == (52 + 93) // 2
    cpu_only = other_plugin(fwk, resource_weights={"cpu": 1})
    cpu_only.cache.set_node_metric(metric)
    assert score(cpu_only, pod, ni) == 52


# ElasticQuota --------------------------------------------------------------------------------


def test_elastic_quota_runs_and_admits_pods_without_quota(fwk: Framework) -> None:
    plugin = fwk.plugin("ElasticQuota")
    assert isinstance(plugin, ElasticQuota)
    assert plugin.args.quota_group_namespace == "koordinator-system"
    plugin.manager.on_node_add(make_node("n1", cpu="96", memory="512Gi"))
    plain = PodInfo(make_pod("plain", requests={"cpu": "64", "memory": "256Gi"}))
    assert plugin.pre_filter(CycleState(), plain, fwk.snapshot)[1] is None
    plugin.feeder.on_quota_add(make_quota("small", {"cpu": "1"}))
    small = make_pod("small", requests={"cpu": "2", "memory": "1Gi"})
    small["metadata"].setdefault("labels", {})["quota.scheduling.koordinator.sh/name"] = "small"
    status = plugin.pre_filter(CycleState(), PodInfo(small), fwk.snapshot)[1]
    assert status is not None and status.message().startswith(
        "Insufficient quotas, quotaName: small, runtime: cpu:1, used: <empty>, "
        "pod's request: cpu:2, exceedDimensions: [cpu]")


# Coscheduling --------------------------------------------------------------------------------


def test_coscheduling_runs_with_upstreams_defaults_and_holds_an_incomplete_gang(
        built: Built, fwk: Framework) -> None:
    plugin = fwk.plugin("Coscheduling")
    assert isinstance(plugin, Coscheduling)
    assert (plugin.args.default_timeout, plugin.args.default_match_policy) == (600.0,
                                                                               "once-satisfied")
    assert "Coscheduling" not in built.skipped_plugins["koord-scheduler"]
    pod = make_pod("worker-0")
    pod["metadata"]["annotations"] = {"gang.scheduling.koordinator.sh/name": "job",
                                      "gang.scheduling.koordinator.sh/min-available": "2"}
    plugin.cache.on_pod_add(pod)
    ok, gate = fwk.run_pre_enqueue(PodInfo(pod))
    assert (ok, gate) == (False, "Coscheduling")
