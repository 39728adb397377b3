"""Conversion between core/v1 Event and events.k8s.io/v1 Event, which share one storage.

Corresponds to upstream ``pkg/apis/events/v1/conversion.go``: events are stored in the core
form; the events.k8s.io view renames fields (``regarding`` <-> ``involvedObject``, ``note``
<-> ``message``, ``reportingController`` <-> ``reportingComponent``, ``deprecated*``).
"""

from __future__ import annotations

from typing import Any

# (events.k8s.io/v1 name, core/v1 name)
_RENAMES = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
]


def to_core(obj: dict[str, Any]) -> dict[str, Any]:
    out = dict(obj)
    out["apiVersion"] = "v1"
    out["kind"] = "Event"
    for new, old in _RENAMES:
        if new in out:
            out[old] = out.pop(new)
    if "involvedObject" not in out:
        out["involvedObject"] = {}
    return out


def from_core(obj: dict[str, Any]) -> dict[str, Any]:
    out = dict(obj)
    out["apiVersion"] = "events.k8s.io/v1"
    out["kind"] = "Event"
    for new, old in _RENAMES:
        if old in out:
            out[new] = out.pop(old)
    return out
