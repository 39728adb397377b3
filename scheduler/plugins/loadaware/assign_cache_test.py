from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from api.extension.load_aware import (
    ANNOTATION_CUSTOM_ESTIMATED_SECONDS_AFTER_INITIALIZED,
    ANNOTATION_CUSTOM_ESTIMATED_SECONDS_AFTER_POD_SCHEDULED,
)
from pkg.client.informers.store import DeletedFinalStateUnknown
from pkg.util.clock import FakeClock
from scheduler.apis.config import LoadAwareSchedulingArgs
from scheduler.apis.config.koord_args import LoadAwareSchedulingAggregatedArgs
from scheduler.plugins.loadaware.assign_cache import ANNOTATION_RESERVE_POD, PodAssignCache
from scheduler.plugins.loadaware.estimator import new_estimator
from scheduler.plugins.loadaware.nodeload import NODE_USAGE, PROD_USAGE, aggregated_usage
from scheduler.plugins.loadaware.testing import NOW, make_metric, make_pod
from scheduler.plugins.loadaware.vector import ResourceVectorizer

GI = 1024**3
# A 1 cpu / 1Gi pod with the default factors.
E_CPU, E_MEM = 850, round(GI * 0.7)
RES = {"cpu": "1", "memory": "1Gi"}


def new_cache(**args: Any) -> tuple[PodAssignCache, FakeClock]:
    a = LoadAwareSchedulingArgs(**args)
    clock = FakeClock(NOW)
    return PodAssignCache(ResourceVectorizer.from_args(a), new_estimator(a), a, clock), clock


def existing(cache: PodAssignCache, source: Any = NODE_USAGE) -> list[int] | None:
    _, vec = cache.existing("n1", source)
    return None if vec is None else vec.tolist()


def pod(name: str = "p", **kw: Any) -> dict[str, Any]:
    kw.setdefault("requests", RES)
    return make_pod(name, node="n1", **kw)


# updateTime NOW-10s, report interval 60s: pods scheduled after NOW-70s may be missing from it.
@pytest.mark.parametrize("case,pod_kw,reported,args,want_cpu", [
    ("not reported: full estimate", {"scheduled_at": NOW - 3600}, None, {}, 1000 + E_CPU),
    ("reported, scheduled within the report interval: estimate minus usage",
     {"scheduled_at": NOW - 30}, "300m", {}, 1000 + E_CPU - 300),
    ("reported above the estimate: nothing more", {"scheduled_at": NOW - 30}, "2", {}, 1000),
    ("reported, scheduled long before: the usage covers it",
     {"scheduled_at": NOW - 3600}, "300m", {}, 1000),
    ("no PodScheduled condition: timestamped now, so estimated",
     {}, "300m", {}, 1000 + E_CPU - 300),
    ("estimation deadline after the update: still estimated",
     {"scheduled_at": NOW - 3600}, "300m", {"estimated_seconds_after_pod_scheduled": 3600},
     1000 + E_CPU - 300),
    ("estimation deadline before the update", {"scheduled_at": NOW - 3600}, "300m",
     {"estimated_seconds_after_pod_scheduled": 60}, 1000),
    ("initialized deadline wins over the scheduled one",
     {"scheduled_at": NOW - 3600, "initialized_at": NOW - 100}, "300m",
     {"estimated_seconds_after_pod_scheduled": 7200, "estimated_seconds_after_initialized": 60},
     1000),
    ("initialized deadline after the update",
     {"scheduled_at": NOW - 3600, "initialized_at": NOW - 100}, "300m",
     {"estimated_seconds_after_initialized": 200}, 1000 + E_CPU - 300),
    ("pod annotation deadline, customisation allowed",
     {"scheduled_at": NOW - 3600, "annotations": {
         ANNOTATION_CUSTOM_ESTIMATED_SECONDS_AFTER_POD_SCHEDULED: "7200"}}, "300m",
     {"allow_customize_estimation": True}, 1000 + E_CPU - 300),
    ("pod annotation deadline ignored without customisation",
     {"scheduled_at": NOW - 3600, "annotations": {
         ANNOTATION_CUSTOM_ESTIMATED_SECONDS_AFTER_POD_SCHEDULED: "7200"}}, "300m", {}, 1000),
    ("pod annotation initialized deadline",
     {"scheduled_at": NOW - 3600, "initialized_at": NOW - 100, "annotations": {
         ANNOTATION_CUSTOM_ESTIMATED_SECONDS_AFTER_INITIALIZED: "300"}}, "300m",
     {"allow_customize_estimation": True}, 1000 + E_CPU - 300),
])
def test_must_estimate_rule(case, pod_kw, reported, args, want_cpu):
    cache, _ = new_cache(**args)
    reports = [("default/p", {"cpu": reported}, "koord-batch")] if reported else []
    cache.set_node_metric(make_metric("n1", update_time=NOW - 10, usage={"cpu": "1"},
                                      pods=reports, report_interval=60))
    cache.on_pod_add(pod(**pod_kw))
    assert existing(cache)[0] == want_cpu, case


def test_metric_arriving_after_the_pods_accounts_for_them():
    cache, _ = new_cache()
    cache.on_pod_add(pod(scheduled_at=NOW - 5))
    assert existing(cache) is None  # no NodeMetric: the node is not judged
    cache.set_node_metric(make_metric("n1", usage={"cpu": "1", "memory": "1Gi"}))
    assert existing(cache) == [1000 + E_CPU, GI + E_MEM]


def test_report_interval_defaults_to_a_minute():
    cache, _ = new_cache()
    cache.set_node_metric(make_metric("n1", update_time=NOW, usage={"cpu": "1"},
                                      pods=[("default/p", {"cpu": "100m"}, "koord-batch")]))
    cache.on_pod_add(pod(scheduled_at=NOW - 59))
    assert existing(cache)[0] == 1000 + E_CPU - 100
    cache.on_pod_update(None, pod(scheduled_at=NOW - 61))
    assert existing(cache)[0] == 1000


def test_pod_leaves_on_delete_termination_and_move():
    cache, _ = new_cache()
    cache.set_node_metric(make_metric("n1", usage={"cpu": "1"}))
    cache.set_node_metric(make_metric("n2", usage={"cpu": "1"}))
    p = pod()
    cache.on_pod_add(p)
    assert existing(cache)[0] == 1000 + E_CPU
    cache.on_pod_update(p, {**p, "status": {"phase": "Succeeded"}})
    assert existing(cache)[0] == 1000
    cache.on_pod_add(p)
    moved = {**p, "spec": {**p["spec"], "nodeName": "n2"}}
    cache.on_pod_update(p, moved)
    assert existing(cache)[0] == 1000
    assert cache.existing("n2", NODE_USAGE)[1][0] == 1000 + E_CPU
    cache.on_pod_delete(DeletedFinalStateUnknown("default/p", moved))
    assert cache.existing("n2", NODE_USAGE)[1][0] == 1000


def test_unchanged_update_keeps_the_timestamp_and_a_new_spec_renews_it():
    cache, clock = new_cache()
    cache.set_node_metric(make_metric("n1", update_time=NOW + 100, usage={"cpu": "1"},
                                      pods=[("default/p", {"cpu": "100m"}, "koord-batch")]))
    p = pod()  # no PodScheduled: stamped NOW, before the report interval ending at NOW+100
    cache.on_pod_add(p)
    assert existing(cache)[0] == 1000
    clock.step(3600)
    cache.on_pod_update(p, dict(p))
    assert existing(cache)[0] == 1000
    bigger = pod(requests={"cpu": "2", "memory": "1Gi"})
    cache.on_pod_update(p, bigger)  # re-stamped an hour later: the report may lack it
    assert existing(cache)[0] == 1000 + 1700 - 100


def test_terminated_unassigned_and_reserve_pods_are_not_counted():
    cache, _ = new_cache()
    cache.set_node_metric(make_metric("n1", usage={"cpu": "1"}))
    cache.on_pod_add(pod("done", phase="Failed"))
    cache.on_pod_add(make_pod("pending", requests=RES))
    cache.on_pod_add(pod("reserve", annotations={ANNOTATION_RESERVE_POD: "true"}))
    assert existing(cache)[0] == 1000


def test_pod_with_zero_estimate_is_not_counted_but_prod_usage_is():
    cache, _ = new_cache(prod_usage_thresholds={"cpu": 50})
    cache.set_node_metric(make_metric("n1", usage={"cpu": "1"},
                                      pods=[("default/p", {"cpu": "300m"}, "koord-prod")]))
    # A koord-free pod is estimated at 0 everywhere: it adds nothing.
    cache.on_pod_add(pod("free", priority_class="koord-free"))
    assert existing(cache) == [1000, 0]
    cache.on_pod_add(pod(priority_class="koord-prod", scheduled_at=NOW - 3600))
    assert existing(cache, PROD_USAGE) == [300, 0]


@pytest.mark.parametrize("case,claims,reported,want", [
    ("claims prod, reported prod: usage, no delta (old pod)", "koord-prod", "koord-prod",
     [300, GI // 2]),
    ("claims prod, reported otherwise: full estimate", "koord-prod", "koord-batch",
     [E_CPU, E_MEM]),
    ("does not claim prod: not in prod usage", "koord-batch", "koord-prod", [0, 0]),
])
def test_prod_usage(case, claims, reported, want):
    cache, _ = new_cache(prod_usage_thresholds={"cpu": 50})
    cache.set_node_metric(make_metric(
        "n1", usage={"cpu": "8"},
        pods=[("default/p", {"cpu": "300m", "memory": "512Mi"}, reported)]))
    cache.on_pod_add(pod(priority_class=claims, scheduled_at=NOW - 3600))
    assert existing(cache, PROD_USAGE) == want, case


def test_prod_usage_includes_system_usage_when_asked():
    for include, want in ((False, 300), (True, 300 + 200)):
        cache, _ = new_cache(prod_usage_include_sys=include)
        cache.set_node_metric(make_metric(
            "n1", usage={"cpu": "8"}, system_usage={"cpu": "200m"},
            pods=[("default/p", {"cpu": "300m"}, "koord-prod")]))
        cache.on_pod_add(pod(priority_class="koord-prod", scheduled_at=NOW - 3600))
        assert existing(cache, PROD_USAGE)[0] == want


def test_aggregated_usage_windows():
    cache, _ = new_cache(aggregated=LoadAwareSchedulingAggregatedArgs(
        usage_thresholds={"cpu": 50}, usage_aggregation_type="p95",
        usage_aggregated_duration=300.0))
    cache.set_node_metric(make_metric("n1", usage={"cpu": "1"}, aggregated={
        ("p95", 300): {"cpu": "5"}, ("p95", 1800): {"cpu": "7"}, ("p50", 300): {"cpu": "3"}}))
    cache.on_pod_add(pod(scheduled_at=NOW - 30))  # estimated: adds 850m to any measured usage
    assert existing(cache, aggregated_usage("p95", 300))[0] == 5000 + E_CPU
    # Window 0: the longest one the metric reports for that type.
    assert existing(cache, aggregated_usage("p95", 0))[0] == 7000 + E_CPU
    assert existing(cache, aggregated_usage("p50", 0))[0] == 3000 + E_CPU
    # A type with no window at all falls back to the latest node usage...
    assert existing(cache, aggregated_usage("p99", 0))[0] == 1000 + E_CPU
    # ...but a window the metric lacks counts only the estimates of assigned pods.
    assert existing(cache, aggregated_usage("p95", 600)) == [E_CPU, E_MEM]


def test_metric_deletion_and_malformed_metric_drop_the_measurement():
    cache, _ = new_cache()
    cache.set_node_metric(make_metric("n1", usage={"cpu": "1"}))
    cache.delete_node_metric("n1")
    assert existing(cache) is None and "n1" not in cache.nodes
    cache.set_node_metric(make_metric("n1", usage={"cpu": "1"}))
    cache.set_node_metric(make_metric("n1", usage={"cpu": "one"}))
    assert existing(cache) is None


def test_changes_mark_their_node_dirty():
    cache, _ = new_cache()
    cache.set_node_metric(make_metric("n1", usage={"cpu": "1"}))
    cache.assign("n2", make_pod("x", requests=RES), "uid-x")
    with cache.lock:
        assert cache.take_dirty() == {"n1", "n2"}
        assert cache.take_dirty() == set()


def test_binding_keeps_the_reserved_estimate_and_a_new_spec_estimates_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Reserve hands in the scheduler's estimate; the informer's update after binding (nodeName
    and PodScheduled set) keeps it and only moves the timestamp; a resized pod is estimated
    again."""
    cache, _ = new_cache()
    calls: list[str] = []
    estimate = cache.estimator.estimate_pod

    def counting(p: Mapping[str, Any]) -> dict[str, int]:
        calls.append(p["metadata"]["name"])
        return estimate(p)

    monkeypatch.setattr(cache.estimator, "estimate_pod", counting)
    reserved = make_pod("p", requests=RES)  # as the scheduler reserved it: no nodeName yet
    vec = cache.vectorizer.to_factor_vec(estimate(reserved))
    cache.assign_estimated("n1", reserved, "uid-p", vec, False)
    bound = pod("p", scheduled_at=NOW - 3600)
    cache.on_pod_update(reserved, bound)
    entry = cache.nodes["n1"].pods["uid-p"]
    assert calls == []
    assert entry.estimated is not None and entry.estimated.tolist() == [E_CPU, E_MEM]
    assert entry.timestamp == NOW - 3600  # from the PodScheduled condition now
    cache.on_pod_update(bound, bound)
    assert calls == []
    resized = pod("p", scheduled_at=NOW - 3600, requests={"cpu": "2", "memory": "1Gi"})
    cache.on_pod_update(bound, resized)
    entry = cache.nodes["n1"].pods["uid-p"]
    assert calls == ["p"]
    assert entry.estimated is not None and entry.estimated.tolist() == [2 * E_CPU, E_MEM]
