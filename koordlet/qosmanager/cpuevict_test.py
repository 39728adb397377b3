"""cpuevict (upstream `pkg/koordlet/qosmanager/plugins/cpuevict/cpu_evict.go`): BECPUEvict's
satisfaction formula and CPUEvict's usage release, and evictions against the embedded API server
(BECPUEvict: lowest priority first, only as much batch-cpu request as needed, cool time;
CPUEvict: opted-in pods in priority order until their CPU usage covers the release; both: a
BECPUEvict victim's usage counts for CPUEvict; CPUAllocatableEvict: opted-in pods by priority and
request until each class's requested CPU is down to the lower percent of the node's allocatable,
mirroring upstream's cpu_evict_test.go cases)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from koordlet.audit import auditor as audit
from koordlet.audit.event_log import ReverseEventIterator
from koordlet.metriccache import metric_types as mt
from koordlet.metriccache.metric_cache import MetricCache, MetricSample
from koordlet.qosmanager.cpuevict import (
    BEUsage,
    CPUEvict,
    release_milli,
    usage_high,
    used_release_milli,
)
from koordlet.qosmanager.framework import Config, Context
from koordlet.qosmanager.testing import (
    ApiStates,
    FakeStates,
    api_client,
    be_slo,
    create_pod,
    create_priority_classes,
    live_pod_names,
    wait_running,
)
from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.util.system.testing import fake_v2_tree
from pkg.client.rest import Client
from pkg.features import koordlet_feature_gate
from pkg.util.clock import FakeClock
from test.apiserver import start

SLO = {
    "cpuEvictBESatisfactionLowerPercent": 30,
    "cpuEvictBESatisfactionUpperPercent": 60,
}
USED_SLO = {"cpuEvictThresholdPercent": 70, "evictEnabledPriorityThreshold": 5999}
ENABLED = {"koordinator.sh/eviction-enabled": "true"}


def test_release_lifts_satisfaction_to_upper_only_below_lower() -> None:
    # limit 2000 of request 8000 = 25 % ≤ 30 %: release 8000 × (0.60 − 0.25)
    assert release_milli(8000, 2000, 30, 60) == 2800
    assert release_milli(8000, 2800, 30, 60) == 0  # 35 % > lower
    assert release_milli(0, 2000, 30, 60) == 0


def test_usage_high_at_threshold_or_under_one_core() -> None:
    assert usage_high(BEUsage(1800, 8000, 2000), 90)
    assert not usage_high(BEUsage(1700, 8000, 2000), 90)
    assert usage_high(BEUsage(0, 8000, 900), 90)  # < 1 core of limit always counts
    assert not usage_high(BEUsage(0, 8000, -1), 90)


def test_used_release_goes_down_to_lower_percent_default_threshold_minus_two() -> None:
    # 6.4 of 8 cores = 80 % against 70: release 8000m × (80 − 68) %
    assert used_release_milli(8000, 6.4, 70, None) == 960
    assert used_release_milli(8000, 6.4, 70, 50) == 2400
    assert used_release_milli(8000, 5.5999, 70, None) == 0  # int(5599.9) × 100 / 8000 = 69 %
    assert used_release_milli(8000, 6.4, 70, 70) is None  # lower must be < threshold


@pytest.fixture
def cluster(
    tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[Client, CPUEvict, Context]]:
    """The BECPUEvict gate and `SLO`, unless parametrized with other `gates` and `slo`; `extra`
    gives the node extended resources."""
    param = getattr(request, "param", {})
    with start() as srv:
        srv.add_nodes(1, cpu="8", memory="16Gi", extra=param.get("extra", {}))
        client = api_client(srv.kubeconfig)
        create_priority_classes(client, {"koord-batch-5000": 5000, "koord-batch-5500": 5500,
                                         "koord-batch-6000": 6000})
        gate = koordlet_feature_gate.copy()
        gate.set(param.get("gates", "BECPUEvict=true"))
        clock = FakeClock(1000.0)
        ctx = Context(
            env=fake_v2_tree(tmp_path, ["kubepods.slice"]),
            executor=ResourceUpdateExecutor(clock),
            metric_cache=MetricCache(),
            states=ApiStates(client, "node-0", be_slo(**param.get("slo", SLO))),
            feature_gate=gate,
            config=Config(),
            clock=clock,
            client=client,
        )
        plugin = CPUEvict(ctx)
        assert plugin.enabled()
        yield client, plugin, ctx
        client.close()


def _feed_used(ctx: Context, node_cores: float, pods: dict[str, float]) -> None:
    now = ctx.clock.now()
    samples = [MetricSample(mt.NODE_CPU_USAGE, {}, now, node_cores)]
    for pod in ctx.states.get_all_pods():
        cores = pods.get(pod["metadata"]["name"])
        if cores is not None:
            samples.append(MetricSample(mt.POD_CPU_USAGE, {mt.POD_UID: pod["metadata"]["uid"]},
                                        now, cores))
    ctx.metric_cache.append(samples)


def _feed(ctx: Context, usage: float, request: float, limit: float) -> None:
    now = ctx.clock.now()
    ctx.metric_cache.append(
        MetricSample(mt.NODE_BE, {mt.BE_RESOURCE: "cpu", mt.BE_ALLOCATION: a}, now, v)
        for a, v in (("usage", usage), ("request", request), ("realLimit", limit))
    )


def test_evicts_lowest_priority_be_until_request_released_with_cool_time(cluster, caplog) -> None:
    client, plugin, ctx = cluster
    for name, pc, req in (("be-a", "koord-batch-5000", "2000"),
                          ("be-b", "koord-batch-5500", "2000"),
                          ("be-c", "koord-batch-6000", "4000")):
        create_pod(client, name, "node-0", "BE", pc, requests={"kubernetes.io/batch-cpu": req})
    wait_running(client, ["be-a", "be-b", "be-c"])

    _feed(ctx, 1900, 8000, 2000)
    plugin.run_once()  # within the cool time that starts with koordlet
    assert live_pod_names(client) == {"be-a", "be-b", "be-c"}

    ctx.clock.step(20)
    _feed(ctx, 1900, 8000, 2000)
    with caplog.at_level(logging.INFO, logger="pkg.evictions.evictions"):
        plugin.run_once()
    # release 2800m: be-a (2000m) + be-b (2000m); be-c stays
    assert live_pod_names(client) == {"be-c"}
    assert any("default/be-a" in r.getMessage() and "BECPUEvict" in r.getMessage()
               for r in caplog.records)

    ctx.clock.step(10)  # still cooling: no eviction though BE is still starved
    _feed(ctx, 1900, 4000, 1000)
    plugin.run_once()
    assert live_pod_names(client) == {"be-c"}


def test_satisfied_or_idle_be_pods_are_left_alone(cluster) -> None:
    client, plugin, ctx = cluster
    create_pod(client, "be-a", "node-0", "BE", "koord-batch-5000",
               requests={"kubernetes.io/batch-cpu": "2000"})
    wait_running(client, ["be-a"])
    ctx.clock.step(20)
    _feed(ctx, 1000, 8000, 2000)  # starved but using only half its limit
    plugin.run_once()
    ctx.clock.step(2)  # past the 1 s window and the last-value window
    _feed(ctx, 3900, 8000, 4000)  # busy but 50 % satisfied
    plugin.run_once()
    assert live_pod_names(client) == {"be-a"}


@pytest.mark.parametrize("cluster", [{"gates": "CPUEvict=true", "slo": USED_SLO}], indirect=True)
def test_cpu_evict_takes_opted_in_pods_in_priority_order_until_usage_released(
    cluster, caplog
) -> None:
    client, plugin, ctx = cluster
    create_pod(client, "opted-low", "node-0", "BE", "koord-batch-5000", ENABLED)
    create_pod(client, "opted-mid-big", "node-0", "BE", "koord-batch-5500", ENABLED)
    create_pod(client, "opted-mid-small", "node-0", "LS", "koord-batch-5500", ENABLED)
    create_pod(client, "opted-no-metric", "node-0", "BE", "koord-batch-5000", ENABLED)
    create_pod(client, "be-not-opted", "node-0", "BE", "koord-batch-5000")
    names = ["opted-low", "opted-mid-big", "opted-mid-small", "opted-no-metric", "be-not-opted"]
    wait_running(client, names)
    usage = {"opted-low": 0.5, "opted-mid-big": 1.0, "opted-mid-small": 0.3,
             "be-not-opted": 3.0}
    ctx.clock.step(20)  # the cool time that starts with koordlet
    _feed_used(ctx, 6.4, usage)
    with caplog.at_level(logging.INFO, logger="pkg.evictions.evictions"):
        plugin.run_once()
    # 80 % against 70 %: release 960m = opted-low (500m) + opted-mid-big (1000m)
    assert live_pod_names(client) == {"opted-mid-small", "opted-no-metric", "be-not-opted"}
    assert any("default/opted-low success" in r.getMessage()
               and "trigger by koordlet feature CPUEvict" in r.getMessage()
               for r in caplog.records)

    ctx.clock.step(20)  # still 80 %: the last opted-in pod with a usage sample goes
    _feed_used(ctx, 6.4, usage)
    plugin.run_once()
    assert live_pod_names(client) == {"opted-no-metric", "be-not-opted"}


@pytest.mark.parametrize(
    "cluster", [{"gates": "BECPUEvict=true,CPUEvict=true", "slo": {**SLO, **USED_SLO}}],
    indirect=True)
def test_be_cpu_evict_victim_usage_counts_for_cpu_evict(cluster) -> None:
    client, plugin, ctx = cluster
    create_pod(client, "be", "node-0", "BE", "koord-batch-6000",
               requests={"kubernetes.io/batch-cpu": "4000"})
    create_pod(client, "opted", "node-0", "LS", "koord-batch-5000", ENABLED)
    wait_running(client, ["be", "opted"])
    ctx.clock.step(20)
    _feed(ctx, 1900, 8000, 2000)  # BECPUEvict: release 2800m batch-cpu request
    _feed_used(ctx, 6.4, {"be": 1.5, "opted": 1.0})  # CPUEvict: release 960m used
    plugin.run_once()
    # be's 4000m request covers BECPUEvict and its 1500m usage covers CPUEvict
    assert live_pod_names(client) == {"opted"}


@pytest.mark.parametrize(
    "cluster", [{"gates": "CPUEvict=true", "slo": {"cpuEvictThresholdPercent": 70}}],
    indirect=True)
def test_cpu_evict_without_priority_threshold_evicts_nothing(cluster, caplog) -> None:
    client, plugin, ctx = cluster
    create_pod(client, "opted", "node-0", "BE", "koord-batch-5000", ENABLED)
    wait_running(client, ["opted"])
    ctx.clock.step(20)
    _feed_used(ctx, 6.4, {"opted": 1.0})
    with caplog.at_level(logging.WARNING, logger="koordlet.qosmanager.cpuevict"):
        plugin.run_once()
    assert live_pod_names(client) == {"opted"}
    assert any("evictEnabledPriorityThreshold" in r.getMessage() for r in caplog.records)


ALLOCATABLE_SLO = {"cpuAllocatableEvictThresholdPercent": 80, "cpuAllocatableEvictLowerPercent": 70,
                   "allocatableEvictPriorityThreshold": 7999}
BATCH_AND_MID = {"kubernetes.io/batch-cpu": "100000", "kubernetes.io/mid-cpu": "100000"}


def _create_allocatable_pods(client: Client) -> None:
    create_priority_classes(client, {"koord-mid-7000": 7000})
    create_pod(client, "batch-pod", "node-0", "BE", "koord-batch-5000", ENABLED,
               requests={"kubernetes.io/batch-cpu": "85000"})
    create_pod(client, "mid-pod", "node-0", "LS", "koord-mid-7000", ENABLED,
               requests={"kubernetes.io/mid-cpu": "85000"})
    wait_running(client, ["batch-pod", "mid-pod"])


@pytest.mark.parametrize("cluster", [{"gates": "CPUAllocatableEvict=true",
                                      "slo": ALLOCATABLE_SLO, "extra": BATCH_AND_MID}],
                         indirect=True)
def test_allocatable_evict_releases_each_class_resource_over_threshold(cluster, caplog) -> None:
    # upstream Test_cpuEvict "only feature: CPUAllocatableEvict": 85 % of batch-cpu and of
    # mid-cpu requested against 80 %: 15000 of each to release, each pod covers its class's
    client, plugin, ctx = cluster
    _create_allocatable_pods(client)
    ctx.clock.step(20)
    _feed_used(ctx, 10.0, {"batch-pod": 4.0, "mid-pod": 3.0})
    with caplog.at_level(logging.INFO, logger="pkg.evictions.evictions"):
        plugin.run_once()
    assert live_pod_names(client) == set()
    assert any("default/mid-pod success" in r.getMessage()
               and "trigger by koordlet feature CPUAllocatableEvict" in r.getMessage()
               for r in caplog.records)


@pytest.mark.parametrize(
    "cluster", [{"gates": "CPUAllocatableEvict=true", "extra": BATCH_AND_MID,
                 "slo": {**ALLOCATABLE_SLO, "allocatableEvictPriorityThreshold": 5999}}],
    indirect=True)
def test_allocatable_evict_ignores_pods_above_the_priority_threshold(cluster) -> None:
    # upstream "mixed priority, lower AllocatableEvictPriorityThreshold": the mid pod's request
    # is neither summed nor is the pod a candidate
    client, plugin, ctx = cluster
    _create_allocatable_pods(client)
    ctx.clock.step(20)
    _feed_used(ctx, 10.0, {"batch-pod": 4.0, "mid-pod": 3.0})
    plugin.run_once()
    assert live_pod_names(client) == {"mid-pod"}


@pytest.mark.parametrize("cluster", [{"gates": "CPUAllocatableEvict=true",
                                      "slo": ALLOCATABLE_SLO, "extra": BATCH_AND_MID}],
                         indirect=True)
def test_allocatable_evict_takes_the_larger_request_first_and_only_opted_in_pods_with_usage(
    cluster
) -> None:
    client, plugin, ctx = cluster
    for name, req, labels in (("small", "30000", ENABLED), ("large", "40000", ENABLED),
                              ("not-opted", "12000", {}), ("no-metric", "5000", ENABLED)):
        create_pod(client, name, "node-0", "BE", "koord-batch-5000", labels,
                   requests={"kubernetes.io/batch-cpu": req})
    wait_running(client, ["small", "large", "not-opted", "no-metric"])
    ctx.clock.step(20)
    # 87000 of 100000 batch-cpu requested against 80 %: release 17000, the larger request first
    _feed_used(ctx, 10.0, {"small": 1.0, "large": 1.0, "not-opted": 1.0})
    plugin.run_once()
    assert live_pod_names(client) == {"small", "not-opted", "no-metric"}

    ctx.clock.step(20)  # 47 % requested now: nothing more goes
    _feed_used(ctx, 10.0, {"small": 1.0, "not-opted": 1.0})
    plugin.run_once()
    assert live_pod_names(client) == {"small", "not-opted", "no-metric"}


@pytest.mark.parametrize(
    "cluster", [{"gates": "CPUAllocatableEvict=true,CPUEvict=true",
                 "slo": {**ALLOCATABLE_SLO, **USED_SLO}}], indirect=True)
def test_allocatable_evict_without_batch_allocatable_takes_every_candidate(cluster) -> None:
    # upstream "feature CPUEvict/CPUAllocatableEvict ok": with no batch-cpu on the node all its
    # requests are released; a plain-cpu release is never credited, so every candidate goes
    client, plugin, ctx = cluster
    create_priority_classes(client, {"koord-free-3500": 3500, "koord-prod-9500": 9500})
    create_pod(client, "batch-pod", "node-0", "BE", "koord-batch-5000", ENABLED,
               requests={"kubernetes.io/batch-cpu": "4000"})
    create_pod(client, "free-pod", "node-0", "BE", "koord-free-3500", ENABLED,
               requests={"cpu": "7"})
    create_pod(client, "free-not-opted", "node-0", "BE", "koord-free-3500",
               requests={"cpu": "1"})
    create_pod(client, "prod-pod", "node-0", "LS", "koord-prod-9500", ENABLED)
    names = ["batch-pod", "free-pod", "free-not-opted", "prod-pod"]
    wait_running(client, names)
    ctx.clock.step(20)
    _feed_used(ctx, 1.0, dict.fromkeys(names, 0.2))  # far below the CPUEvict threshold
    plugin.run_once()
    assert live_pod_names(client) == {"free-not-opted", "prod-pod"}


@pytest.mark.parametrize(
    "cluster", [{"gates": "CPUAllocatableEvict=true", "extra": BATCH_AND_MID,
                 "slo": {**ALLOCATABLE_SLO, "cpuAllocatableEvictLowerPercent": 80}}],
    indirect=True)
def test_allocatable_evict_with_lower_not_below_threshold_evicts_nothing(cluster, caplog) -> None:
    client, plugin, ctx = cluster
    _create_allocatable_pods(client)
    ctx.clock.step(20)
    _feed_used(ctx, 10.0, {"batch-pod": 4.0, "mid-pod": 3.0})
    with caplog.at_level(logging.WARNING, logger="koordlet.qosmanager.cpuevict"):
        plugin.run_once()
    assert live_pod_names(client) == {"batch-pod", "mid-pod"}
    assert any("invalid" in r.getMessage() and "CPUAllocatableEvict" in r.getMessage()
               for r in caplog.records)


def test_each_gate_alone_enables_the_strategy(tmp_path: Path) -> None:
    # upstream Test_cpuEvict_Enabled: all three gates default off
    for gates in ("", "BECPUEvict=true", "CPUEvict=true", "CPUAllocatableEvict=true"):
        gate = koordlet_feature_gate.copy()
        if gates:
            gate.set(gates)
        ctx = Context(env=fake_v2_tree(tmp_path, ["kubepods.slice"]),
                      executor=ResourceUpdateExecutor(FakeClock(0.0)),
                      metric_cache=MetricCache(), states=FakeStates(), feature_gate=gate)
        assert CPUEvict(ctx).enabled() is bool(gates)


def test_each_eviction_is_an_audit_event(cluster, tmp_path: Path) -> None:
    """Upstream's ``audit.V(0).Pod(ns, name).Reason(reason).Message(message)`` per victim."""
    client, plugin, ctx = cluster
    create_pod(client, "be-a", "node-0", "BE", "koord-batch-5000",
               requests={"kubernetes.io/batch-cpu": "2000"})
    wait_running(client, ["be-a"])
    audit.setup(audit.Config(audit_log_dir=str(tmp_path / "audit")))
    try:
        ctx.clock.step(20)
        _feed(ctx, 1900, 8000, 2000)
        plugin.run_once()
        assert live_pod_names(client) == set()
        events = ReverseEventIterator(str(tmp_path / "audit"))
        e = events.next()
        assert e is not None and events.next() is None
    finally:
        audit.reset()
    assert (e.type, e.namespace, e.name, e.reason) == (
        "pod", "default", "be-a", "trigger by koordlet feature BECPUEvict")
    assert e.message.endswith("kill pod: be-a")
