"""PodTopologySpread's PreFilter state and Filter checks (DoNotSchedule constraints).

Corresponds to kube-scheduler ``plugins/podtopologyspread/filtering.go`` (v1.35). For each
constraint PreFilter counts, per domain of its topology key, the pods of the incoming pod's
namespace (terminating ones left out) that the constraint's selector matches, on the eligible
nodes: nodes with every constraint's topology key that the constraint's inclusion policies
admit. A node passes a constraint when

    matching pods in its domain + (1 if the pod matches the selector) - global minimum
        <= maxSkew

where the global minimum is the smallest count among the eligible domains, or 0 when there
are fewer than ``minDomains`` of them. Upstream tracks that minimum with two "critical paths"
that AddPod can leave stale; this port keeps every domain's count and takes the exact minimum.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pkg.util.topologycounts import DomainCounts, PodCounter
from scheduler.framework.plugins.nodeaffinity.columns import label_column
from scheduler.framework.plugins.podtopologyspread.common import (
    NAME,
    Constraint,
    is_terminating,
    node_labels_match,
)
from scheduler.framework.plugins.podtopologyspread.inclusion import NodeInclusion
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Status, unresolvable, unschedulable
from scheduler.framework.types import NodeInfo, PodInfo

PRE_FILTER_STATE_KEY = "PreFilter" + NAME

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

# Upstream's critical paths start at MaxInt32: the minimum when no domain is eligible.
_MAX_INT32 = (1 << 31) - 1


def count_matching(snapshot: Snapshot, counter: PodCounter, namespace: str,
                   c: Constraint) -> np.ndarray | None:
    """Per node, pods of ``namespace`` the selector matches (countPodsMatchSelector); None
    for an empty or nothing-selector, which upstream counts as no pods."""
    selector = c.selector
    if not selector.requirements:
        return None
    return counter.counts(
        snapshot.node_infos, (namespace, selector),
        lambda p: (p.namespace == namespace and selector.matches(p.labels)
                   and not is_terminating(p.pod)))


@dataclass(slots=True)
class PreFilterState:
    constraints: tuple[Constraint, ...]
    # Per constraint: matching pods per eligible domain (upstream TpValueToMatchNum).
    counts: list[DomainCounts]
    inclusion: NodeInclusion

    def clone(self) -> PreFilterState:
        return PreFilterState(self.constraints, [c.clone() for c in self.counts],
                              self.inclusion)

    def min_match_num(self, i: int) -> int:
        counts = self.counts[i]
        if counts.num_present() < self.constraints[i].min_domains:
            return 0
        least = counts.min_present()
        return _MAX_INT32 if least is None else least

    def update_with_pod(self, pod: PodInfo, incoming: PodInfo, node_info: NodeInfo,
                        delta: int) -> None:
        """Count ``pod`` on ``node_info`` in (delta 1) or out (delta -1)."""
        if pod.namespace != incoming.namespace or node_info.node is None:
            return
        labels = node_info.labels
        if not node_labels_match(labels, self.constraints):
            return
        for c, counts in zip(self.constraints, self.counts, strict=True):
            if c.selector.matches(pod.labels) and self.inclusion.includes(c, node_info):
                counts.add(labels[c.topology_key], delta)


def pre_filter_state(snapshot: Snapshot, counter: PodCounter, pod: PodInfo,
                     constraints: Sequence[Constraint],
                     inclusion: NodeInclusion) -> PreFilterState:
    columns = [label_column(snapshot, c.topology_key) for c in constraints]
    has_all = np.ones(len(snapshot.node_infos), dtype=bool)
    for col in columns:
        has_all &= col.codes >= 0
    counts = []
    for c, col in zip(constraints, columns, strict=True):
        included = inclusion.mask(c, snapshot)
        eligible = has_all if included is None else has_all & included
        per_node = count_matching(snapshot, counter, pod.namespace, c)
        counts.append(DomainCounts.summed(col, per_node, eligible))
    return PreFilterState(tuple(constraints), counts, inclusion)


def check(s: PreFilterState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
    labels = node_info.labels
    for i, c in enumerate(s.constraints):
        value = labels.get(c.topology_key)
        if value is None:
            return unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH)
        self_match = 1 if c.selector.matches(pod.labels) else 0
        if s.counts[i].get(value) + self_match - s.min_match_num(i) > c.max_skew:
            return unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)
    return None


def mask(s: PreFilterState, pod: PodInfo) -> np.ndarray:
    ok: np.ndarray | None = None
    for i, c in enumerate(s.constraints):
        counts = s.counts[i]
        self_match = 1 if c.selector.matches(pod.labels) else 0
        passing = (counts.codes >= 0) & (
            counts.at() + self_match - s.min_match_num(i) <= c.max_skew)
        ok = passing if ok is None else ok & passing
    assert ok is not None, "PreFilter skips pods without constraints"
    return ok


def explain(s: PreFilterState, pod: PodInfo, node_info: NodeInfo) -> str | None:
    """The first constraint the node misses, with the numbers of the skew."""
    labels = node_info.labels
    for i, c in enumerate(s.constraints):
        value = labels.get(c.topology_key)
        if value is None:
            return f"node has no label {c.topology_key}"
        self_match = 1 if c.selector.matches(pod.labels) else 0
        matching, least = s.counts[i].get(value), s.min_match_num(i)
        skew = matching + self_match - least
        if skew > c.max_skew:
            return (f"{c.topology_key}={value}: {matching} matching pod(s) + {self_match} "
                    f"- global minimum {least} = skew {skew} > maxSkew {c.max_skew}")
    return None
