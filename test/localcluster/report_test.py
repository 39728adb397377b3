"""The local cluster's report reads koord-scheduler's events.k8s.io Events through the core/v1
view: occurrences counted from ``series``, the latest FailedScheduling message by
``series.lastObservedTime``/``eventTime``."""

from __future__ import annotations

from typing import Any

from test.localcluster.report import build, render_text
from test.localcluster.workload import LABEL_GROUP, LABEL_KIND


def _pod(name: str, node: str = "") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "colo",
                         "labels": {LABEL_KIND: "web", LABEL_GROUP: "web"}},
            "spec": {"nodeName": node} if node else {}, "status": {}}


def _event(pod: str, reason: str, message: str, event_time: str,
           series: dict[str, Any] | None = None) -> dict[str, Any]:
    """An Event koord-scheduler wrote through events.k8s.io/v1, as core/v1 lists it (no
    count or lastTimestamp)."""
    e: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Event", "reason": reason, "message": message,
        "type": "Warning" if reason == "FailedScheduling" else "Normal",
        "involvedObject": {"kind": "Pod", "namespace": "colo", "name": pod},
        "eventTime": event_time, "reportingComponent": "koord-scheduler"}
    if series:
        e["series"] = series
    return e


def test_scheduler_events_with_series_are_counted_and_the_latest_message_wins() -> None:
    events = [
        _event("web-0", "FailedScheduling", "0/3 nodes are available: 3 Insufficient cpu.",
               "2026-01-01T00:00:00.000001Z",
               {"count": 3, "lastObservedTime": "2026-01-01T00:05:00.000000Z"}),
        _event("web-0", "FailedScheduling", "0/4 nodes are available: 4 Insufficient memory.",
               "2026-01-01T00:02:00.000000Z"),
        _event("web-1", "Scheduled", "Successfully assigned colo/web-1 to node-1",
               "2026-01-01T00:00:01.000000Z"),
    ]
    r = build("colo", 3, 60.0, 10.0, [], [_pod("web-0"), _pod("web-1", "node-1")], events,
              2, 0)
    assert r.scheduled_events == 1
    assert r.failed_scheduling_events == 4
    assert r.pending == [{"pod": "colo/web-0", "group": "web",
                          "reason": "0/3 nodes are available: 3 Insufficient cpu."}]
    assert "1 Scheduled, 4 FailedScheduling events" in render_text(r)
