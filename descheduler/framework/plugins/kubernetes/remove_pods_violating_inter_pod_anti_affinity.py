"""RemovePodsViolatingInterPodAntiAffinity: evicts pods whose required pod anti-affinity another
running pod violates.

Corresponds to sigs.k8s.io/descheduler
``pkg/framework/plugins/removepodsviolatinginterpodantiaffinity`` (with ``pkg/utils``'
``CheckPodsWithAntiAffinityExist``) as koordinator wraps it
(``pkg/descheduler/framework/plugins/kubernetes``). The pods on the nodes, in the configured
namespaces and matching the label selector, are looked at node by node, lowest priority (then
BestEffort, Burstable) first. A pod is evicted, when both evictor filters accept it, if one of
its required anti-affinity terms matches another of those pods (in the term's namespaces, else
the pod's own; by the term's label selector) on a node with the same value of the term's
topology key (the same node always counts). An evicted pod no longer counts against the others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from descheduler.apis.config.args import RemovePodsViolatingInterPodAntiAffinityArgs
from descheduler.framework.plugins.kubernetes.podutil import (
    node_map,
    node_name,
    pod_filter,
    pods_on_nodes,
    sort_by_priority_low_to_high,
)
from descheduler.framework.types import EvictOptions, Handle, Obj, Status
from pkg.util.labels import InvalidSelectorError, parse_selector

NAME = "RemovePodsViolatingInterPodAntiAffinity"


def _same_topology(a: Obj, b: Obj, key: str) -> bool:
    if node_name(a) == node_name(b):
        return True
    la = (a.get("metadata") or {}).get("labels") or {}
    lb = (b.get("metadata") or {}).get("labels") or {}
    return key in la and key in lb and la[key] == lb[key]


def _anti_affinity_terms(pod: Obj) -> list[Mapping[str, Any]]:
    affinity = ((pod.get("spec") or {}).get("affinity") or {}).get("podAntiAffinity") or {}
    return affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or []


def violates_anti_affinity(pod: Obj, by_namespace: Mapping[str, list[Obj]],
                           nodes: Mapping[str, Obj]) -> bool:
    """Whether another of the pods (``by_namespace``) matches one of ``pod``'s required
    anti-affinity terms in the term's topology."""
    own = nodes.get((pod.get("spec") or {}).get("nodeName") or "")
    if own is None:
        return False
    md = pod.get("metadata") or {}
    for term in _anti_affinity_terms(pod):
        namespaces = term.get("namespaces") or [md.get("namespace") or ""]
        try:
            selector = parse_selector(term.get("labelSelector"))
        except InvalidSelectorError:
            return False  # the API server refuses such pods
        for namespace in namespaces:
            for other in by_namespace.get(namespace, ()):
                other_md = other.get("metadata") or {}
                if other_md.get("name") == md.get("name") or not selector.matches(
                        other_md.get("labels") or {}):
                    continue
                other_node = nodes.get((other.get("spec") or {}).get("nodeName") or "")
                if other_node is not None and _same_topology(own, other_node,
                                                             term.get("topologyKey") or ""):
                    return True
    return False


class RemovePodsViolatingInterPodAntiAffinity:
    def __init__(self, args: RemovePodsViolatingInterPodAntiAffinityArgs,
                 handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self._selects = pod_filter(args.namespaces, args.label_selector)

    @classmethod
    def new(cls, args: Any, handle: Handle) -> RemovePodsViolatingInterPodAntiAffinity:
        return cls(args if isinstance(args, RemovePodsViolatingInterPodAntiAffinityArgs)
                   else RemovePodsViolatingInterPodAntiAffinityArgs(), handle)

    def name(self) -> str:
        return NAME

    def deschedule(self, nodes: Sequence[Obj]) -> Status:
        pods = pods_on_nodes(self.handle.pods_on_node, nodes, self._selects)
        by_namespace: dict[str, list[Obj]] = {}
        by_node: dict[str, list[Obj]] = {}
        for pod in pods:
            by_namespace.setdefault((pod.get("metadata") or {}).get("namespace") or "",
                                    []).append(pod)
            by_node.setdefault((pod.get("spec") or {}).get("nodeName") or "", []).append(pod)
        nodes_by_name = node_map(nodes)
        evictor = self.handle.evictor
        for node in nodes:
            on_node = by_node.get(node_name(node), [])
            sort_by_priority_low_to_high(on_node)
            for pod in on_node:
                if not (violates_anti_affinity(pod, by_namespace, nodes_by_name)
                        and evictor.filter(pod) and evictor.pre_eviction_filter(pod)):
                    continue
                if evictor.evict(pod, EvictOptions(
                        plugin_name=NAME, reason="pod violates its inter-pod anti-affinity")):
                    # Gone, it no longer keeps the pods it clashed with from staying.
                    by_namespace[(pod.get("metadata") or {}).get("namespace") or ""].remove(pod)
        return Status()
