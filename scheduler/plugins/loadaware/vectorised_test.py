"""filter_nodes / score_nodes agree with filter / score on randomised clusters."""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from api.extension.amplification import ANNOTATION_NODE_RAW_ALLOCATABLE
from api.extension.load_aware import ANNOTATION_CUSTOM_USAGE_THRESHOLDS
from pkg.util.clock import FakeClock
from scheduler.apis.config.koord_args import LoadAwareSchedulingAggregatedArgs
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.status import is_success
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.interface import ExtendedHandle
from scheduler.plugins.loadaware.load_aware import LoadAwareScheduling
from scheduler.plugins.loadaware.testing import (
    NOW,
    make_metric,
    make_node,
    make_pod,
    new_plugin,
)

CLASSES = ["koord-prod", "koord-batch", "koord-mid", "koord-free", None]
THRESHOLD_ANNOTATIONS = [
    '{"usageThresholds": {"cpu": 40}}',
    '{"usageThresholds": {"memory": 30}, "prodUsageThresholds": {"cpu": 20}}',
    '{"aggregatedUsage": {"usageThresholds": {"cpu": 50}, "usageAggregationType": "p95"}}',
    '{"aggregatedUsage": {"usageThresholds": {"cpu": 50}, "usageAggregationType": "p50",'
    ' "usageAggregatedDuration": "30m"}}',
    '{"aggregatedUsage": {"usageThresholds": {"cpu": 50}}}',
    '{"usageThresholds": {"cpu": 0, "memory": 0}}',
    "{not json",
]
AGG_P95 = LoadAwareSchedulingAggregatedArgs(
    usage_thresholds={"cpu": 60, "memory": 80}, usage_aggregation_type="p95",
    usage_aggregated_duration=300.0, score_aggregation_type="p50")
AGG_MISSING_WINDOW = LoadAwareSchedulingAggregatedArgs(
    usage_thresholds={"cpu": 30}, usage_aggregation_type="p95", usage_aggregated_duration=600.0,
    score_aggregation_type="p95", score_aggregated_duration=600.0)

CONFIGS: list[dict[str, Any]] = [
    {},
    {"prod_usage_thresholds": {"cpu": 50, "memory": 70}, "score_according_prod_usage": True,
     "prod_usage_include_sys": True},
    {"aggregated": AGG_P95},
    {"aggregated": AGG_MISSING_WINDOW, "estimated_seconds_after_pod_scheduled": 600},
    {"filter_expired_node_metrics": False, "usage_thresholds": {"cpu": 40, "memory": 40}},
    {"enable_schedule_when_node_metrics_expired": True},
    {"dominant_resource_weight": 2, "resource_weights": {"cpu": 3}},
    {"usage_thresholds": {"cpu": 0, "memory": 0}, "dominant_resource_weight": 1},
]


def _quantities(rng: random.Random, cpu_cores: float, mem_gi: float) -> dict[str, str]:
    return {"cpu": f"{rng.randint(0, int(cpu_cores * 1100))}m",
            "memory": str(rng.randint(0, int(mem_gi * 1.1 * 1024**3)))}


def _pod(rng: random.Random, name: str, node: str = "") -> dict[str, Any]:
    cls = rng.choice(CLASSES)
    if cls == "koord-batch" and rng.random() < 0.7:
        requests = {"kubernetes.io/batch-cpu": str(rng.randint(100, 8000)),
                    "kubernetes.io/batch-memory": f"{rng.randint(1, 16)}Gi"}
    elif rng.random() < 0.2:
        requests = {}
    else:
        requests = {"cpu": f"{rng.randint(1, 8000)}m", "memory": f"{rng.randint(64, 16384)}Mi"}
    limits = dict(requests) if requests and rng.random() < 0.4 else None
    return make_pod(name, node=node, requests=requests, limits=limits, priority_class=cls,
                    daemonset=rng.random() < 0.05,
                    scheduled_at=NOW - rng.uniform(0, 600) if rng.random() < 0.8 else None)


def _world(rng: random.Random, n: int) -> tuple[list, list, list]:
    nodes, metrics, pods = [], [], []
    for i in range(n):
        name = f"n{i}"
        cpu, mem = rng.randint(1, 64), rng.randint(1, 256)
        annotations = {}
        if rng.random() < 0.15:
            annotations[ANNOTATION_NODE_RAW_ALLOCATABLE] = json.dumps(
                {"cpu": str(rng.randint(1, cpu))})
        if rng.random() < 0.25:
            annotations[ANNOTATION_CUSTOM_USAGE_THRESHOLDS] = rng.choice(THRESHOLD_ANNOTATIONS)
        nodes.append(make_node(name, cpu=str(cpu), memory=f"{mem}Gi", annotations=annotations))
        assigned = [_pod(rng, f"{name}-p{j}", name) for j in range(rng.randint(0, 5))]
        pods += assigned
        roll = rng.random()
        if roll < 0.1:
            continue
        reported = [(f"default/{p['metadata']['name']}", _quantities(rng, 2, 4),
                     rng.choice(["koord-prod", "koord-batch"]))
                    for p in assigned if rng.random() < 0.6]
        aggregated: dict[tuple[str, float], Mapping[str, str]] = {
            (kind, window): _quantities(rng, cpu, mem)
            for kind in ("p50", "p95") for window in (300, 1800) if rng.random() < 0.6}
        metrics.append(make_metric(
            name, update_time=None if rng.random() < 0.05 else NOW - rng.uniform(0, 400),
            usage=_quantities(rng, cpu, mem), system_usage=_quantities(rng, 1, 2),
            aggregated=aggregated, pods=reported, node_metric=roll > 0.15,
            report_interval=rng.choice([None, 30, 120])))
    return nodes, metrics, pods


def _check(plugin: LoadAwareScheduling, handle: ExtendedHandle, pods: list[PodInfo]) -> None:
    snap = handle.snapshot
    every = np.arange(len(snap))
    for pod in pods:
        state = CycleState()
        mask = plugin.filter_nodes(state, pod, snap)
        scalar = [is_success(plugin.filter(state, pod, ni)) for ni in snap.node_infos]
        assert (np.ones(len(snap), dtype=bool) if mask is None else mask).tolist() == scalar
        scores, status = plugin.score_nodes(state, pod, snap, every)
        assert status is None
        assert scores.tolist() == [plugin.score(state, pod, ni)[0] for ni in snap.node_infos]
        # A subset, in another order.
        some = every[::-3]
        assert plugin.score_nodes(state, pod, snap, some)[0].tolist() == scores[some].tolist()


@pytest.mark.parametrize("config", range(len(CONFIGS)))
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_vectorised_paths_agree_with_scalar(config, seed):
    rng = random.Random(seed * 100 + config)
    nodes, metrics, assigned = _world(rng, 40)
    clock = FakeClock(NOW)
    plugin, handle = new_plugin(nodes, metrics, assigned, clock=clock, **CONFIGS[config])
    incoming = [PodInfo(_pod(rng, f"in{k}")) for k in range(8)]
    _check(plugin, handle, incoming)

    # Reserve and forget, metric updates and deletions, pod deletions, time passing.
    for pod in incoming[:4]:
        target = rng.choice(nodes)["metadata"]["name"]
        plugin.reserve(CycleState(), pod.with_node(target), target)
    plugin.forget_pod(incoming[0])
    for m in rng.sample(metrics, 5):
        plugin.cache.set_node_metric(make_metric(
            m["metadata"]["name"], update_time=NOW - rng.uniform(0, 400),
            usage=_quantities(rng, 32, 128), aggregated={("p95", 300): _quantities(rng, 32, 128)},
            pods=[(f"default/{p['metadata']['name']}", _quantities(rng, 2, 4), "koord-prod")
                  for p in rng.sample(assigned, min(3, len(assigned)))]))
    plugin.cache.delete_node_metric(metrics[0]["metadata"]["name"])
    for p in rng.sample(assigned, min(5, len(assigned))):
        plugin.cache.on_pod_delete(p)
    clock.step(rng.uniform(0, 200))
    _check(plugin, handle, incoming)

    # The node list changes: columns realign.
    kept = [NodeInfo(n) for n in nodes[5:]]
    rng.shuffle(kept)
    handle.snapshot.rebuild(kept)
    _check(plugin, handle, incoming)
