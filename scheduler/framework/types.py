"""PodInfo and NodeInfo: the parsed pod and the per-node aggregate every plugin reads.

Corresponds to kube-scheduler ``pkg/scheduler/framework/types.go`` (``PodInfo``,
``NodeInfo``). Objects stay the parsed JSON dicts the informers deliver (decoding them into
client models costs more than scheduling them); PodInfo adds what plugins ask of every pod
once, so repeated attempts do not parse again. Quantities are integers as in
``pkg.util.podresources``: cpu in millicores, everything else in units.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from pkg.util.podresources import (
    PODS,
    pod_non_zero_requests,
    pod_requests,
    resource_list,
)

# One counter for every NodeInfo change, as upstream's nextGeneration: the snapshot copies
# only nodes whose generation moved since the last cycle.
_generation = itertools.count(1)


def next_generation() -> int:
    return next(_generation)


def pod_uid(pod: Mapping[str, Any]) -> str:
    return (pod.get("metadata") or {}).get("uid", "")


def pod_key(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


HostPort = tuple[str, str, int]  # (hostIP, protocol, hostPort)


def _host_ports(spec: Mapping[str, Any]) -> tuple[HostPort, ...]:
    ports: list[HostPort] = []
    for c in spec.get("containers") or ():
        for p in c.get("ports") or ():
            hp = p.get("hostPort") or 0
            if hp > 0:
                ports.append((p.get("hostIP") or "0.0.0.0", p.get("protocol") or "TCP", hp))
    return tuple(ports)


class PodInfo:
    """A pod and the facts about it that plugins read on every attempt."""

    __slots__ = ("pod", "key", "uid", "namespace", "name", "node_name", "priority", "requests",
                 "non_zero_cpu", "non_zero_memory", "host_ports", "labels", "affinity",
                 "has_affinity", "has_required_anti_affinity", "scheduler_name", "memo")

    def __init__(self, pod: dict[str, Any]) -> None:
        self.update(pod)

    def update(self, pod: dict[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        self.pod = pod
        self.namespace: str = meta.get("namespace", "")
        self.name: str = meta.get("name", "")
        self.key = f"{self.namespace}/{self.name}"
        self.uid: str = meta.get("uid", "")
        self.node_name: str = spec.get("nodeName") or ""
        self.priority: int = spec.get("priority") or 0
        self.requests: dict[str, int] = pod_requests(pod)
        self.non_zero_cpu, self.non_zero_memory = pod_non_zero_requests(pod)
        self.host_ports = _host_ports(spec)
        self.labels: dict[str, str] = meta.get("labels") or {}
        affinity = spec.get("affinity") or {}
        self.affinity: dict[str, Any] = affinity
        pa, paa = affinity.get("podAffinity"), affinity.get("podAntiAffinity")
        self.has_affinity = bool(pa or paa)
        self.has_required_anti_affinity = bool(
            paa and paa.get("requiredDuringSchedulingIgnoredDuringExecution"))
        self.scheduler_name: str = spec.get("schedulerName") or "default-scheduler"
        # Plugins memoise what they parse from this pod here, under their own name.
        self.memo: dict[str, Any] = {}

    @property
    def spec(self) -> dict[str, Any]:
        return self.pod.get("spec") or {}

    @property
    def annotations(self) -> dict[str, str]:
        return (self.pod.get("metadata") or {}).get("annotations") or {}

    def with_node(self, node_name: str) -> PodInfo:
        """A copy bound to ``node_name`` (the assumed pod)."""
        pod = dict(self.pod)
        pod["spec"] = dict(self.spec, nodeName=node_name)
        clone = PodInfo.__new__(PodInfo)
        for slot in PodInfo.__slots__:
            setattr(clone, slot, getattr(self, slot))
        clone.pod = pod
        clone.node_name = node_name
        return clone

    def __repr__(self) -> str:
        return f"PodInfo({self.key})"


class NodeInfo:
    """A node, the pods on it (assumed ones included) and their summed requests."""

    __slots__ = ("node", "name", "pods", "requested", "non_zero_cpu", "non_zero_memory",
                 "allocatable", "used_ports", "pods_with_affinity",
                 "pods_with_required_anti_affinity", "generation")

    def __init__(self, node: dict[str, Any] | None = None, name: str = "") -> None:
        self.node: dict[str, Any] | None = None
        self.name = name
        self.pods: dict[str, PodInfo] = {}
        self.requested: dict[str, int] = {}
        self.non_zero_cpu = 0
        self.non_zero_memory = 0
        self.allocatable: dict[str, int] = {}
        self.used_ports: dict[HostPort, int] = {}
        self.pods_with_affinity: dict[str, PodInfo] = {}
        self.pods_with_required_anti_affinity: dict[str, PodInfo] = {}
        self.generation = next_generation()
        if node is not None:
            self.set_node(node)

    # The node object ---------------------------------------------------------------------

    def set_node(self, node: dict[str, Any]) -> None:
        self.node = node
        self.name = (node.get("metadata") or {}).get("name", "")
        self.allocatable = resource_list((node.get("status") or {}).get("allocatable"))
        self.generation = next_generation()

    def remove_node(self) -> None:
        self.node = None
        self.generation = next_generation()

    @property
    def labels(self) -> dict[str, str]:
        return ((self.node or {}).get("metadata") or {}).get("labels") or {}

    @property
    def annotations(self) -> dict[str, str]:
        return ((self.node or {}).get("metadata") or {}).get("annotations") or {}

    @property
    def taints(self) -> list[dict[str, Any]]:
        return ((self.node or {}).get("spec") or {}).get("taints") or []

    @property
    def unschedulable(self) -> bool:
        return bool(((self.node or {}).get("spec") or {}).get("unschedulable"))

    @property
    def allowed_pod_number(self) -> int:
        return self.allocatable.get(PODS, 0)

    # Pods --------------------------------------------------------------------------------

    def add_pod(self, pi: PodInfo) -> None:
        if pi.key in self.pods:
            self.remove_pod(pi.key)
        self.pods[pi.key] = pi
        req = self.requested
        for name, v in pi.requests.items():
            req[name] = req.get(name, 0) + v
        self.non_zero_cpu += pi.non_zero_cpu
        self.non_zero_memory += pi.non_zero_memory
        for port in pi.host_ports:
            self.used_ports[port] = self.used_ports.get(port, 0) + 1
        if pi.has_affinity:
            self.pods_with_affinity[pi.key] = pi
        if pi.has_required_anti_affinity:
            self.pods_with_required_anti_affinity[pi.key] = pi
        self.generation = next_generation()

    def remove_pod(self, key: str) -> PodInfo | None:
        pi = self.pods.pop(key, None)
        if pi is None:
            return None
        req = self.requested
        for name, v in pi.requests.items():
            left = req.get(name, 0) - v
            if left:
                req[name] = left
            else:
                req.pop(name, None)
        self.non_zero_cpu -= pi.non_zero_cpu
        self.non_zero_memory -= pi.non_zero_memory
        for port in pi.host_ports:
            n = self.used_ports.get(port, 0) - 1
            if n > 0:
                self.used_ports[port] = n
            else:
                self.used_ports.pop(port, None)
        self.pods_with_affinity.pop(key, None)
        self.pods_with_required_anti_affinity.pop(key, None)
        self.generation = next_generation()
        return pi

    def requested_of(self, resource: str) -> int:
        """Summed requests of ``resource``; for ``pods``, the number of pods."""
        return len(self.pods) if resource == PODS else self.requested.get(resource, 0)

    def clone(self) -> NodeInfo:
        c = NodeInfo.__new__(NodeInfo)
        c.node = self.node
        c.name = self.name
        c.pods = dict(self.pods)
        c.requested = dict(self.requested)
        c.non_zero_cpu = self.non_zero_cpu
        c.non_zero_memory = self.non_zero_memory
        c.allocatable = self.allocatable
        c.used_ports = dict(self.used_ports)
        c.pods_with_affinity = dict(self.pods_with_affinity)
        c.pods_with_required_anti_affinity = dict(self.pods_with_required_anti_affinity)
        c.generation = self.generation
        return c

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, pods={len(self.pods)})"
