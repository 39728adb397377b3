from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

from api.extension.load_aware import ANNOTATION_CUSTOM_USAGE_THRESHOLDS
from pkg.client.informers.fake import FakeListerWatcher
from pkg.client.informers.informer import SharedInformer
from pkg.client.resources import PODS, Resource
from pkg.util.clock import FakeClock
from scheduler.apis.config.koord_args import LoadAwareSchedulingAggregatedArgs
from scheduler.framework import events as ev
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.plugins.defaultpreemption.testing import FakeRecorder
from scheduler.framework.status import Code, Status
from scheduler.framework.types import PodInfo
from scheduler.frameworkext.interface import ExtendedHandle
from scheduler.frameworkext.testing import new_handle
from scheduler.plugins.loadaware.load_aware import NODE_METRICS, LoadAwareScheduling
from scheduler.plugins.loadaware.testing import (
    NOW,
    make_metric,
    make_node,
    make_pod,
    new_plugin,
    snapshot_of,
)

GI = 1024**3
# Nodes of 100 cpu / 100Gi, so usage in cores and Gi reads as percent.
NODE = make_node("n1", cpu="100", memory="100Gi")
# A pod estimated at 850m cpu (1 cpu × 85%) and 0.7Gi memory.
INCOMING = {"cpu": "1", "memory": "1Gi"}


def usage_of(cpu_milli: int, mem_gi: float = 10) -> dict[str, str]:
    return {"cpu": f"{cpu_milli}m", "memory": str(int(mem_gi * GI))}


def run_filter(plugin: LoadAwareScheduling, handle: ExtendedHandle, pod: dict[str, Any],
               node: str = "n1") -> Status | None:
    """Filter through both paths; they must agree."""
    pi = PodInfo(pod)
    state = CycleState()
    snap = handle.snapshot
    status = plugin.filter(state, pi, snap[node])
    mask = plugin.filter_nodes(state, pi, snap)
    passed = True if mask is None else bool(mask[snap.index[node]])
    assert passed == (status is None), (status, mask)
    return status


def run_score(plugin: LoadAwareScheduling, handle: ExtendedHandle, pod: dict[str, Any],
              node: str = "n1") -> int:
    pi = PodInfo(pod)
    state = CycleState()
    snap = handle.snapshot
    score, status = plugin.score(state, pi, snap[node])
    assert status is None
    scores, status = plugin.score_nodes(state, pi, snap, np.array([snap.index[node]]))
    assert status is None and int(scores[0]) == score
    return score


def unschedulable(reason: str) -> Status:
    return Status(Code.UNSCHEDULABLE, reason)


def test_score_worked_example():
    # 96 cpu / 512Gi, usage 32 cpu / 10Gi, pod 16 cpu / 32Gi.
    plugin, handle = new_plugin([make_node("n1")],
                                [make_metric("n1", usage={"cpu": "32", "memory": "10Gi"})])
    pod = make_pod("p", requests={"cpu": "16", "memory": "32Gi"})
    assert run_score(plugin, handle, pod) == 72


@pytest.mark.parametrize("cpu_milli,threshold,passes", [
    (64_500 - 850, 64, False),  # 64.5% rounds up to 65 (round-half-even would give 64)
    (64_499 - 850, 64, True),
    (65_000 - 850, 65, True),  # equal to the threshold passes
    (65_500 - 850, 65, False),
])
def test_filter_rounds_the_percentage(cpu_milli, threshold, passes):
    plugin, handle = new_plugin([NODE], [make_metric("n1", usage=usage_of(cpu_milli))],
                                usage_thresholds={"cpu": threshold, "memory": 95})
    status = run_filter(plugin, handle, make_pod("p", requests=INCOMING))
    assert status == (None if passes else unschedulable("node(s) cpu usage exceed threshold"))


def test_score_truncates():
    plugin, handle = new_plugin([NODE], [make_metric("n1", usage=usage_of(64_500 - 850, 10))],
                                resource_weights={"cpu": 1})
    # (100000 - 64500) * 100 / 100000 = 35.5 → 35
    assert run_score(plugin, handle, make_pod("p", requests=INCOMING)) == 35


def test_filter_reports_the_first_resource_in_name_order():
    plugin, handle = new_plugin([NODE], [make_metric("n1", usage=usage_of(90_000, 99))])
    assert run_filter(plugin, handle, make_pod("p", requests=INCOMING)) == \
        unschedulable("node(s) cpu usage exceed threshold")
    assert plugin.explain(CycleState(), PodInfo(make_pod("p", requests=INCOMING)),
                          handle.snapshot["n1"]) == "cpu usage 90% > threshold 65%"


def test_zero_thresholds_disable_filtering():
    # The shipped configuration: usageThresholds {cpu: 0, memory: 0}.
    plugin, handle = new_plugin([NODE], [make_metric("n1", update_time=None,
                                                     usage=usage_of(99_000))],
                                usage_thresholds={"cpu": 0, "memory": 0})
    assert run_filter(plugin, handle, make_pod("p")) is None


def test_node_without_metric_passes_and_scores_zero():
    plugin, handle = new_plugin([NODE])
    assert run_filter(plugin, handle, make_pod("p")) is None
    assert run_score(plugin, handle, make_pod("p")) == 0


def test_metric_without_node_usage_passes_and_scores_zero():
    plugin, handle = new_plugin([NODE], [make_metric("n1", node_metric=False)])
    assert run_filter(plugin, handle, make_pod("p")) is None
    assert run_score(plugin, handle, make_pod("p")) == 0


def test_a_metric_reported_late_or_deleted_is_followed():
    # Filter and Score skip every column while no node has a NodeMetric; the first report
    # must be judged, and a deletion makes the node pass again.
    plugin, handle = new_plugin([NODE])
    busy = make_metric("n1", update_time=NOW, usage=usage_of(90_000))
    assert run_filter(plugin, handle, make_pod("p", requests=INCOMING)) is None
    plugin.cache.set_node_metric(busy)
    assert run_filter(plugin, handle, make_pod("p", requests=INCOMING)) == unschedulable(OVER)
    assert run_score(plugin, handle, make_pod("p")) > 0
    plugin.cache.delete_node_metric("n1")
    assert run_filter(plugin, handle, make_pod("p", requests=INCOMING)) is None
    assert run_score(plugin, handle, make_pod("p")) == 0
    plugin.cache.set_node_metric(busy)
    assert run_filter(plugin, handle, make_pod("p", requests=INCOMING)) == unschedulable(OVER)


EXPIRED = "node(s) nodeMetric expired"
OVER = "node(s) cpu usage exceed threshold"


@pytest.mark.parametrize("filter_expired,schedule_anyway,age,cpu_milli,want", [
    (True, False, 180, 10_000, EXPIRED),  # exactly the expiration counts as expired
    (True, False, 179, 10_000, None),
    (True, False, None, 10_000, EXPIRED),  # never updated
    (True, False, 179, 90_000, OVER),
    (True, True, 180, 90_000, None),  # expired nodes pass without being judged
    (True, True, None, 90_000, None),
    (False, False, 1000, 90_000, OVER),  # not filtering: stale usage is still judged
    (False, False, 1000, 10_000, None),
    (False, True, None, 10_000, None),
])
def test_expired_metrics(filter_expired, schedule_anyway, age, cpu_milli, want):
    metric = make_metric("n1", update_time=None if age is None else NOW - age,
                         usage=usage_of(cpu_milli))
    plugin, handle = new_plugin([NODE], [metric], filter_expired_node_metrics=filter_expired,
                                enable_schedule_when_node_metrics_expired=schedule_anyway)
    status = run_filter(plugin, handle, make_pod("p", requests=INCOMING))
    assert status == (None if want is None else unschedulable(want))


@pytest.mark.parametrize("filter_expired", [True, False])
def test_expired_metric_scores_zero(filter_expired):
    clock = FakeClock(NOW)
    plugin, handle = new_plugin([NODE], [make_metric("n1", update_time=NOW,
                                                     usage=usage_of(10_000))],
                                clock=clock, filter_expired_node_metrics=filter_expired)
    assert run_score(plugin, handle, make_pod("p")) > 0
    clock.step(180)
    assert run_score(plugin, handle, make_pod("p")) == 0


def test_expiry_follows_the_clock():
    clock = FakeClock(NOW)
    plugin, handle = new_plugin([NODE], [make_metric("n1", usage=usage_of(10_000))],
                                clock=clock)
    assert run_filter(plugin, handle, make_pod("p")) is None
    clock.step(200)
    assert run_filter(plugin, handle, make_pod("p")) == unschedulable(EXPIRED)


def test_daemonset_pods_pass():
    plugin, handle = new_plugin([NODE], [make_metric("n1", update_time=None,
                                                     usage=usage_of(99_000))])
    assert run_filter(plugin, handle, make_pod("p", daemonset=True)) is None
    assert run_filter(plugin, handle, make_pod("p")) == unschedulable(EXPIRED)


PROD_METRIC = make_metric("n1", usage=usage_of(90_000), pods=[
    ("default/web", {"cpu": "30"}, "koord-prod"), ("default/batch", {"cpu": "60"}, "koord-batch")])
PROD_PODS = [make_pod("web", node="n1", priority_class="koord-prod", scheduled_at=NOW - 3600),
             make_pod("batch", node="n1", priority_class="koord-batch",
                      scheduled_at=NOW - 3600)]


@pytest.mark.parametrize("priority_class,prod_thresholds,want", [
    # Prod pods are judged by prod usage (30% + 0.85%) against prod thresholds...
    ("koord-prod", {"cpu": 50}, None),
    ("koord-prod", {"cpu": 30}, "node(s) cpu usage exceed threshold"),
    # ...others by node usage (90%) against usageThresholds (65%).
    ("koord-batch", {"cpu": 50}, "node(s) cpu usage exceed threshold"),
    # Without (or with all-zero) prod thresholds, prod pods are judged like the rest.
    ("koord-prod", {}, "node(s) cpu usage exceed threshold"),
    ("koord-prod", {"cpu": 0}, "node(s) cpu usage exceed threshold"),
])
def test_prod_usage_thresholds(priority_class, prod_thresholds, want):
    plugin, handle = new_plugin([NODE], [PROD_METRIC], PROD_PODS,
                                prod_usage_thresholds=prod_thresholds)
    pod = make_pod("p", requests=INCOMING, priority_class=priority_class)
    status = run_filter(plugin, handle, pod)
    assert status == (None if want is None else unschedulable(want))


def test_score_according_prod_usage():
    plugin, handle = new_plugin([NODE], [PROD_METRIC], PROD_PODS, resource_weights={"cpu": 1},
                                score_according_prod_usage=True)
    prod = make_pod("p", requests=INCOMING, priority_class="koord-prod")
    batch = make_pod("b", requests=INCOMING, priority_class="koord-batch")
    # prod: 30000 + 850 used → 69; others: 90000 + 850 → 9
    assert (run_score(plugin, handle, prod), run_score(plugin, handle, batch)) == (69, 9)


AGGREGATED_METRIC = make_metric("n1", usage=usage_of(10_000), aggregated={
    ("p95", 300): {"cpu": "80"}, ("p95", 1800): {"cpu": "40"}})


@pytest.mark.parametrize("window,want", [
    (300.0, "node(s) cpu aggregated usage exceed threshold"),
    (1800.0, None),
    (0.0, None),  # the longest window
    # A window the metric lacks: only estimates count, the measured 10% does not.
    (600.0, None),
])
def test_aggregated_usage_thresholds(window, want):
    plugin, handle = new_plugin([NODE], [AGGREGATED_METRIC], aggregated=(
        LoadAwareSchedulingAggregatedArgs(usage_thresholds={"cpu": 50},
                                          usage_aggregation_type="p95",
                                          usage_aggregated_duration=window)))
    status = run_filter(plugin, handle, make_pod("p", requests=INCOMING))
    assert status == (None if want is None else unschedulable(want))


def test_aggregated_without_type_uses_usage_thresholds():
    plugin, handle = new_plugin([NODE], [AGGREGATED_METRIC], usage_thresholds={"cpu": 5},
                                aggregated=LoadAwareSchedulingAggregatedArgs(
                                    usage_thresholds={"cpu": 50}))
    assert run_filter(plugin, handle, make_pod("p")) == \
        unschedulable("node(s) cpu usage exceed threshold")


def test_aggregated_score():
    plugin, handle = new_plugin([NODE], [AGGREGATED_METRIC], resource_weights={"cpu": 1},
                                aggregated=LoadAwareSchedulingAggregatedArgs(
                                    score_aggregation_type="p95",
                                    score_aggregated_duration=300.0))
    assert run_score(plugin, handle, make_pod("p", requests=INCOMING)) == 19  # 80850 used
    # A window the metric lacks: the sum of estimates only (here just the incoming pod).
    plugin, handle = new_plugin([NODE], [AGGREGATED_METRIC], resource_weights={"cpu": 1},
                                aggregated=LoadAwareSchedulingAggregatedArgs(
                                    score_aggregation_type="p95",
                                    score_aggregated_duration=600.0))
    assert run_score(plugin, handle, make_pod("p", requests=INCOMING)) == 99


def annotated_node(value: str) -> dict[str, Any]:
    return make_node("n1", cpu="100", memory="100Gi",
                     annotations={ANNOTATION_CUSTOM_USAGE_THRESHOLDS: value})


@pytest.mark.parametrize("annotation,cpu_milli,mem_gi,want", [
    # The node's usageThresholds replace the whole group: cpu is no longer limited.
    ('{"usageThresholds": {"memory": 50}}', 90_000, 10, None),
    ('{"usageThresholds": {"memory": 50}}', 10_000, 60, "node(s) memory usage exceed threshold"),
    # A malformed annotation is ignored: the args' cpu 65% applies.
    ('{"usageThresholds": ', 90_000, 10, "node(s) cpu usage exceed threshold"),
    # Setting only prod thresholds keeps the args' usage thresholds (for this batch pod).
    ('{"prodUsageThresholds": {"cpu": 10}}', 90_000, 10, "node(s) cpu usage exceed threshold"),
    # An aggregated group without a type is ignored.
    ('{"aggregatedUsage": {"usageThresholds": {"cpu": 5}}}', 10_000, 10, None),
    ('{"aggregatedUsage": {"usageThresholds": {"cpu": 70}, "usageAggregationType": "p95",'
     ' "usageAggregatedDuration": "5m"}}', 10_000, 10,
     "node(s) cpu aggregated usage exceed threshold"),
    # Resources outside the plugin's vector are ignored.
    ('{"usageThresholds": {"nvidia.com/gpu": 1}}', 90_000, 10, None),
])
def test_node_annotation_thresholds(annotation, cpu_milli, mem_gi, want):
    metric = make_metric("n1", usage=usage_of(cpu_milli, mem_gi),
                         aggregated={("p95", 300): {"cpu": "80"}})
    plugin, handle = new_plugin([annotated_node(annotation)], [metric])
    status = run_filter(plugin, handle,
                        make_pod("p", requests=INCOMING, priority_class="koord-batch"))
    assert status == (None if want is None else unschedulable(want))


def test_annotated_node_is_judged_among_others():
    nodes = [make_node("a", cpu="100", memory="100Gi"),
             make_node("b", cpu="100", memory="100Gi",
                       annotations={ANNOTATION_CUSTOM_USAGE_THRESHOLDS:
                                    '{"usageThresholds": {"cpu": 95}}'}),
             make_node("c", cpu="100", memory="100Gi")]
    metrics = [make_metric(n, usage=usage_of(c)) for n, c in (("a", 90_000), ("b", 90_000),
                                                             ("c", 10_000))]
    plugin, handle = new_plugin(nodes, metrics)
    mask = plugin.filter_nodes(CycleState(), PodInfo(make_pod("p")), handle.snapshot)
    assert mask.tolist() == [False, True, True]


def test_assigned_pods_add_their_estimates():
    # Usage 60%; a pod scheduled 30 s ago and not yet reported adds its 0.85 cores per pod.
    assigned = [make_pod(f"a{i}", node="n1", requests=INCOMING, scheduled_at=NOW - 30)
                for i in range(5)]
    plugin, handle = new_plugin([NODE], [make_metric("n1", usage=usage_of(60_000))], assigned)
    # 60000 + 5*850 + 850 = 65100 → 65%: passes; one more pod tips it over.
    assert run_filter(plugin, handle, make_pod("p", requests=INCOMING)) is None
    plugin.cache.on_pod_add(make_pod("a5", node="n1", requests=INCOMING, scheduled_at=NOW - 30))
    assert run_filter(plugin, handle, make_pod("p", requests=INCOMING)) == unschedulable(OVER)


def test_reserve_counts_the_pod_until_unreserved_or_forgotten():
    plugin, handle = new_plugin([NODE], [make_metric("n1", usage=usage_of(64_000))])
    incoming = make_pod("p", requests=INCOMING)
    assert run_filter(plugin, handle, incoming) is None  # 64850 → 65%
    first = PodInfo(make_pod("first", requests=INCOMING)).with_node("n1")
    plugin.reserve(CycleState(), first, "n1")
    assert run_filter(plugin, handle, incoming) == unschedulable(OVER)  # 65700 → 66%
    plugin.unreserve(CycleState(), first, "n1")
    assert run_filter(plugin, handle, incoming) is None
    plugin.reserve(CycleState(), first, "n1")
    plugin.forget_pod(first)
    assert run_filter(plugin, handle, incoming) is None


@pytest.mark.parametrize("weights,dominant,want", [
    # cpu 61% used → 39, memory 10% used → 90 (incoming pod included).
    ({"cpu": 1, "memory": 1}, 0, (39 + 90) // 2),
    ({"cpu": 1, "memory": 1}, 2, (39 + 90 + 2 * 39) // 4),
    # Weights are not defaulted when a dominant weight is set; the minimum covers every
    # resource of the vector, weighted or not.
    ({}, 1, 39),
    ({"memory": 1}, 1, (90 + 39) // 2),
])
def test_dominant_resource_weight(weights, dominant, want):
    plugin, handle = new_plugin([NODE], [make_metric("n1", usage=usage_of(60_150, 9.3))],
                                resource_weights=weights, dominant_resource_weight=dominant)
    assert run_score(plugin, handle, make_pod("p", requests=INCOMING)) == want


def test_events_to_register():
    plugin, _ = new_plugin()
    regs = [r.event for r in plugin.events_to_register()]
    assert any(r.match(ev.ASSIGNED_POD_DELETE) for r in regs)
    assert not any(r.match(ev.ASSIGNED_POD_ADD) for r in regs)
    for action in (ev.ActionType.ADD, ev.ActionType.UPDATE, ev.ActionType.DELETE):
        assert any(r.match(ev.ClusterEvent("nodemetrics.v1alpha1.slo.koordinator.sh", action))
                   for r in regs)


class _Factory:
    """An informer factory over in-memory sources, one per resource."""

    def __init__(self) -> None:
        self.sources: dict[str, FakeListerWatcher] = {}
        self.informers: dict[str, SharedInformer] = {}

    def informer_for(self, resource: Resource, typed: bool | None = None) -> SharedInformer:
        key = str(resource)
        if key not in self.informers:
            src = self.sources[key] = FakeListerWatcher()
            self.informers[key] = SharedInformer(src, name=key,
                                                 namespaced=resource.namespaced)
        return self.informers[key]


def test_inputs_come_from_the_informers():
    factory = _Factory()
    handle = new_handle(snapshot=snapshot_of([NODE]), clock=FakeClock(NOW),
                        informer_factory=factory)
    plugin = LoadAwareScheduling(None, handle)
    metrics, pods = factory.sources[str(NODE_METRICS)], factory.sources[str(PODS)]
    for inf in factory.informers.values():
        inf.start()
    try:
        pod = make_pod("p", requests=INCOMING)
        metrics.add(make_metric("n1", usage=usage_of(64_000)))
        assert _eventually(lambda: run_filter(plugin, handle, pod) is None
                           and run_score(plugin, handle, pod) > 0)
        pods.add(make_pod("a", node="n1", requests=INCOMING, scheduled_at=NOW))
        assert _eventually(lambda: run_filter(plugin, handle, pod) == unschedulable(OVER))
        pods.delete("default/a")
        assert _eventually(lambda: run_filter(plugin, handle, pod) is None)
        metrics.modify(make_metric("n1", usage=usage_of(90_000)))
        assert _eventually(lambda: run_filter(plugin, handle, pod) == unschedulable(OVER))
        metrics.delete("n1")
        assert _eventually(lambda: run_score(plugin, handle, pod) == 0)
    finally:
        for inf in factory.informers.values():
            inf.stop()


def _eventually(check: Any, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return False


def test_invalid_args_are_refused():
    with pytest.raises(ValueError, match="resourceWeights"):
        new_plugin(resource_weights={"cpu": 101})


@pytest.mark.parametrize(("cpu", "problem"), [
    ("1e30", "cpu quantity '1e30' is beyond Kubernetes' int64 range"),
    ("NaN", "cpu quantity 'NaN' is not a finite quantity"),
    ("-4", "cpu quantity '-4' is negative"),
])
@pytest.mark.parametrize("where", ["node", "pod"])
def test_an_untrusted_node_metric_counts_as_missing(cpu, problem, where):
    # A NodeMetric with cpu 1e30 (node or pod usage) raised OverflowError in the informer
    # handler; now the node is judged as one without a NodeMetric, and the NodeMetric is named.
    recorder = FakeRecorder()
    usage = {"cpu": cpu, "memory": "10Gi"}
    metric = (make_metric("n1", usage=usage) if where == "node" else
              make_metric("n1", usage=usage_of(1_000), pods=[("default/a", usage, "")]))
    plugin, handle = new_plugin([NODE], [metric], recorder=recorder)
    pod = make_pod("p", requests=INCOMING)
    assert run_filter(plugin, handle, pod) is None
    assert run_score(plugin, handle, pod) == 0
    ((name, _related, type_, reason, _action, message),) = recorder.events
    assert (name, type_, reason) == ("n1", "Warning", "InvalidNodeMetric")
    assert "NodeMetric n1" in message and problem in message
    # A good report afterwards is used again.
    plugin.cache.set_node_metric(make_metric("n1", usage=usage_of(90_000)))
    assert run_filter(plugin, handle, pod) == unschedulable(OVER)


@pytest.mark.parametrize("cpu", ["9223372036854775807m", "9000000000000000", "100000"])
def test_usage_far_above_allocatable_fails_the_threshold_and_scores_zero(cpu):
    # Within int64 but beyond any node: no int64 wrap-around makes the node look idle.
    plugin, handle = new_plugin([NODE], [make_metric("n1", usage={"cpu": cpu, "memory": "1Gi"})],
                                assigned=[make_pod("a", node="n1", requests={"cpu": "1E"})],
                                resource_weights={"cpu": 1})
    pod = make_pod("p", requests={"cpu": "1E", "memory": "1Gi"})
    assert run_filter(plugin, handle, pod) == unschedulable(OVER)
    assert run_score(plugin, handle, pod) == 0
