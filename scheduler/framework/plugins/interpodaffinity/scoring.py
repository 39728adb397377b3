"""InterPodAffinity's PreScore state, Score and NormalizeScore.

Corresponds to kube-scheduler ``plugins/interpodaffinity/scoring.go`` (v1.35). Each topology
pair gets a score:

* the incoming pod's preferred affinity (anti-affinity) terms add (subtract) their weight for
  every existing pod matching the term, in that pod's pair of the term's key;
* an existing pod's required affinity terms add ``hardPodAffinityWeight``, and its preferred
  affinity (anti-affinity) terms add (subtract) their weight, in its pair of the term's key,
  when the incoming pod matches the term.

A node scores the sum over its pairs; NormalizeScore scales min..max to 0..100. The incoming
pod's terms are counted over every node with ``PodCounter``; the existing pods' terms only
matter for pods with affinity, which the snapshot lists per node.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from pkg.util.topologycounts import PodCounter
from scheduler.framework.interface import MAX_NODE_SCORE
from scheduler.framework.plugins.interpodaffinity.terms import (
    NAME,
    WeightedAffinityTerm,
    pod_terms,
)
from scheduler.framework.plugins.interpodaffinity.topology_counts import TopologyCounts
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.types import NodeInfo, PodInfo

PRE_SCORE_STATE_KEY = "PreScore" + NAME


def topology_scores(snapshot: Snapshot, counter: PodCounter, pod: PodInfo,
                    preferred: tuple[WeightedAffinityTerm, ...],
                    preferred_anti: tuple[WeightedAffinityTerm, ...],
                    namespace_labels: Mapping[str, str],
                    hard_pod_affinity_weight: int) -> TopologyCounts | None:
    """The score of every topology pair; None when no term matched any pod (upstream: Skip).

    ``preferred``/``preferred_anti`` are the incoming pod's terms with their namespace
    selectors merged. Without them only nodes hosting pods with affinity are read.
    """
    scores = TopologyCounts(snapshot)
    matched = False
    infos = snapshot.node_infos
    for terms, sign in ((preferred, 1), (preferred_anti, -1)):
        for wt in terms:
            t = wt.term
            per_node = counter.counts(infos, t.match_key, t.matches_merged)
            matched |= scores.add_per_node(t.topology_key, per_node, sign * wt.weight)
    for ni in snapshot.have_pods_with_affinity:
        labels = ni.labels
        if not labels:
            continue
        for existing in ni.pods_with_affinity.values():
            existing_terms = pod_terms(existing)
            if hard_pod_affinity_weight > 0:
                for t in existing_terms.required_affinity:
                    if t.matches_pod(pod, namespace_labels):
                        matched |= scores.update(labels, t.topology_key,
                                                 hard_pod_affinity_weight)
            for group, sign in ((existing_terms.preferred_affinity, 1),
                                (existing_terms.preferred_anti_affinity, -1)):
                for wt in group:
                    if wt.term.matches_pod(pod, namespace_labels):
                        matched |= scores.update(labels, wt.term.topology_key,
                                                 sign * wt.weight)
    return scores if matched else None


def score(scores: TopologyCounts, node_info: NodeInfo) -> int:
    labels = node_info.labels
    total = 0
    for key, counts in scores.items():
        value = labels.get(key)
        if value is not None:
            total += counts.get(value)
    return total


def score_nodes(scores: TopologyCounts, idx: np.ndarray) -> np.ndarray:
    total = np.zeros(len(idx), dtype=np.int64)
    for counts in scores.values():
        total += counts.at(idx)
    return total


def normalize(scores: np.ndarray) -> None:
    """Min-max scaling to 0..100 in place, truncated as upstream's float64 → int64."""
    if len(scores) == 0:
        return
    lo, hi = int(scores.min()), int(scores.max())
    if hi - lo > 0:
        scores[:] = (MAX_NODE_SCORE * ((scores - lo) / (hi - lo))).astype(np.int64)
    else:
        scores[:] = 0
