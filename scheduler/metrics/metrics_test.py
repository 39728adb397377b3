"""Tests of the scheduler metrics: names, labels, buckets and the observe helpers."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from pkg.util.clock import FakeClock
from scheduler.framework.queue import QueuedPodInfo
from scheduler.framework.status import Code, Status
from scheduler.metrics.metrics import SchedulerMetrics, exponential_buckets


def test_exponential_buckets() -> None:
    assert exponential_buckets(1, 2, 5) == (1, 2, 4, 8, 16)
    b = exponential_buckets(0.00001, 1.5, 20)
    assert len(b) == 20 and b[0] == 0.00001 and b[-1] == pytest.approx(0.00001 * 1.5 ** 19)


def test_registries_are_independent_and_names_unique() -> None:
    r1 = CollectorRegistry()
    SchedulerMetrics(r1)
    SchedulerMetrics(CollectorRegistry())
    with pytest.raises(ValueError):
        SchedulerMetrics(r1)


def test_observe_attempt() -> None:
    r = CollectorRegistry()
    clock = FakeClock()
    m = SchedulerMetrics(r, clock)
    qpi = QueuedPodInfo({}, "ns/a", "u", timestamp=0.0, attempts=3,
                        initial_attempt_timestamp=clock.monotonic())
    clock.step(2.5)
    m.observe_attempt("unschedulable", "p", 0.003, qpi)
    m.observe_attempt("scheduled", "p", 0.02, qpi)
    assert r.get_sample_value("scheduler_schedule_attempts_total",
                              {"result": "unschedulable", "profile": "p"}) == 1
    assert r.get_sample_value("scheduler_schedule_attempts_total",
                              {"result": "scheduled", "profile": "p"}) == 1
    assert r.get_sample_value("scheduler_scheduling_attempt_duration_seconds_bucket",
                              {"result": "scheduled", "profile": "p", "le": "0.032"}) == 1
    assert r.get_sample_value("scheduler_scheduling_attempt_duration_seconds_bucket",
                              {"result": "scheduled", "profile": "p", "le": "0.016"}) == 0
    assert r.get_sample_value("scheduler_pod_scheduling_attempts_sum") == 3
    assert r.get_sample_value("scheduler_pod_scheduling_attempts_count") == 1
    assert r.get_sample_value("scheduler_pod_scheduling_sli_duration_seconds_sum",
                              {"attempts": "3"}) == 2.5
    qpi.attempts = 20
    m.observe_attempt("scheduled", "p", 0.02, qpi)
    assert r.get_sample_value("scheduler_pod_scheduling_sli_duration_seconds_count",
                              {"attempts": "15+"}) == 1


def test_observe_plugin_and_extension_point() -> None:
    r = CollectorRegistry()
    m = SchedulerMetrics(r)
    m.observe_plugin("NodeResourcesFit", "Filter", None, 0.0001)
    m.observe_plugin("NodeResourcesFit", "Filter", Status(Code.UNSCHEDULABLE, "no"), 0.0001)
    m.observe_extension_point("Filter", Status(Code.ERROR), "p", 0.001)
    for status in ("Success", "Unschedulable"):
        assert r.get_sample_value("scheduler_plugin_execution_duration_seconds_count",
                                  {"plugin": "NodeResourcesFit", "extension_point": "Filter",
                                   "status": status}) == 1
    assert r.get_sample_value("scheduler_framework_extension_point_duration_seconds_count",
                              {"extension_point": "Filter", "status": "Error",
                               "profile": "p"}) == 1


def test_upstream_names() -> None:
    r = CollectorRegistry()
    m = SchedulerMetrics(r)
    m.preemption_attempts.inc()
    m.preemption_victims.observe(3)
    m.cache_size.labels("nodes").set(5)
    m.pending_pods.labels("active").set(2)
    m.unschedulable_pods.labels("Fit", "p").inc()
    assert r.get_sample_value("scheduler_preemption_attempts_total") == 1
    assert r.get_sample_value("scheduler_preemption_victims_bucket", {"le": "4.0"}) == 1
    assert r.get_sample_value("scheduler_scheduler_cache_size", {"type": "nodes"}) == 5
    assert r.get_sample_value("scheduler_pending_pods", {"queue": "active"}) == 2
    assert r.get_sample_value("scheduler_unschedulable_pods",
                              {"plugin": "Fit", "profile": "p"}) == 1
