"""Why is my pod pending: the structured diagnosis of one failed scheduling attempt.

Corresponds to kube-scheduler's ``framework.Diagnosis`` and ``FitError`` (pkg/scheduler/
framework/types.go), whose message shape ("0/N nodes are available: ...") we keep exactly,
plus what upstream does not keep: for every Filter plugin, how many nodes it rejected and
why, and the *nearest miss* — the node that failed the fewest filters, with each failing
plugin's reasons and, where the plugin can say, by how much it missed. The scheduler keeps the
latest diagnosis per pending pod; it is served at ``/debug/pods/<ns>/<name>``
(``debug_pods_handler``) and printed by ``hack/koord explain pod NS/NAME``. Plugins that hold a
pod for reasons of their own (``frameworkext.interface.PodStateExplainer``; Coscheduling: the
pod's gang; ElasticQuota: the pod's quota path) add a section to its entry, and make one for a
pod they hold before any attempt (at PreEnqueue).
"""

from __future__ import annotations

import json
import threading
from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pkg.server.server import Handler
from scheduler.framework.interface import NodeToStatus
from scheduler.frameworkext.interface import PodState

NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"
# Diagnoses kept for pending pods (oldest dropped first).
MAX_DIAGNOSES = 10_000


@dataclass
class PluginRejections:
    nodes: int = 0
    reasons: Counter[str] = field(default_factory=Counter)

    def to_dict(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "reasons": dict(self.reasons.most_common())}


@dataclass
class NearestMiss:
    node: str
    failed_plugins: list[str]
    # plugin → reasons, and how far the node was (Filter plugins' explain()).
    reasons: dict[str, list[str]] = field(default_factory=dict)
    details: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "failedPlugins": self.failed_plugins,
                "reasons": self.reasons, "details": self.details}


@dataclass
class Diagnosis:
    node_to_status: NodeToStatus = field(default_factory=NodeToStatus)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""
    plugin_rejections: dict[str, PluginRejections] = field(default_factory=dict)
    nearest_miss: NearestMiss | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "unschedulablePlugins": sorted(self.unschedulable_plugins),
            "preFilterMessage": self.pre_filter_msg,
            "postFilterMessage": self.post_filter_msg,
            "pluginRejections": {k: v.to_dict() for k, v in self.plugin_rejections.items()},
            "nearestMiss": self.nearest_miss.to_dict() if self.nearest_miss else None,
        }


class FitError(Exception):
    """No node fits the pod (kube-scheduler's FitError); ``str()`` is upstream's message."""

    def __init__(self, pod_key: str, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        self.pod_key = pod_key
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis
        super().__init__(self.message())

    def message(self) -> str:
        d = self.diagnosis
        msg = NO_NODE_AVAILABLE_MSG.format(self.num_all_nodes) + ":"
        if d.pre_filter_msg:
            msg += f" {d.pre_filter_msg}."
        else:
            counts: Counter[str] = Counter()
            statuses = d.node_to_status.statuses
            for status in statuses.values():
                counts.update(status.reasons)
            absent = d.node_to_status.absent
            if absent is not None and len(statuses) < self.num_all_nodes:
                for reason in absent.reasons:
                    counts[reason] += self.num_all_nodes - len(statuses)
            histogram = sorted(f"{n} {reason}" for reason, n in counts.items())
            if histogram:
                msg += f" {', '.join(histogram)}."
        if d.post_filter_msg:
            msg += f" {d.post_filter_msg}."
        return msg


class PendingDiagnoses:
    """The latest failed attempt of each pending pod (the ``/debug/pods`` entries), by pod key.

    Written by the scheduling and binding threads, read by the debug server's.
    """

    def __init__(self, limit: int = MAX_DIAGNOSES) -> None:
        self._limit = limit
        self._entries: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def keep(self, key: str, entry: dict[str, Any]) -> None:
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > self._limit:
                self._entries.popitem(last=False)

    def forget(self, key: str) -> None:
        with self._lock:
            self._entries.pop(key, None)

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            return self._entries.get(key)

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._entries)


def with_states(key: str, entry: dict[str, Any] | None,
                states: Sequence[PodState]) -> dict[str, Any] | None:
    """The debug entry of ``key``: its last failed attempt's, if any, with each state's section
    and lines (``explain``); a pod held before any attempt gets an entry of its states."""
    if not states:
        return entry
    out: dict[str, Any] = dict(entry) if entry is not None else {
        "pod": key, "reason": "Unschedulable", "message": states[0].message,
        "nominatedNodeName": None, "time": None, "diagnosis": None}
    for state in states:
        out[state.section] = dict(state.data)
    out["explain"] = [line for state in states for line in state.lines]
    return out


def explain_text(pod_key: str, diagnosis: dict[str, Any], message: str = "",
                 states: Sequence[str] = ()) -> str:
    """A diagnosis (as served by the scheduler) in words, for the CLI; ``states`` are the
    entry's ``explain`` lines (the plugins' own, e.g. the pod's gang)."""
    lines = [f"Pod {pod_key} is pending."]
    if message:
        lines.append(f"  {message}")
    lines.extend(states)
    if diagnosis.get("preFilterMessage"):
        lines.append(f"  PreFilter: {diagnosis['preFilterMessage']}")
    rejections = diagnosis.get("pluginRejections") or {}
    if rejections:
        lines.append("Filter plugins that rejected nodes:")
        for plugin, r in rejections.items():
            reasons = "; ".join(f"{n}× {reason}" for reason, n in r["reasons"].items())
            lines.append(f"  {plugin}: {r['nodes']} node(s) — {reasons}")
    miss = diagnosis.get("nearestMiss")
    if miss:
        lines.append(f"Nearest miss: node {miss['node']} failed "
                     f"{len(miss['failedPlugins'])} filter(s): {', '.join(miss['failedPlugins'])}")
        for plugin in miss["failedPlugins"]:
            reasons = ", ".join(miss["reasons"].get(plugin, []))
            detail = miss["details"].get(plugin)
            lines.append(f"  {plugin}: {reasons}" + (f" ({detail})" if detail else ""))
    if diagnosis.get("postFilterMessage"):
        lines.append(f"PostFilter: {diagnosis['postFilterMessage']}")
    return "\n".join(lines)


class Diagnoses(Protocol):
    """The scheduler's latest diagnosis per pending pod."""

    def pending_diagnoses(self) -> list[str]: ...

    def diagnosis_of(self, key: str) -> dict[str, Any] | None: ...


def debug_pods_handler(diagnoses: Diagnoses) -> Handler:
    """``/debug/pods`` (the pending pods' keys) and ``/debug/pods/<ns>/<name>`` (one pod's
    diagnosis; 404 when it has none)."""

    def handle(query: dict[str, list[str]]) -> tuple[int, str, bytes]:
        key = query.get("__subpath__", [""])[0]
        if not key:
            keys = diagnoses.pending_diagnoses()
            return 200, "application/json", json.dumps({"pods": keys}).encode()
        entry = diagnoses.diagnosis_of(key)
        if entry is None:
            return 404, "application/json", json.dumps(
                {"pod": key, "message": "no pending diagnosis"}).encode()
        return 200, "application/json", json.dumps(entry, indent=2).encode()

    return handle
