"""RemovePodsViolatingTopologySpreadConstraint: evicts the fewest pods that bring each topology
spread constraint within its maxSkew.

Corresponds to sigs.k8s.io/descheduler
``pkg/framework/plugins/removepodsviolatingtopologyspreadconstraint`` as koordinator wraps it
(``pkg/descheduler/framework/plugins/kubernetes``). Per namespace (of the configured ones), the
distinct constraints of its pods whose ``whenUnsatisfiable`` is in ``constraints`` are balanced
one by one: the domains are the values of the topology key on the nodes the constraint's node
inclusion policies admit (nodeAffinityPolicy Honor, nodeTaintsPolicy Ignore by default); the
pods counted are those the constraint's selector (with ``matchLabelKeys``) matches, not being
deleted. When two domains differ by more than maxSkew, pods move from the biggest towards the
smallest domains without taking any across the ideal average (``balanceDomains``); a domain
gives up first its evictable pods without node selector or affinity, lowest priority first,
and, with ``topologyBalanceNodeFit``, only pods that fit a node of a domain below the average.
The chosen pods are evicted if they match the label selector and pass both evictor filters
(``labelSelector`` does not change the counting).

Not here: upstream's newer check that a pod's other DoNotSchedule constraints would let it
move.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from descheduler.apis.config.args import RemovePodsViolatingTopologySpreadConstraintArgs
from descheduler.framework.plugins.kubernetes.podutil import (
    PodFilter,
    node_map,
    pod_filter,
    pods_on_nodes,
)
from descheduler.framework.types import EvictOptions, Handle, Obj, Status
from descheduler.utils.node import NodeFit, pod_fits_any_other_node
from pkg.util.labels import InvalidSelectorError
from pkg.util.nodeaffinity import (
    DO_NOT_SCHEDULE_EFFECTS,
    RequiredNodeAffinity,
    find_untolerated_taint,
)
from scheduler.framework.plugins.podtopologyspread.common import (
    HONOR,
    Constraint,
    filter_constraints,
    is_terminating,
)

NAME = "RemovePodsViolatingTopologySpreadConstraint"


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """A pod's constraint as the plugin balances it: the node affinity and tolerations of the
    pod count only where the constraint's inclusion policies honour them."""

    constraint: Constraint
    when_unsatisfiable: str
    affinity: RequiredNodeAffinity | None
    # repr of the pod's tolerations: what two constraints compare (upstream compares deeply)
    tolerations_key: str | None
    tolerations: tuple[Mapping[str, Any], ...] = field(default=(), compare=False)

    @classmethod
    def of(cls, raw: Mapping[str, Any], pod: Obj) -> SpreadConstraint | None:
        """None for a constraint whose selector does not parse (upstream logs and skips it)."""
        action = raw.get("whenUnsatisfiable") or ""
        labels = (pod.get("metadata") or {}).get("labels") or {}
        try:
            [constraint] = filter_constraints([raw], labels, action)
        except InvalidSelectorError:
            return None
        tolerations = tuple((pod.get("spec") or {}).get("tolerations") or ())
        honor_taints = constraint.node_taints_policy == HONOR
        return cls(constraint, action,
                   RequiredNodeAffinity.from_pod(pod)
                   if constraint.node_affinity_policy == HONOR else None,
                   repr(tolerations) if honor_taints else None,
                   tolerations if honor_taints else ())

    def admits(self, node: Obj) -> bool:
        """Whether the node counts for the constraint (``matchNodeInclusionPolicies``)."""
        if self.affinity is not None and not self.affinity.matches_node(node):
            return False
        return self.tolerations_key is None or find_untolerated_taint(
            (node.get("spec") or {}).get("taints"), self.tolerations,
            DO_NOT_SCHEDULE_EFFECTS) is None


def _labels(obj: Obj) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _has_selector_or_affinity(pod: Obj) -> bool:
    spec = pod.get("spec") or {}
    return spec.get("nodeSelector") is not None or bool(
        (spec.get("affinity") or {}).get("nodeAffinity"))


def sort_domain(pods: list[Obj], evictable: PodFilter) -> None:
    """The order a domain gives pods up in, from its end: non-evictable pods first, then pods
    with a node selector or affinity, then by descending priority (pods without one last)."""
    def key(pod: Obj) -> tuple[bool, bool, bool, int]:
        priority = (pod.get("spec") or {}).get("priority")
        return (evictable(pod), not _has_selector_or_affinity(pod), priority is None,
                -(priority or 0))

    pods.sort(key=key)


def is_balanced(domains: Mapping[str, list[Obj]], max_skew: int) -> bool:
    sizes = [len(pods) for pods in domains.values()]
    return not sizes or max(sizes) - min(sizes) <= max_skew


class RemovePodsViolatingTopologySpreadConstraint:
    def __init__(self, args: RemovePodsViolatingTopologySpreadConstraintArgs,
                 handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self._in_namespaces = pod_filter(args.namespaces, None)
        self._evictable = pod_filter(args.namespaces, args.label_selector,
                                     handle.evictor.filter)
        self._actions = frozenset(args.constraints)

    @classmethod
    def new(cls, args: Any, handle: Handle) -> RemovePodsViolatingTopologySpreadConstraint:
        return cls(args if isinstance(args, RemovePodsViolatingTopologySpreadConstraintArgs)
                   else RemovePodsViolatingTopologySpreadConstraintArgs(), handle)

    def name(self) -> str:
        return NAME

    def balance(self, nodes: Sequence[Obj]) -> Status:
        nodes_by_name = node_map(nodes)
        by_namespace: dict[str, list[Obj]] = {}
        for pod in pods_on_nodes(self.handle.pods_on_node, nodes, self._in_namespaces):
            by_namespace.setdefault((pod.get("metadata") or {}).get("namespace") or "",
                                    []).append(pod)
        fit = NodeFit(self.handle.pods_on_node)
        # insertion-ordered set of the pods to evict
        chosen: dict[int, Obj] = {}
        for pods in by_namespace.values():
            constraints: dict[SpreadConstraint, None] = {}
            for pod in pods:
                for raw in (pod.get("spec") or {}).get("topologySpreadConstraints") or []:
                    if raw.get("whenUnsatisfiable") in self._actions:
                        tsc = SpreadConstraint.of(raw, pod)
                        if tsc is not None:
                            constraints.setdefault(tsc)
            for tsc in constraints:
                key = tsc.constraint.topology_key
                domains: dict[str, list[Obj]] = {
                    _labels(node)[key]: [] for node in nodes
                    if key in _labels(node) and tsc.admits(node)}
                total = 0
                for pod in pods:
                    if is_terminating(pod) or not tsc.constraint.selector.matches(_labels(pod)):
                        continue
                    node = nodes_by_name.get((pod.get("spec") or {}).get("nodeName") or "")
                    if node is None or key not in _labels(node):
                        continue
                    domains.setdefault(_labels(node)[key], []).append(pod)
                    total += 1
                if is_balanced(domains, tsc.constraint.max_skew):
                    continue
                for pod in self._balance_domains(tsc, domains, total, nodes, fit):
                    chosen[id(pod)] = pod
        evictor = self.handle.evictor
        for pod in chosen.values():
            if self._evictable(pod) and evictor.pre_eviction_filter(pod):
                evictor.evict(pod, EvictOptions(
                    plugin_name=NAME, reason="pod violates its topology spread constraints"))
        return Status()

    def _balance_domains(self, tsc: SpreadConstraint, domains: dict[str, list[Obj]],
                         total: int, nodes: Sequence[Obj], fit: NodeFit) -> list[Obj]:
        """The pods to move so the domains end within maxSkew of each other
        (upstream ``balanceDomains``)."""
        key, max_skew = tsc.constraint.topology_key, tsc.constraint.max_skew
        ideal = total / len(domains)
        evictable = self.handle.evictor.filter
        for pods in domains.values():
            sort_domain(pods, evictable)
        # ascending by size (by value among equals, so runs repeat)
        ordered = sorted(domains.items(), key=lambda item: (len(item[1]), item[0]))
        sizes = {value: len(pods) for value, pods in ordered}
        below = [node for node in nodes if tsc.admits(node) and key in _labels(node)
                 and sizes.get(_labels(node)[key], 0) < ideal]
        lists = [list(pods) for _, pods in ordered]
        node_fit = self.args.topology_balance_node_fit
        out: list[Obj] = []
        i, j = 0, len(lists) - 1
        while i < j:
            if len(lists[j]) <= ideal:
                j -= 1
            skew = len(lists[j]) - len(lists[i])
            if skew <= max_skew:
                i += 1
                continue
            above_avg = math.ceil(len(lists[j]) - ideal)
            below_avg = math.ceil(ideal - len(lists[i]))
            move = int(min(above_avg, below_avg, math.ceil((skew - max_skew) / 2)))
            if move <= 0:
                i += 1
                continue
            # pods that fit a node below the average leave first (stable: the order above stays)
            lists[j].sort(key=lambda pod: pod_fits_any_other_node(fit, pod, below))
            moving = lists[j][len(lists[j]) - move:]
            for pod in moving:
                if node_fit and not pod_fits_any_other_node(fit, pod, below):
                    continue
                out.append(pod)
            lists[j] = lists[j][:len(lists[j]) - move]
            lists[i] = lists[i] + moving
        return out
