from __future__ import annotations

import random
import statistics
from typing import Any

import numpy as np

from scheduler.apis.config import NodeResourcesBalancedAllocationArgs
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.plugins.noderesources.balanced_allocation import BalancedAllocation
from scheduler.framework.plugins.noderesources.testing import (
    BATCH_CPU,
    GPU,
    make_node,
    make_pod,
    node_info,
    random_requests,
    random_snapshot,
)
from scheduler.framework.status import Code
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.testing import new_handle


def balanced(args: NodeResourcesBalancedAllocationArgs | None = None) -> BalancedAllocation:
    return BalancedAllocation(args, new_handle())

def args(*resources: str) -> NodeResourcesBalancedAllocationArgs:
    return NodeResourcesBalancedAllocationArgs.model_validate(
        {"resources": [{"name": r, "weight": 1} for r in resources]})


def scores(plugin: BalancedAllocation, pod: dict[str, Any], *infos: NodeInfo) -> list[int]:
    state = CycleState()
    pi = PodInfo(pod)
    assert plugin.pre_score(state, pi, list(infos)) is None
    return [plugin.score(state, pi, ni)[0] for ni in infos]


def test_balanced_nodes_score_higher() -> None:
    a = node_info(make_node("a", cpu="4000m", memory=10000))
    b = node_info(make_node("b", cpu="6000m", memory=10000))
    # a: 0.75 and 0.5, std 0.125; b: 0.5 and 0.5.
    assert scores(balanced(), make_pod("p", {"cpu": "3000m", "memory": 5000}),
                  a, b) == [87, 100]


def test_actual_requests_are_used_not_the_non_zero_defaults() -> None:
    ni = node_info(make_node("n", cpu="1000m", memory=1000),
                   make_pod("a", None, "n"), make_pod("b", {"memory": 500}, "n"))
    # cpu 0 requested (best-effort pods count 0), memory 0.5 + 0.25: std 0.375.
    assert scores(balanced(), make_pod("p", {"memory": 250}), ni) == [62]


def test_fractions_are_capped_at_one() -> None:
    ni = node_info(make_node("n", cpu="1000m", memory=1000))
    assert scores(balanced(), make_pod("p", {"cpu": "3000m", "memory": 500}),
                  ni) == [75]


def test_more_than_two_resources_use_the_standard_deviation() -> None:
    ni = node_info(make_node("n", cpu="4000m", memory=4000, **{GPU: 4}),
                   make_pod("a", {GPU: 2}, "n"))
    pod = make_pod("p", {"cpu": "1000m", "memory": 3000, GPU: 2})
    std = statistics.pstdev([0.25, 0.75, 1.0])
    assert scores(balanced(args("cpu", "memory", GPU)), pod, ni) == [
        int((1 - std) * 100)]


def test_a_scalar_resource_the_pod_does_not_request_is_left_out() -> None:
    ni = node_info(make_node("n", cpu="4000m", memory=4000, **{GPU: 4}),
                   make_pod("a", {GPU: 4}, "n"))
    pod = make_pod("p", {"cpu": "2000m", "memory": 2000})
    assert scores(balanced(args("cpu", "memory", GPU)), pod, ni) == [100]


def test_best_effort_pods_skip_scoring() -> None:
    plugin = balanced()
    state = CycleState()
    pod = PodInfo(make_pod("p"))
    status = plugin.pre_score(state, pod, [])
    assert status is not None and status.code == Code.SKIP
    assert plugin.score(state, pod, node_info(make_node("n", cpu=1, memory=1)))[0] == 0


def test_score_nodes_agrees_with_score() -> None:
    rng = random.Random(5)
    seen = set()
    for resources in (("cpu", "memory"), ("cpu", "memory", "ephemeral-storage", GPU, BATCH_CPU),
                      ("cpu",), ("memory", GPU)):
        plugin = balanced(args(*resources))
        for _ in range(25):
            snap = random_snapshot(rng)
            pod = PodInfo(make_pod("incoming", random_requests(rng)))
            state = CycleState()
            plugin.pre_score(state, pod, snap.node_infos)
            idx = np.arange(len(snap), dtype=np.int64)
            vector, status = plugin.score_nodes(state, pod, snap, idx)
            assert status is None
            scalar = [plugin.score(state, pod, ni)[0] for ni in snap.node_infos]
            assert vector.tolist() == scalar
            seen.update(scalar)
    assert len(seen) > 20
