"""scheduler_perf-style workloads: nodes, existing pods and pods to schedule, as parsed JSON.

Corresponds to kubernetes ``test/integration/scheduler_perf`` (``config/performance-config.yaml``
and the node/pod templates ``node-default.yaml`` and ``pod-default.yaml``): nodes with 4 cpu,
32Gi memory and 110 pods; pods asking 100m cpu and 500Mi memory. Each workload names its
nodes, the pods already bound, and the pods to schedule.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

SCHEDULER_NAME = "koord-scheduler"
ZONES = 10


def node(i: int, *, zones: int = ZONES) -> dict[str, Any]:
    name = f"node-{i}"
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1", "labels": {
            "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
            "topology.kubernetes.io/zone": f"zone-{i % zones}",
            "node-group": "a" if i % 2 == 0 else "b"}},
        "spec": {},
        "status": {"capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                   "allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True"}]},
    }


def pod(name: str, *, node_name: str = "", labels: dict[str, str] | None = None,
        affinity: dict[str, Any] | None = None,
        spread: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": SCHEDULER_NAME, "priority": 0,
        "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": "100m", "memory": "500Mi"},
                                      "limits": {"cpu": "100m", "memory": "500Mi"}}}],
    }
    if node_name:
        spec["nodeName"] = node_name
    if affinity:
        spec["affinity"] = affinity
    if spread:
        spec["topologySpreadConstraints"] = spread
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "bench", "uid": f"uid-{name}",
                         "resourceVersion": "1", "labels": labels or {"app": "bench"}},
            "spec": spec, "status": {"phase": "Running" if node_name else "Pending"}}


def node_metric(node_name: str, *, cpu_milli: int, memory: int, update_time: str,
                pods: Sequence[tuple[str, int, int]] = ()) -> dict[str, Any]:
    """A NodeMetric as koordlet reports it (usage of the node and of its pods)."""
    return {
        "apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric",
        "metadata": {"name": node_name, "resourceVersion": "1"},
        "spec": {"metricCollectPolicy": {"reportIntervalSeconds": 60}},
        "status": {"updateTime": update_time,
                   "nodeMetric": {"nodeUsage": {"resources": {
                       "cpu": f"{cpu_milli}m", "memory": str(memory)}}},
                   "podsMetric": [{"namespace": "bench", "name": n, "podUsage": {"resources": {
                       "cpu": f"{c}m", "memory": str(m)}}} for n, c, m in pods]},
    }


@dataclass
class Workload:
    name: str
    nodes: int
    existing: int
    to_schedule: int
    make_pod: Callable[[str], dict[str, Any]] = pod
    node_metrics: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def build(self, seed: int = 1) -> tuple[list[dict], list[dict], list[dict]]:
        nodes = [node(i) for i in range(self.nodes)]
        existing = [dict(self.make_pod(f"init-{j}"), spec=dict(
            self.make_pod(f"init-{j}")["spec"], nodeName=f"node-{j % self.nodes}"))
            for j in range(self.existing)]
        for p in existing:
            p["status"] = {"phase": "Running"}
        todo = [self.make_pod(f"pod-{j}") for j in range(self.to_schedule)]
        random.Random(seed).shuffle(todo)
        return nodes, existing, todo


def _affinity_pod(name: str) -> dict[str, Any]:
    return pod(name, affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "node-group", "operator": "In", "values": ["a"]}]}]}}})


def _spread_pod(name: str) -> dict[str, Any]:
    return pod(name, labels={"app": "spread"}, spread=[{
        "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "spread"}}}])


def workloads(nodes: int = 5000, existing: int = 1000, to_schedule: int = 10000
              ) -> dict[str, Workload]:
    return {
        "SchedulingBasic": Workload("SchedulingBasic", nodes, existing, to_schedule),
        "SchedulingLoadAware": Workload("SchedulingLoadAware", nodes, existing, to_schedule,
                                        node_metrics=True),
        "SchedulingNodeAffinity": Workload("SchedulingNodeAffinity", nodes, existing,
                                           to_schedule, make_pod=_affinity_pod),
        "TopologySpreading": Workload("TopologySpreading", nodes, existing, to_schedule,
                                      make_pod=_spread_pod),
    }
