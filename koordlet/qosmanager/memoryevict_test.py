"""memoryevict (upstream `pkg/koordlet/qosmanager/plugins/memoryevict/memory_evict.go`) against
the embedded API server: which pods BEMemoryEvict, MemoryEvict and MemoryAllocatableEvict take,
in which order and how many per round, the cool time, and a PodDisruptionBudget that blocks one
eviction; the allocatable cases mirror upstream's memory_evict_test.go."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from koordlet.metriccache import metric_types as mt
from koordlet.metriccache.metric_cache import MetricCache, MetricSample
from koordlet.qosmanager.framework import Config, Context
from koordlet.qosmanager.memoryevict import MemoryEvict, Victim, memory_release_bytes, sort_victims
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
from pkg.client.resources import POD_DISRUPTION_BUDGETS
from pkg.client.rest import Client
from pkg.features import koordlet_feature_gate
from pkg.util.clock import FakeClock
from test.apiserver import start

GI = 1 << 30


def test_release_goes_down_to_lower_percent_default_threshold_minus_two() -> None:
    # 80 % used, threshold 70 → lower 68: release 12 % of 10 GiB
    assert memory_release_bytes(10 * GI, 8 * GI, 70, None) == 10 * GI * 12 // 100
    assert memory_release_bytes(10 * GI, 8 * GI, 70, 50) == 10 * GI * 30 // 100
    assert memory_release_bytes(10 * GI, 6 * GI, 70, None) == 0
    assert memory_release_bytes(10 * GI, 8 * GI, 70, 70) is None  # lower must be < threshold


def _pod(name: str, priority: int | None) -> dict:
    spec = {} if priority is None else {"priority": priority}
    return {"metadata": {"name": name}, "spec": spec}


def test_victims_lowest_priority_then_largest_usage_then_unused_by_name_descending() -> None:
    victims = [
        Victim(_pod("a", 6000), 5),
        Victim(_pod("b", 5000), 1),
        Victim(_pod("c", 6000), 9),
        Victim(_pod("d", 6000), 0),
        Victim(_pod("e", 6000), 0),
    ]
    order = [v.pod["metadata"]["name"] for v in sort_victims(victims)]
    assert order == ["b", "c", "a", "e", "d"]


ENABLED = {"koordinator.sh/eviction-enabled": "true"}
MEMORY_EVICT = {"gates": "MemoryEvict=true",
                "slo": {"memoryEvictThresholdPercent": 70, "evictEnabledPriorityThreshold": 5999}}


@pytest.fixture
def cluster(
    tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[Client, MemoryEvict, Context]]:
    """The BEMemoryEvict gate and threshold 70 %, unless parametrized with other `gates` and
    `slo` fields; `extra` gives the node extended resources."""
    param = getattr(request, "param", {})
    with start() as srv:
        srv.add_nodes(1, cpu="8", memory="10Gi", extra=param.get("extra", {}))
        client = api_client(srv.kubeconfig)
        create_priority_classes(client, {"koord-batch-5000": 5000, "koord-batch-5500": 5500,
                                         "koord-batch-6000": 6000, "koord-prod": 9000})
        gate = koordlet_feature_gate.copy()
        gate.set(param.get("gates", "BEMemoryEvict=true"))
        clock = FakeClock(1000.0)
        ctx = Context(
            env=fake_v2_tree(tmp_path, ["kubepods.slice"]),
            executor=ResourceUpdateExecutor(clock),
            metric_cache=MetricCache(),
            states=ApiStates(client, "node-0",
                             be_slo(**param.get("slo", {"memoryEvictThresholdPercent": 70}))),
            feature_gate=gate,
            config=Config(),
            clock=clock,
            client=client,
        )
        plugin = MemoryEvict(ctx)
        assert plugin.enabled()
        yield client, plugin, ctx
        client.close()


def _feed(ctx: Context, node_bytes: int, pods: dict[str, int]) -> None:
    now = ctx.clock.now()
    samples = [MetricSample(mt.NODE_MEMORY_USAGE, {}, now, float(node_bytes))]
    for pod in ctx.states.get_all_pods():
        used = pods.get(pod["metadata"]["name"])
        if used is not None:
            samples.append(
                MetricSample(mt.POD_MEMORY_USAGE, {mt.POD_UID: pod["metadata"]["uid"]}, now,
                             float(used))
            )
    ctx.metric_cache.append(samples)


def test_evicts_lowest_priority_be_first_until_released_then_cools(cluster) -> None:
    client, plugin, ctx = cluster
    create_pod(client, "be-low", "node-0", "BE", "koord-batch-5000")
    create_pod(client, "be-mid", "node-0", "BE", "koord-batch-5500")
    create_pod(client, "be-high", "node-0", "BE", "koord-batch-6000")
    create_pod(client, "ls", "node-0", "LS", "koord-prod")
    wait_running(client, ["be-low", "be-mid", "be-high", "ls"])
    usage = {"be-low": GI, "be-mid": GI // 2, "be-high": 2 * GI, "ls": 3 * GI}
    # 80 % of 10 GiB: release 1.2 GiB = be-low (1 GiB) + be-mid (0.5 GiB); be-high stays
    _feed(ctx, 8 * GI, usage)
    plugin.run_once()
    assert live_pod_names(client) == {"be-high", "ls"}

    ctx.clock.step(3)  # within the 4 s cool time: nothing, though usage is still high
    _feed(ctx, 8 * GI, usage)
    plugin.run_once()
    assert live_pod_names(client) == {"be-high", "ls"}

    ctx.clock.step(2)  # cool time over, still 80 %: the next BE pod goes, never the LS one
    _feed(ctx, 8 * GI, usage)
    plugin.run_once()
    assert live_pod_names(client) == {"ls"}


def test_pdb_blocked_eviction_is_logged_and_next_victim_taken(cluster, caplog) -> None:
    client, plugin, ctx = cluster
    create_pod(client, "be-guarded", "node-0", "BE", "koord-batch-5000", {"app": "guarded"})
    create_pod(client, "be-other", "node-0", "BE", "koord-batch-5500")
    wait_running(client, ["be-guarded", "be-other"])
    client.create(
        POD_DISRUPTION_BUDGETS,
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
         "metadata": {"name": "guard", "namespace": "default"},
         "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}}},
        "default",
    )
    _feed(ctx, 8 * GI, {"be-guarded": 2 * GI, "be-other": 2 * GI})
    with caplog.at_level(logging.WARNING, logger="pkg.evictions.evictions"):
        plugin.run_once()
    assert live_pod_names(client) == {"be-guarded"}
    assert any("default/be-guarded" in r.getMessage() and "disruption budget" in r.getMessage()
               for r in caplog.records)


@pytest.mark.parametrize("cluster", [MEMORY_EVICT], indirect=True)
def test_memory_evict_takes_opted_in_pods_in_priority_order_one_per_round(cluster, caplog) -> None:
    client, plugin, ctx = cluster
    create_pod(client, "opted-low", "node-0", "BE", "koord-batch-5000", ENABLED)
    create_pod(client, "opted-high-big", "node-0", "BE", "koord-batch-5500", ENABLED)
    create_pod(client, "opted-high-small", "node-0", "LS", "koord-batch-5500", ENABLED)
    create_pod(client, "be-not-opted", "node-0", "BE", "koord-batch-5000")
    create_pod(client, "prod-opted", "node-0", "LS", "koord-prod", ENABLED)  # above 5999
    create_pod(client, "opted-no-metric", "node-0", "BE", "koord-batch-5000", ENABLED)
    names = ["opted-low", "opted-high-big", "opted-high-small", "be-not-opted", "prod-opted",
             "opted-no-metric"]
    wait_running(client, names)
    usage = {"opted-low": GI // 4, "opted-high-big": 2 * GI, "opted-high-small": GI,
             "be-not-opted": 3 * GI, "prod-opted": 3 * GI}
    expected_left = set(names)
    # 80 % of 10 GiB against 70 %: upstream credits each victim 1000× its usage, so one pod
    # goes per round, the next after the 4 s cool time: lowest priority, then the larger user
    for victim in ["opted-low", "opted-high-big", "opted-high-small"]:
        _feed(ctx, 8 * GI, usage)
        with caplog.at_level(logging.INFO, logger="pkg.evictions.evictions"):
            plugin.run_once()
        expected_left.discard(victim)
        assert live_pod_names(client) == expected_left
        ctx.clock.step(4)
    # neither the pod without the label, nor the one above evictEnabledPriorityThreshold, nor
    # the one without a usage sample (as upstream) goes
    _feed(ctx, 8 * GI, usage)
    plugin.run_once()
    assert live_pod_names(client) == {"be-not-opted", "prod-opted", "opted-no-metric"}
    assert any("default/opted-low success" in r.getMessage()
               and "trigger by koordlet feature MemoryEvict" in r.getMessage()
               for r in caplog.records)


@pytest.mark.parametrize(
    "cluster", [{**MEMORY_EVICT, "gates": "BEMemoryEvict=true,MemoryEvict=true"}], indirect=True)
def test_both_features_be_pods_go_first_and_count_for_memory_evict(cluster) -> None:
    client, plugin, ctx = cluster
    create_pod(client, "be", "node-0", "BE", "koord-batch-5500")
    create_pod(client, "opted", "node-0", "LS", "koord-batch-5000", ENABLED)
    wait_running(client, ["be", "opted"])
    usage = {"be": 2 * GI, "opted": GI}
    # release 1.2 GiB: BEMemoryEvict's victim covers it, MemoryEvict has nothing left to do
    _feed(ctx, 8 * GI, usage)
    plugin.run_once()
    assert live_pod_names(client) == {"opted"}

    ctx.clock.step(4)  # still 80 % and no BE pod left: MemoryEvict takes the opted-in one
    _feed(ctx, 8 * GI, usage)
    plugin.run_once()
    assert live_pod_names(client) == set()


@pytest.mark.parametrize(
    "cluster", [{"gates": "MemoryEvict=true", "slo": {"memoryEvictThresholdPercent": 70}}],
    indirect=True)
def test_memory_evict_without_priority_threshold_evicts_nothing(cluster, caplog) -> None:
    client, plugin, ctx = cluster
    create_pod(client, "opted", "node-0", "BE", "koord-batch-5000", ENABLED)
    wait_running(client, ["opted"])
    _feed(ctx, 8 * GI, {"opted": GI})
    with caplog.at_level(logging.WARNING, logger="koordlet.qosmanager.memoryevict"):
        plugin.run_once()
    assert live_pod_names(client) == {"opted"}
    assert any("evictEnabledPriorityThreshold" in r.getMessage() for r in caplog.records)


def test_each_gate_alone_enables_the_strategy(tmp_path: Path) -> None:
    gate = koordlet_feature_gate.copy()
    ctx = Context(env=fake_v2_tree(tmp_path, ["kubepods.slice"]),
                  executor=ResourceUpdateExecutor(FakeClock(0.0)), metric_cache=MetricCache(),
                  states=FakeStates(), feature_gate=gate)
    assert not MemoryEvict(ctx).enabled()  # all three gates default off
    gate.set("MemoryEvict=true")
    assert MemoryEvict(ctx).enabled()
    gate = koordlet_feature_gate.copy()
    gate.set("MemoryAllocatableEvict=true")
    ctx.feature_gate = gate
    assert MemoryEvict(ctx).enabled()


ALLOCATABLE_SLO = {"memoryAllocatableEvictThresholdPercent": 45,
                   "memoryAllocatableEvictLowerPercent": 40,
                   "allocatableEvictPriorityThreshold": 5000}
BATCH_MEMORY = "kubernetes.io/batch-memory"


@pytest.mark.parametrize(
    "cluster", [{"gates": "MemoryAllocatableEvict=true", "slo": ALLOCATABLE_SLO,
                 "extra": {BATCH_MEMORY: "100Gi"}}], indirect=True)
def test_allocatable_evict_takes_the_larger_request_down_to_lower_percent(cluster, caplog) -> None:
    # upstream Test_memoryEvict's MemoryAllocatableEvict case: 50 of 100 GiB batch-memory
    # requested against 45 %: release 10 GiB, the larger request first, whatever the usage
    client, plugin, ctx = cluster
    create_pod(client, "batch-pod-1", "node-0", "BE", "koord-batch-5000", ENABLED,
               requests={BATCH_MEMORY: "20Gi"})
    create_pod(client, "batch-pod-2", "node-0", "BE", "koord-batch-5000", ENABLED,
               requests={BATCH_MEMORY: "30Gi"})
    create_pod(client, "batch-not-opted", "node-0", "BE", "koord-batch-5000")
    create_pod(client, "batch-5500", "node-0", "BE", "koord-batch-5500", ENABLED,
               requests={BATCH_MEMORY: "40Gi"})  # above the priority threshold: not summed
    names = ["batch-pod-1", "batch-pod-2", "batch-not-opted", "batch-5500"]
    wait_running(client, names)
    usage = {"batch-pod-1": 2 * GI, "batch-pod-2": GI, "batch-not-opted": GI,
             "batch-5500": GI}
    _feed(ctx, GI, usage)
    with caplog.at_level(logging.INFO, logger="pkg.evictions.evictions"):
        plugin.run_once()
    assert live_pod_names(client) == {"batch-pod-1", "batch-not-opted", "batch-5500"}
    assert any("default/batch-pod-2 success" in r.getMessage()
               and "trigger by koordlet feature MemoryAllocatableEvict" in r.getMessage()
               for r in caplog.records)

    ctx.clock.step(4)  # 20 % requested now: nothing more goes
    _feed(ctx, GI, usage)
    plugin.run_once()
    assert live_pod_names(client) == {"batch-pod-1", "batch-not-opted", "batch-5500"}


@pytest.mark.parametrize(
    "cluster", [{"gates": "BEMemoryEvict=true,MemoryAllocatableEvict=true",
                 "slo": {"memoryEvictThresholdPercent": 70, **ALLOCATABLE_SLO},
                 "extra": {BATCH_MEMORY: "100Gi"}}], indirect=True)
def test_be_memory_evict_victim_request_counts_for_allocatable_evict(cluster) -> None:
    client, plugin, ctx = cluster
    create_pod(client, "be-big", "node-0", "BE", "koord-batch-5000",
               requests={BATCH_MEMORY: "30Gi"})
    create_pod(client, "opted", "node-0", "BE", "koord-batch-5000", ENABLED,
               requests={BATCH_MEMORY: "20Gi"})
    wait_running(client, ["be-big", "opted"])
    # BEMemoryEvict: 80 % used, release 1.2 GiB, be-big (the larger user) covers it; its 30 GiB
    # batch-memory request also covers MemoryAllocatableEvict's 10 GiB, so opted stays
    _feed(ctx, 8 * GI, {"be-big": 2 * GI, "opted": GI})
    plugin.run_once()
    assert live_pod_names(client) == {"opted"}


@pytest.mark.parametrize(
    "cluster", [{"gates": "MemoryAllocatableEvict=true", "extra": {BATCH_MEMORY: "100Gi"},
                 "slo": {"memoryAllocatableEvictThresholdPercent": 45,
                         "allocatableEvictPriorityThreshold": 5000}}], indirect=True)
def test_allocatable_evict_without_lower_percent_evicts_nothing(cluster, caplog) -> None:
    client, plugin, ctx = cluster
    create_pod(client, "batch-pod", "node-0", "BE", "koord-batch-5000", ENABLED,
               requests={BATCH_MEMORY: "50Gi"})
    wait_running(client, ["batch-pod"])
    _feed(ctx, GI, {"batch-pod": GI})
    with caplog.at_level(logging.WARNING, logger="koordlet.qosmanager.memoryevict"):
        plugin.run_once()
    assert live_pod_names(client) == {"batch-pod"}
    assert any("memoryAllocatableEvictLowerPercent" in r.getMessage() for r in caplog.records)
