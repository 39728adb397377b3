"""Test helpers for LoadAwareScheduling: nodes, pods, NodeMetrics, args and the plugin.

Objects are the parsed JSON dicts informers deliver. Times are epoch seconds on a FakeClock
starting at ``NOW``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from api.meta import format_duration
from pkg.util.clock import FakeClock
from scheduler.apis.config import LoadAwareSchedulingArgs
from scheduler.framework.runtime import Framework
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.types import NodeInfo
from scheduler.frameworkext.interface import EventRecorder
from scheduler.frameworkext.testing import new_handle
from scheduler.plugins.loadaware.load_aware import LoadAwareScheduling

NOW = 1_700_000_000.0


def rfc3339(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def make_node(name: str, cpu: str = "96", memory: str = "512Gi",
              annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": dict(annotations or {})},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}}


def make_pod(name: str, *, namespace: str = "default", node: str = "",
             requests: Mapping[str, str] | None = None, limits: Mapping[str, str] | None = None,
             priority_class: str | None = None, daemonset: bool = False,
             annotations: Mapping[str, str] | None = None,
             scheduled_at: float | None = None, initialized_at: float | None = None,
             phase: str = "Running") -> dict[str, Any]:
    """A one-container pod; ``priority_class`` sets the koordinator.sh/priority-class label."""
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = dict(requests)
    if limits:
        resources["limits"] = dict(limits)
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                            "labels": {}, "annotations": dict(annotations or {})}
    if priority_class:
        meta["labels"]["koordinator.sh/priority-class"] = priority_class
    if daemonset:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                    "name": "ds", "uid": "ds-uid"}]
    conditions = []
    if scheduled_at is not None:
        conditions.append({"type": "PodScheduled", "status": "True",
                           "lastTransitionTime": rfc3339(scheduled_at)})
    if initialized_at is not None:
        conditions.append({"type": "Initialized", "status": "True",
                           "lastTransitionTime": rfc3339(initialized_at)})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"nodeName": node, "containers": [{"name": "c", "resources": resources}]},
            "status": {"phase": phase, "conditions": conditions}}


def make_metric(node: str, *, update_time: float | None = NOW,
                usage: Mapping[str, str] | None = None,
                system_usage: Mapping[str, str] | None = None,
                aggregated: Mapping[tuple[str, float], Mapping[str, str]] | None = None,
                pods: Iterable[tuple[str, Mapping[str, str], str]] = (),
                report_interval: int | None = None,
                node_metric: bool = True) -> dict[str, Any]:
    """A NodeMetric; ``aggregated`` maps (type, window seconds) to usage, ``pods`` lists
    (namespace/name, usage, reported priority class)."""
    status: dict[str, Any] = {}
    if update_time is not None:
        status["updateTime"] = rfc3339(update_time)
    if node_metric:
        info: dict[str, Any] = {"nodeUsage": {"resources": dict(usage or {})}}
        if system_usage is not None:
            info["systemUsage"] = {"resources": dict(system_usage)}
        windows: dict[float, dict[str, Any]] = {}
        for (kind, seconds), res in (aggregated or {}).items():
            windows.setdefault(seconds, {})[kind] = {"resources": dict(res)}
        if windows:
            info["aggregatedNodeUsages"] = [{"duration": format_duration(s), "usage": u}
                                            for s, u in windows.items()]
        status["nodeMetric"] = info
    pods_metric = []
    for key, res, priority in pods:
        ns, name = key.split("/")
        pods_metric.append({"namespace": ns, "name": name, "podUsage": {"resources": dict(res)},
                            "priority": priority})
    if pods_metric:
        status["podsMetric"] = pods_metric
    spec: dict[str, Any] = {}
    if report_interval is not None:
        spec["metricCollectPolicy"] = {"reportIntervalSeconds": report_interval}
    return {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric",
            "metadata": {"name": node}, "spec": spec, "status": status}


def snapshot_of(nodes: Iterable[dict[str, Any]]) -> Snapshot:
    snap = Snapshot()
    snap.rebuild([NodeInfo(n) for n in nodes])
    return snap


def new_plugin(nodes: Iterable[dict[str, Any]] = (), metrics: Iterable[dict[str, Any]] = (),
               assigned: Iterable[dict[str, Any]] = (), *, clock: FakeClock | None = None,
               recorder: EventRecorder | None = None,
               **args: Any) -> tuple[LoadAwareScheduling, Framework]:
    """A plugin over a snapshot of ``nodes`` with ``metrics`` and ``assigned`` pods fed through
    its event handlers, on ``clock`` (a FakeClock at ``NOW`` by default); ``args`` are
    LoadAwareSchedulingArgs fields."""
    handle = new_handle(snapshot=snapshot_of(nodes),
                        clock=clock if clock is not None else FakeClock(NOW), recorder=recorder)
    plugin = LoadAwareScheduling(LoadAwareSchedulingArgs(**args), handle)
    for m in metrics:
        plugin.cache.set_node_metric(m)
    for p in assigned:
        plugin.cache.on_pod_add(p)
    return plugin, handle
