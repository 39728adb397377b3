from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from scheduler.apis.config import NodeResourcesFitArgs
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import (
    NODE,
    POD,
    ActionType,
    QueueingHint,
)
from scheduler.framework.plugins.noderesources.fit import Fit
from scheduler.framework.plugins.noderesources.testing import (
    BATCH_CPU,
    GPU,
    make_node,
    make_pod,
    node_info,
    random_requests,
    random_snapshot,
    snapshot_of,
)
from scheduler.framework.status import Code, Status, is_success
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.testing import new_handle


def fit(args: NodeResourcesFitArgs | None = None) -> Fit:
    return Fit(args, new_handle())


def fit_args(**kw: Any) -> NodeResourcesFitArgs:
    return NodeResourcesFitArgs.model_validate(kw)


def run_filter(plugin: Fit, pod: dict[str, Any], ni: NodeInfo) -> Status | None:
    state = CycleState()
    pi = PodInfo(pod)
    plugin.pre_filter(state, pi, snapshot_of(ni))
    return plugin.filter(state, pi, ni)


def test_a_node_short_of_cpu_and_memory_gives_both_reasons() -> None:
    ni = node_info(make_node("n", cpu=4, memory="8Gi"),
                   make_pod("a", {"cpu": 3, "memory": "7Gi"}, "n"))
    status = run_filter(fit(), make_pod("p", {"cpu": 2, "memory": "2Gi"}), ni)
    assert status == Status(Code.UNSCHEDULABLE, "Insufficient cpu", "Insufficient memory")


def test_fitting_exactly_passes() -> None:
    ni = node_info(make_node("n", cpu=4, memory="8Gi"),
                   make_pod("a", {"cpu": 3, "memory": "6Gi"}, "n"))
    assert run_filter(fit(), make_pod("p", {"cpu": 1, "memory": "2Gi"}), ni) is None


def test_too_many_pods_even_for_a_pod_without_requests() -> None:
    ni = node_info(make_node("n", cpu=4, pods=1), make_pod("a", {"cpu": 1}, "n"))
    status = run_filter(fit(), make_pod("p"), ni)
    assert status == Status(Code.UNSCHEDULABLE, "Too many pods")


def test_a_request_bigger_than_the_whole_node_is_unresolvable() -> None:
    ni = node_info(make_node("n", cpu=4, memory="8Gi"))
    status = run_filter(fit(), make_pod("p", {"cpu": 8, "memory": "1Gi"}), ni)
    assert status == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "Insufficient cpu")


def test_extended_and_batch_resources_are_checked() -> None:
    ni = node_info(make_node("n", cpu=8, **{GPU: 1, BATCH_CPU: 2000}),
                   make_pod("a", {BATCH_CPU: 1500}, "n"))
    pod = make_pod("p", {"cpu": 1, GPU: 2, BATCH_CPU: 1000, "ephemeral-storage": "1Gi"})
    status = run_filter(fit(), pod, ni)
    assert status is not None
    assert status.reasons == ("Insufficient ephemeral-storage", f"Insufficient {GPU}",
                              f"Insufficient {BATCH_CPU}")
    # Some gpu and batch-cpu would fit after preemption; ephemeral-storage never.
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_ignored_resources_and_groups_skip_extended_resources_only() -> None:
    ni = node_info(make_node("n", cpu=8))
    pod = make_pod("p", {GPU: 1, "other.io/fpga": 1, BATCH_CPU: 1000})
    status = run_filter(fit(fit_args(ignoredResources=[GPU])), pod, ni)
    assert status is not None and status.reasons == (
        "Insufficient other.io/fpga", f"Insufficient {BATCH_CPU}")
    # kubernetes.io/ resources are native, never ignored.
    plugin = fit(fit_args(ignoredResourceGroups=["example.com", "other.io", "kubernetes.io"]))
    status = run_filter(plugin, pod, ni)
    assert status is not None and status.reasons == (f"Insufficient {BATCH_CPU}",)


def test_explain_says_by_how_much() -> None:
    ni = node_info(make_node("n", cpu=4, memory="8Gi", pods=2),
                   make_pod("a", {"cpu": "500m", "memory": "6Gi"}, "n"),
                   make_pod("b", {"cpu": "0"}, "n"))
    plugin = fit()
    state = CycleState()
    pod = PodInfo(make_pod("p", {"cpu": 4, "memory": "1Gi"}))
    plugin.pre_filter(state, pod, snapshot_of(ni))
    assert plugin.explain(state, pod, ni) == (
        "pods: 2 of 2 used; cpu: requests 4, free 3500m")


def test_filter_nodes_agrees_with_filter() -> None:
    rng = random.Random(7)
    plugin = fit(fit_args(ignoredResourceGroups=["example.com"]))
    outcomes = set()
    for _ in range(40):
        snap = random_snapshot(rng)
        pod = PodInfo(make_pod("incoming", random_requests(rng)))
        state = CycleState()
        plugin.pre_filter(state, pod, snap)
        mask = plugin.filter_nodes(state, pod, snap)
        scalar = np.array([is_success(plugin.filter(state, pod, ni)) for ni in snap.node_infos])
        got = np.ones(len(snap), dtype=bool) if mask is None else mask
        assert (got == scalar).all()
        outcomes.update(scalar.tolist())
    assert outcomes == {True, False}


def test_a_resource_no_node_has_fails_everywhere() -> None:
    snap = snapshot_of(node_info(make_node("a", cpu=4)), node_info(make_node("b", cpu=4)))
    pod = PodInfo(make_pod("p", {"example.com/fpga": 1}))
    state = CycleState()
    plugin = fit()
    plugin.pre_filter(state, pod, snap)
    mask = plugin.filter_nodes(state, pod, snap)
    assert mask is not None and not mask.any()
    assert plugin.filter(state, pod, snap.node_infos[0]) == Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "Insufficient example.com/fpga")


def test_filter_without_pre_filter_is_an_error() -> None:
    status = fit().filter(CycleState(), PodInfo(make_pod("p")), node_info(make_node("n")))
    assert status is not None and status.code == Code.ERROR


# Scoring --------------------------------------------------------------------------------------

def scores(plugin: Fit, pod: dict[str, Any], *infos: NodeInfo) -> list[int]:
    state = CycleState()
    pi = PodInfo(pod)
    plugin.pre_score(state, pi, list(infos))
    out = []
    for ni in infos:
        s, status = plugin.score(state, pi, ni)
        assert status is None
        out.append(s)
    return out


def sized_nodes() -> tuple[NodeInfo, NodeInfo]:
    return (node_info(make_node("a", cpu="4000m", memory=10000)),
            node_info(make_node("b", cpu="6000m", memory=10000)))


def test_least_allocated_prefers_the_emptier_node() -> None:
    pod = make_pod("p", {"cpu": "3000m", "memory": 5000})
    assert scores(fit(), pod, *sized_nodes()) == [37, 50]


def test_most_allocated_prefers_the_fuller_node() -> None:
    args = fit_args(scoringStrategy={"type": "MostAllocated"})
    pod = make_pod("p", {"cpu": "3000m", "memory": 5000})
    assert scores(fit(args), pod, *sized_nodes()) == [62, 50]


def test_weights_weigh_resources() -> None:
    args = fit_args(scoringStrategy={"type": "LeastAllocated", "resources": [
        {"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}]})
    pod = make_pod("p", {"cpu": "3000m", "memory": 5000})
    # (25×3 + 50) / 4 and (50×3 + 50) / 4.
    assert scores(fit(args), pod, *sized_nodes()) == [31, 50]


def test_requested_to_capacity_ratio_rounds_half_up() -> None:
    args = fit_args(scoringStrategy={"type": "RequestedToCapacityRatio",
                                     "requestedToCapacityRatio": {"shape": [
                                         {"utilization": 0, "score": 0},
                                         {"utilization": 100, "score": 10}]}})
    pod = make_pod("p", {"cpu": "3000m", "memory": 5000})
    # cpu 75, memory 50: 62.5 rounds to 63.
    assert scores(fit(args), pod, *sized_nodes()) == [63, 50]


def test_requested_to_capacity_ratio_truncates_a_falling_shape_towards_zero() -> None:
    args = fit_args(scoringStrategy={"type": "RequestedToCapacityRatio",
                                     "resources": [{"name": "cpu", "weight": 1}],
                                     "requestedToCapacityRatio": {"shape": [
                                         {"utilization": 0, "score": 10},
                                         {"utilization": 30, "score": 0}]}})
    ni = node_info(make_node("n", cpu="1000m"))
    # Utilization 10: 100 − 33.3 is 67 in Go (66 with floor division); past 30 scores 0.
    assert scores(fit(args), make_pod("p", {"cpu": "100m"}), ni) == [67]
    assert scores(fit(args), make_pod("p", {"cpu": "500m"}), ni) == [0]


def test_pods_without_requests_count_the_non_zero_defaults() -> None:
    ni = node_info(make_node("n", cpu="1000m", memory=1000 * 2**20))
    # 100m of 1000m and 200Mi of 1000Mi: (90 + 80) / 2.
    assert scores(fit(), make_pod("p"), ni) == [85]


def test_resources_the_node_lacks_or_the_pod_does_not_request_are_left_out() -> None:
    args = fit_args(scoringStrategy={"type": "MostAllocated", "resources": [
        {"name": "cpu", "weight": 1}, {"name": GPU, "weight": 5}]})
    with_gpus = node_info(make_node("a", cpu="4000m", **{GPU: 4}))
    without = node_info(make_node("b", cpu="4000m"))
    assert scores(fit(args), make_pod("p", {"cpu": "2000m", GPU: 4}), with_gpus, without) == [
        (50 + 100 * 5) // 6, 50]
    assert scores(fit(args), make_pod("p", {"cpu": "2000m"}), with_gpus) == [50]


@pytest.mark.parametrize("strategy", [
    {"type": "LeastAllocated"},
    {"type": "MostAllocated", "resources": [
        {"name": "cpu", "weight": 2}, {"name": "memory", "weight": 1},
        {"name": "ephemeral-storage", "weight": 1}, {"name": GPU, "weight": 3},
        {"name": BATCH_CPU, "weight": 1}, {"name": "pods", "weight": 1}]},
    {"type": "LeastAllocated", "resources": [
        {"name": "cpu", "weight": 1}, {"name": GPU, "weight": 2},
        {"name": BATCH_CPU, "weight": 1}]},
    {"type": "RequestedToCapacityRatio", "resources": [
        {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 4},
        {"name": GPU, "weight": 2}],
     "requestedToCapacityRatio": {"shape": [
         {"utilization": 10, "score": 3}, {"utilization": 35, "score": 10},
         {"utilization": 80, "score": 2}, {"utilization": 95, "score": 6}]}},
])
def test_score_nodes_agrees_with_score(strategy: dict[str, Any]) -> None:
    rng = random.Random(11)
    plugin = fit(fit_args(scoringStrategy=strategy))
    seen = set()
    for _ in range(30):
        snap = random_snapshot(rng)
        pod = PodInfo(make_pod("incoming", random_requests(rng)))
        state = CycleState()
        plugin.pre_score(state, pod, snap.node_infos)
        idx = np.array(sorted(rng.sample(range(len(snap)), 40)), dtype=np.int64)
        vector, status = plugin.score_nodes(state, pod, snap, idx)
        assert status is None and vector.dtype == np.int64
        scalar = [plugin.score(state, pod, snap.node_infos[i])[0] for i in idx]
        assert vector.tolist() == scalar
        seen.update(scalar)
    assert len(seen) > 10 and min(seen) >= 0 and max(seen) <= 100


def test_an_unsupported_strategy_is_refused() -> None:
    args = fit_args()
    args.scoring_strategy.type = "BalancedAllocation"
    with pytest.raises(ValueError, match="not supported"):
        fit(args)


# Queueing -------------------------------------------------------------------------------------

def test_events_to_register() -> None:
    events = [(e.event.resource, e.event.action_type) for e in fit().events_to_register()]
    assert events == [(POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
                      (NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE)]


def hints() -> tuple[Any, Any]:
    pod_hint, node_hint = (e.hint_fn for e in fit().events_to_register())
    return pod_hint, node_hint


def test_deleting_a_pod_helps_only_when_it_held_resources() -> None:
    pod_hint, _ = hints()
    pending = make_pod("p", {"cpu": 1})
    assert pod_hint(pending, make_pod("gone", {"cpu": 1}, "n"), None) == QueueingHint.QUEUE
    assert pod_hint(pending, make_pod("gone", {"cpu": 1}), None) == QueueingHint.QUEUE_SKIP
    nominated = make_pod("gone", {"cpu": 1})
    nominated["status"] = {"nominatedNodeName": "n"}
    assert pod_hint(pending, nominated, None) == QueueingHint.QUEUE


def test_a_scale_down_helps_when_it_frees_what_the_pod_requests() -> None:
    pod_hint, _ = hints()
    pending = make_pod("p", {"cpu": 1})
    before = make_pod("other", {"cpu": 2, "memory": "2Gi"}, "n")
    assert pod_hint(pending, before, make_pod("other", {"cpu": 1, "memory": "2Gi"}, "n")) \
        == QueueingHint.QUEUE
    assert pod_hint(pending, before, make_pod("other", {"cpu": 2, "memory": "1Gi"}, "n")) \
        == QueueingHint.QUEUE_SKIP
    assert pod_hint(pending, make_pod("p", {"cpu": 2}), make_pod("p", {"cpu": 1})) \
        == QueueingHint.QUEUE


def test_a_node_change_helps_when_the_pod_would_fit_with_more_room() -> None:
    _, node_hint = hints()
    pending = make_pod("p", {"cpu": 2})
    small, big = make_node("n", cpu=1), make_node("n", cpu=4)
    assert node_hint(pending, None, small) == QueueingHint.QUEUE_SKIP
    assert node_hint(pending, None, big) == QueueingHint.QUEUE
    assert node_hint(pending, small, big) == QueueingHint.QUEUE
    more_memory = make_node("n", cpu=4, memory="64Gi")
    assert node_hint(pending, big, more_memory) == QueueingHint.QUEUE_SKIP


def test_absurd_quantities_do_not_crash_filtering() -> None:
    # cpu 1e30 (accepted by kube-apiserver) raised OverflowError writing the snapshot's int64
    # arrays, which stopped every scheduling cycle.
    real = node_info(make_node("real", cpu=4, memory="8Gi"))
    huge = node_info(make_node("huge", cpu="1e30", memory="8Gi"),
                     make_pod("a", {"cpu": "1e29"}, "huge"))
    snap = snapshot_of(real, huge)
    plugin = fit()
    for requests, fits_real in (({"cpu": "1e30"}, False), ({"cpu": 1}, True)):
        pod = PodInfo(make_pod("p", requests))
        state = CycleState()
        plugin.pre_filter(state, pod, snap)
        scalar = [is_success(plugin.filter(state, pod, ni)) for ni in snap.node_infos]
        mask = plugin.filter_nodes(state, pod, snap)
        # The absurd node's verdict is whatever saturation gives; the real node is judged.
        vector = (np.ones(2, dtype=bool) if mask is None else mask).tolist()
        assert scalar[0] is vector[0] is fits_real
