"""InterPodAffinity's PreFilter state and Filter checks.

Corresponds to kube-scheduler ``plugins/interpodaffinity/filtering.go`` (v1.35). PreFilter
counts, per topology pair:

* existing pods whose required anti-affinity terms match the incoming pod (only nodes listed
  in ``have_pods_with_required_anti_affinity`` can have them);
* existing pods that match *all* of the incoming pod's required affinity terms (one count per
  term's topology key);
* existing pods that match each of its required anti-affinity terms.

The last two come from ``PodCounter`` (per node, recounted only where pods changed) summed
into the domains of each topology key. Filter then checks the node's pairs; ``mask`` does the
same for every node of the snapshot with numpy. AddPod/RemovePod (preemption, nominated pods)
update the counts as upstream's ``updateWithPod``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from pkg.util.topologycounts import PodCounter
from scheduler.framework.plugins.interpodaffinity.terms import (
    NAME,
    AffinityTerm,
    matches_all,
    pod_terms,
)
from scheduler.framework.plugins.interpodaffinity.topology_counts import TopologyCounts
from scheduler.framework.plugins.nodeaffinity.columns import label_column
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Status, unresolvable, unschedulable
from scheduler.framework.types import NodeInfo, PodInfo

PRE_FILTER_STATE_KEY = "PreFilter" + NAME

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = (
    "node(s) didn't satisfy existing pods anti-affinity rules")
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"


@dataclass(slots=True)
class PreFilterState:
    # The incoming pod's required terms, namespace selectors merged into their namespaces.
    affinity_terms: tuple[AffinityTerm, ...]
    anti_affinity_terms: tuple[AffinityTerm, ...]
    # Whether the pod matches all its own affinity terms (the first pod of a group).
    self_match: bool
    # A copy of the incoming pod's namespace labels.
    namespace_labels: Mapping[str, str]
    existing_anti_affinity_counts: TopologyCounts
    affinity_counts: TopologyCounts
    anti_affinity_counts: TopologyCounts

    def clone(self) -> PreFilterState:
        return PreFilterState(
            self.affinity_terms, self.anti_affinity_terms, self.self_match,
            self.namespace_labels, self.existing_anti_affinity_counts.clone(),
            self.affinity_counts.clone(), self.anti_affinity_counts.clone())

    def update_with_pod(self, pod: PodInfo, incoming: PodInfo, node_info: NodeInfo,
                        delta: int) -> None:
        """Count ``pod`` on ``node_info`` in (delta 1) or out (delta -1)."""
        labels = node_info.labels
        for t in pod_terms(pod).required_anti_affinity:
            if t.matches_pod(incoming, self.namespace_labels):
                self.existing_anti_affinity_counts.update(labels, t.topology_key, delta)
        if matches_all(self.affinity_terms, pod.namespace, pod.labels):
            for t in self.affinity_terms:
                self.affinity_counts.update(labels, t.topology_key, delta)
        for t in self.anti_affinity_terms:
            if t.matches(pod.namespace, pod.labels, None):
                self.anti_affinity_counts.update(labels, t.topology_key, delta)


def existing_anti_affinity_counts(snapshot: Snapshot, pod: PodInfo,
                                  namespace_labels: Mapping[str, str]) -> TopologyCounts:
    counts = TopologyCounts(snapshot)
    for ni in snapshot.have_pods_with_required_anti_affinity:
        labels = ni.labels
        for existing in ni.pods_with_required_anti_affinity.values():
            for t in pod_terms(existing).required_anti_affinity:
                if t.matches_pod(pod, namespace_labels):
                    counts.update(labels, t.topology_key, 1)
    return counts


def incoming_counts(snapshot: Snapshot, counter: PodCounter,
                    affinity: tuple[AffinityTerm, ...],
                    anti_affinity: tuple[AffinityTerm, ...]) -> tuple[TopologyCounts,
                                                                       TopologyCounts]:
    """(affinity counts, anti-affinity counts) of the incoming pod's required terms."""
    infos = snapshot.node_infos
    affinity_counts = TopologyCounts(snapshot)
    if affinity:
        per_node = counter.counts(
            infos, ("all",) + tuple(t.match_key for t in affinity),
            lambda p: matches_all(affinity, p.namespace, p.labels))
        for t in affinity:
            affinity_counts.add_per_node(t.topology_key, per_node)
    anti_counts = TopologyCounts(snapshot)
    for t in anti_affinity:
        per_node = counter.counts(infos, t.match_key, t.matches_merged)
        anti_counts.add_per_node(t.topology_key, per_node)
    return affinity_counts, anti_counts


# Filter on one node ---------------------------------------------------------------------------


def _satisfies_existing_anti_affinity(s: PreFilterState, labels: Mapping[str, str]) -> bool:
    for key, counts in s.existing_anti_affinity_counts.items():
        value = labels.get(key)
        if value is not None and counts.get(value) > 0:
            return False
    return True


def _satisfies_anti_affinity(s: PreFilterState, labels: Mapping[str, str]) -> bool:
    for t in s.anti_affinity_terms:
        value = labels.get(t.topology_key)
        if value is not None and s.anti_affinity_counts.get(t.topology_key, value) > 0:
            return False
    return True


def _satisfies_affinity(s: PreFilterState, labels: Mapping[str, str]) -> bool:
    pods_exist = True
    for t in s.affinity_terms:
        value = labels.get(t.topology_key)
        if value is None:
            # All topology labels must exist on the node.
            return False
        if s.affinity_counts.get(t.topology_key, value) <= 0:
            pods_exist = False
    if pods_exist:
        return True
    # The first pod of a group with affinity to itself: allowed where no pod matches yet.
    return s.affinity_counts.is_empty() and s.self_match


def check(s: PreFilterState, node_info: NodeInfo) -> Status | None:
    labels = node_info.labels
    if not _satisfies_affinity(s, labels):
        return unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)
    if not _satisfies_anti_affinity(s, labels):
        return unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
    if not _satisfies_existing_anti_affinity(s, labels):
        return unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
    return None


# Filter on every node -------------------------------------------------------------------------


def mask(s: PreFilterState, snapshot: Snapshot) -> np.ndarray:
    ok = np.ones(len(snapshot.node_infos), dtype=bool)
    if s.affinity_terms:
        pods_exist = np.ones_like(ok)
        for t in s.affinity_terms:
            ok &= label_column(snapshot, t.topology_key).codes >= 0
            pods_exist &= s.affinity_counts.at(t.topology_key) > 0
        if not (s.affinity_counts.is_empty() and s.self_match):
            ok &= pods_exist
    for t in s.anti_affinity_terms:
        ok &= s.anti_affinity_counts.at(t.topology_key) <= 0
    for counts in s.existing_anti_affinity_counts.values():
        ok &= counts.at() <= 0
    return ok


def explain(s: PreFilterState, node_info: NodeInfo) -> str | None:
    """Which topology pair of the node made it fail, and how many pods are in it."""
    labels = node_info.labels
    if check(s, node_info) is None:
        return None
    missing = sorted({t.topology_key for t in s.affinity_terms} - labels.keys())
    if missing:
        return "node has no label " + ", ".join(missing)
    for t in s.affinity_terms:
        pair = f"{t.topology_key}={labels[t.topology_key]}"
        if s.affinity_counts.get(t.topology_key, labels[t.topology_key]) <= 0:
            return f"no pod matching all affinity terms in {pair}"
    for t in s.anti_affinity_terms:
        value = labels.get(t.topology_key)
        n = 0 if value is None else s.anti_affinity_counts.get(t.topology_key, value)
        if n > 0:
            return f"{n} pod(s) matching anti-affinity terms in {t.topology_key}={value}"
    for key, counts in s.existing_anti_affinity_counts.items():
        value = labels.get(key)
        n = 0 if value is None else counts.get(value)
        if n > 0:
            return f"{n} existing pod(s) with anti-affinity to this pod in {key}={value}"
    return None
