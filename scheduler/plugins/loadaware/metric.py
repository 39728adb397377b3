"""A NodeMetric reduced to the vectors the plugin reads.

Corresponds to the NodeMetric half of koordinator ``pkg/scheduler/plugins/loadaware``
``pod_assign_cache.go`` (``nodeInfo.AddOrUpdateNodeMetric``) and ``getNodeMetricReportInterval``
in ``helper.go``. Objects are the parsed JSON dicts of ``slo.koordinator.sh/v1alpha1``
NodeMetrics (``api/slo/v1alpha1/nodemetric.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from api.extension.priority import PriorityClass
from api.meta import parse_duration, parse_time
from scheduler.plugins.loadaware.vector import ResourceVectorizer, Vector

# koordlet's default reporting period when the spec does not say.
DEFAULT_NODE_METRIC_REPORT_INTERVAL = 60.0


def duration_key(seconds: float) -> int:
    """A duration as integer nanoseconds, so equal durations compare equal."""
    return round(seconds * 1e9)


def timestamp(value: str | None) -> float | None:
    """An RFC 3339 time as epoch seconds; None when missing or malformed."""
    if not value:
        return None
    try:
        return parse_time(value).timestamp()
    except ValueError:
        return None


@dataclass(slots=True)
class MetricSummary:
    """What the plugin keeps of one NodeMetric."""

    update_time: float | None = None  # epoch seconds; None: never reported
    report_interval: float = DEFAULT_NODE_METRIC_REPORT_INTERVAL
    # status.nodeMetric is present (without it the node passes Filter and scores 0).
    has_node_metric: bool = False
    node_usage: Vector | None = None
    system_usage: Vector | None = None
    # (aggregation type, duration ns) → usage; duration 0 is the longest non-empty one.
    aggregated: dict[tuple[str, int], Vector] = field(default_factory=dict)
    # namespace/name → usage, for pods reported with a non-empty usage.
    pod_usages: dict[str, Vector] = field(default_factory=dict)
    # Pods koordlet reports as koord-prod.
    prod_pods: set[str] = field(default_factory=set)


def summarize(metric: Mapping[str, Any], vectorizer: ResourceVectorizer) -> MetricSummary:
    """Raises ValueError for a malformed quantity or duration (the object would not decode)."""
    spec = metric.get("spec") or {}
    status = metric.get("status") or {}
    out = MetricSummary(update_time=timestamp(status.get("updateTime")))
    interval = (spec.get("metricCollectPolicy") or {}).get("reportIntervalSeconds")
    if interval is not None:
        out.report_interval = float(interval)
    info = status.get("nodeMetric")
    if info is not None:
        out.has_node_metric = True
        out.node_usage = vectorizer.to_vec((info.get("nodeUsage") or {}).get("resources"))
        out.system_usage = vectorizer.to_vec((info.get("systemUsage") or {}).get("resources"))
        out.aggregated = _aggregated(info.get("aggregatedNodeUsages") or (), vectorizer)
    for pm in status.get("podsMetric") or ():
        resources = ((pm or {}).get("podUsage") or {}).get("resources")
        if not resources:
            continue
        key = f"{pm.get('namespace') or ''}/{pm.get('name') or ''}"
        out.pod_usages[key] = vectorizer.to_vec(resources)
        if pm.get("priority") == PriorityClass.PROD:
            out.prod_pods.add(key)
    return out


def _aggregated(entries: Any, vectorizer: ResourceVectorizer) -> dict[tuple[str, int], Vector]:
    out: dict[tuple[str, int], Vector] = {}
    longest: dict[str, int] = {}
    for entry in entries:
        d = duration_key(parse_duration(entry.get("duration") or "0s"))
        for kind, usage in (entry.get("usage") or {}).items():
            resources = (usage or {}).get("resources")
            if not resources:
                continue
            out[(kind, d)] = vectorizer.to_vec(resources)
            if d > longest.get(kind, 0):
                longest[kind] = d
    for kind, d in longest.items():
        out[(kind, 0)] = out[(kind, d)]
    return out
