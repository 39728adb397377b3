"""The candidate filter and victim order of the priority-ordered evictors (upstream
`plugins/util/evict.go` and the sort of `memoryevict`/`cpuevict` for MemoryEvict, CPUEvict)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from api.extension.eviction import ANNOTATION_POD_EVICT_POLICY, ANNOTATION_POD_EVICTION_PRIORITY
from koordlet.metriccache.metric_cache import MetricCache
from koordlet.qosmanager.framework import Context, KubeDict
from koordlet.qosmanager.helpers import AnnotationWarnings, evictable_by_priority, priority_order
from koordlet.qosmanager.testing import FakeStates
from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.util.system.testing import fake_v2_tree
from pkg.features import koordlet_feature_gate
from pkg.util.clock import FakeClock

ENABLED = {"koordinator.sh/eviction-enabled": "true"}


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
