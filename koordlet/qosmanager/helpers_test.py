"""The candidate filter and victim order of the priority-ordered evictors (upstream
`plugins/util/evict.go` and the sort of `memoryevict`/`cpuevict` for MemoryEvict, CPUEvict), and
the request arithmetic of the allocatable ones."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from api.extension.eviction import ANNOTATION_POD_EVICT_POLICY, ANNOTATION_POD_EVICTION_PRIORITY
from api.extension.priority import PriorityClass
from api.extension.resource import BATCH_CPU, BATCH_MEMORY, MID_CPU, MID_MEMORY
from koordlet.metriccache.metric_cache import MetricCache
from koordlet.qosmanager.framework import Context, KubeDict
from koordlet.qosmanager.helpers import (
    AnnotationWarnings,
    allocatable_release,
    class_request,
    evictable_by_priority,
    priority_order,
    released_classes,
)
from koordlet.qosmanager.testing import FakeStates
from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.util.system.testing import fake_v2_tree
from pkg.features import koordlet_feature_gate
from pkg.util.clock import FakeClock

ENABLED = {"koordinator.sh/eviction-enabled": "true"}
GI = 1 << 30


def _pod(name: str, priority: int | None = 5000, labels: dict[str, str] | None = None,
         annotations: dict[str, str] | None = None, **metadata: str) -> KubeDict:
    spec = {} if priority is None else {"priority": priority}
    return {
        "metadata": {"name": name, "namespace": "default", "uid": name,
                     "labels": {**ENABLED, **(labels or {})},
                     "annotations": annotations or {}, **metadata},
        "spec": spec,
        "status": {"phase": "Running"},
    }


@pytest.fixture
def warnings(tmp_path: Path) -> AnnotationWarnings:
    ctx = Context(env=fake_v2_tree(tmp_path, ["kubepods.slice"]),
                  executor=ResourceUpdateExecutor(FakeClock(0.0)), metric_cache=MetricCache(),
                  states=FakeStates(), feature_gate=koordlet_feature_gate.copy())
    return AnnotationWarnings(ctx, "memoryEvict")


def test_order_eviction_priority_then_priority_then_priority_label_then_larger_amount(
    warnings: AnnotationWarnings, caplog: pytest.LogCaptureFixture,
) -> None:
    victims = [
        (_pod("plain"), 1),
        (_pod("eviction-priority-first", annotations={ANNOTATION_POD_EVICTION_PRIORITY: "-1"}),
         1),
        (_pod("eviction-priority-last", 100, annotations={ANNOTATION_POD_EVICTION_PRIORITY: "5"}),
         9),
        (_pod("lower-priority", 4000), 1),
        # the label counts against the priority of the others (missing label = priority)
        (_pod("priority-label-10", labels={"koordinator.sh/priority": "10"}), 1),
        (_pod("priority-label-bad-more-used", labels={"koordinator.sh/priority": "x"}), 9),
        (_pod("eviction-priority-bad", annotations={ANNOTATION_POD_EVICTION_PRIORITY: "x"}), 3),
    ]
    with caplog.at_level(logging.WARNING, logger="koordlet.qosmanager.helpers"):
        order = [pod["metadata"]["name"] for pod, _ in priority_order(victims, warnings)]
        priority_order(victims, warnings)  # a second round says nothing new
    assert order == [
        "eviction-priority-first", "lower-priority", "priority-label-10",
        "priority-label-bad-more-used", "eviction-priority-bad", "plain",
        "eviction-priority-last",
    ]
    malformed = [r for r in caplog.records if ANNOTATION_POD_EVICTION_PRIORITY in r.getMessage()]
    assert len(malformed) == 1 and "default/eviction-priority-bad" in malformed[0].getMessage()


@pytest.mark.parametrize(("pod", "expected"), [
    (_pod("opted-in"), True),
    (_pod("at-threshold", 5999), True),
    (_pod("above-threshold", 6000), False),
    # no spec.priority: the class default (BE → batch, 5500)
    (_pod("be-default", None, labels={"koordinator.sh/qosClass": "BE"}), True),
    (_pod("ls-default", None, labels={"koordinator.sh/qosClass": "LS"}), False),
    (_pod("label-not-exactly-true", labels={"koordinator.sh/eviction-enabled": "True"}), False),
    (_pod("policy-names-it", annotations={ANNOTATION_POD_EVICT_POLICY: '["MemoryEvict"]'}),
     True),
    (_pod("policy-names-another",
          annotations={ANNOTATION_POD_EVICT_POLICY: '["BEMemoryEvict"]'}), False),
    (_pod("policy-malformed", annotations={ANNOTATION_POD_EVICT_POLICY: "MemoryEvict"}), False),
    (_pod("terminating", deletionTimestamp="2026-01-01T00:00:00Z"), False),
], ids=lambda v: v["metadata"]["name"] if isinstance(v, dict) else None)
def test_candidates(pod: KubeDict, expected: bool) -> None:
    assert evictable_by_priority(pod, "MemoryEvict", 5999) is expected


def test_no_eviction_enabled_label_is_no_candidate() -> None:
    pod = _pod("not-opted-in")
    del pod["metadata"]["labels"]["koordinator.sh/eviction-enabled"]
    assert not evictable_by_priority(pod, "MemoryEvict", 5999)


# The allocatable evictors' release (upstream cpu_evict_test.go
# Test_calculateMilliReleaseByAllocatableThresholdPercent, memory_evict_test.go Test_memoryEvict).
@pytest.mark.parametrize(("requested", "allocatable", "threshold", "lower", "release"), [
    pytest.param({BATCH_CPU: 0}, {BATCH_CPU: 100}, 80, 70, {}, id="not-exceeded"),
    pytest.param({BATCH_CPU: 85000}, {BATCH_CPU: 100000}, 80, 70, {BATCH_CPU: 15000},
                 id="batch-cpu-down-to-lower"),
    pytest.param({BATCH_CPU: 85000, MID_CPU: 85000}, {BATCH_CPU: 100000, MID_CPU: 100000},
                 80, 70, {BATCH_CPU: 15000, MID_CPU: 15000}, id="mixed-priority"),
    pytest.param({BATCH_CPU: 85000}, {BATCH_CPU: 100000}, 0, 0, {BATCH_CPU: 85000},
                 id="threshold-0-releases-all"),
    pytest.param({BATCH_CPU: 85000}, {"cpu": 80000}, 80, 70, {BATCH_CPU: 85000},
                 id="node-without-the-resource-releases-all"),
    pytest.param({BATCH_MEMORY: 50 * GI}, {BATCH_MEMORY: 100 * GI}, 45, 40,
                 {BATCH_MEMORY: 10 * GI}, id="batch-memory"),
    pytest.param({BATCH_MEMORY: 45 * GI}, {BATCH_MEMORY: 100 * GI}, 45, 40, {},
                 id="at-threshold-is-not-over"),
])
def test_allocatable_release(requested: dict[str, int], allocatable: dict[str, int],
                             threshold: int, lower: int, release: dict[str, int]) -> None:
    assert allocatable_release(requested, allocatable, threshold, lower) == release


def _requesting(priority: int, qos: str, requests: dict[str, str],
                priority_class: str | None = None) -> KubeDict:
    labels = {"koordinator.sh/qosClass": qos}
    if priority_class:
        labels["koordinator.sh/priority-class"] = priority_class
    return {"metadata": {"name": "p", "labels": labels},
            "spec": {"priority": priority,
                     "containers": [{"name": "c", "resources": {"requests": requests}}]}}


def test_class_request_counts_what_the_pod_class_requests() -> None:
    both = {"cpu": "85", "memory": "1Gi", MID_CPU: "85000", MID_MEMORY: "2Gi",
            BATCH_CPU: "3000", BATCH_MEMORY: "3Gi"}
    assert class_request(_requesting(7000, "LS", both), "cpu") == (MID_CPU, 85000)
    assert class_request(_requesting(7000, "LS", both), "memory") == (MID_MEMORY, 2 * GI)
    assert class_request(_requesting(5000, "BE", both), "cpu") == (BATCH_CPU, 3000)
    # prod, free and no class count the native resource (cpu in milli)
    assert class_request(_requesting(9000, "LS", both), "cpu") == ("cpu", 85000)
    assert class_request(_requesting(3500, "BE", both), "memory") == ("memory", GI)
    # no class from spec.priority: the QoS decides (BE → batch)
    assert class_request(_requesting(100, "BE", both), "cpu") == (BATCH_CPU, 3000)
    assert class_request(_requesting(5000, "BE", {}), "memory") == (BATCH_MEMORY, 0)


def test_released_classes_only_mid_and_batch_resources_name_one() -> None:
    assert released_classes({BATCH_CPU: 1, MID_MEMORY: 1}) == {
        PriorityClass.BATCH, PriorityClass.MID}
    assert released_classes({"cpu": 1, "memory": 1}) == frozenset()
