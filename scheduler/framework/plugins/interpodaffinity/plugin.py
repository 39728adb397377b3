"""InterPodAffinity: place pods near (or away from) pods with given labels, by topology.

Corresponds to kubernetes ``pkg/scheduler/framework/plugins/interpodaffinity`` (plugin.go),
v1.35 with SchedulerQueueingHints on. Args: ``hardPodAffinityWeight`` (default 1) and
``ignorePreferredTermsOfExistingPods``. PreFilter returns Skip when the pod has no required
pod (anti-)affinity and no existing pod's required anti-affinity matches it; PreScore returns
Skip when no preferred term (the pod's or an existing pod's) matches anything.

Filter reasons, in upstream order: ``node(s) didn't match pod affinity rules``
(UnschedulableAndUnresolvable), ``node(s) didn't match pod anti-affinity rules`` and
``node(s) didn't satisfy existing pods anti-affinity rules`` (Unschedulable).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pkg.util.topologycounts import PodCounter
from scheduler.apis.config import InterPodAffinityArgs
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from scheduler.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    PodUpdatingPreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from scheduler.framework.plugins.interpodaffinity import filtering, scoring
from scheduler.framework.plugins.interpodaffinity.filtering import (
    PRE_FILTER_STATE_KEY,
    PreFilterState,
)
from scheduler.framework.plugins.interpodaffinity.namespaces import Namespaces
from scheduler.framework.plugins.interpodaffinity.scoring import PRE_SCORE_STATE_KEY
from scheduler.framework.plugins.interpodaffinity.terms import (
    NAME,
    PodAffinityTerms,
    WeightedAffinityTerm,
    matches_all,
    pod_dict_terms,
    pod_terms,
)
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status, state_not_found, unresolvable
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.interface import ExtendedHandle


class InterPodAffinity(PodUpdatingPreFilterExtensions, PreFilterPlugin, FilterPlugin,
                       PreScorePlugin, ScorePlugin, EnqueueExtensions):
    name = NAME
    pre_filter_state_key = PRE_FILTER_STATE_KEY
    has_normalize = True

    def __init__(self, args: InterPodAffinityArgs | None, handle: ExtendedHandle) -> None:
        super().__init__(args, handle)
        args = args if args is not None else InterPodAffinityArgs()
        self.hard_pod_affinity_weight: int = args.hard_pod_affinity_weight
        self.ignore_preferred_terms_of_existing_pods = args.ignore_preferred_terms_of_existing_pods
        self.namespaces = Namespaces(handle.informer_factory)
        self._counter = PodCounter()

    # PreFilter / Filter --------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   snapshot: Snapshot) -> tuple[PreFilterResult | None, Status | None]:
        terms = pod_terms(pod)
        if terms.error:
            return None, unresolvable(f"parsing pod: {terms.error}")
        if (not snapshot.have_pods_with_required_anti_affinity and not terms.required_affinity
                and not terms.required_anti_affinity):
            return None, Status(Code.SKIP)
        affinity = tuple(self.namespaces.merge(t) for t in terms.required_affinity)
        anti_affinity = tuple(self.namespaces.merge(t) for t in terms.required_anti_affinity)
        namespace_labels = self.namespaces.labels(pod.namespace)
        existing = filtering.existing_anti_affinity_counts(snapshot, pod, namespace_labels)
        if existing.is_empty() and not affinity and not anti_affinity:
            return None, Status(Code.SKIP)
        affinity_counts, anti_counts = filtering.incoming_counts(
            snapshot, self._counter, affinity, anti_affinity)
        state.write(PRE_FILTER_STATE_KEY, PreFilterState(
            affinity, anti_affinity, matches_all(affinity, pod.namespace, pod.labels),
            namespace_labels, existing, affinity_counts, anti_counts))
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return state_not_found(PRE_FILTER_STATE_KEY)
        return filtering.check(s, node_info)

    def filter_nodes(self, state: CycleState, pod: PodInfo,
                     snapshot: Snapshot) -> np.ndarray | None:
        mask = filtering.mask(state.read(PRE_FILTER_STATE_KEY), snapshot)
        return None if mask.all() else mask

    def explain(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> str | None:
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        return None if s is None else filtering.explain(s, node_info)

    # PreScore / Score ----------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo,
                  nodes: Sequence[NodeInfo]) -> Status | None:
        if not nodes:
            return Status(Code.SKIP)
        terms = pod_terms(pod)
        if terms.error:
            return Status(Code.ERROR, f"failed to parse pod: {terms.error}")
        has_constraints = bool(terms.preferred_affinity or terms.preferred_anti_affinity)
        snapshot = self.handle.snapshot
        if not has_constraints and (self.ignore_preferred_terms_of_existing_pods
                                    or not snapshot.have_pods_with_affinity):
            return Status(Code.SKIP)
        scores = scoring.topology_scores(
            snapshot, self._counter, pod, self._merged(terms.preferred_affinity),
            self._merged(terms.preferred_anti_affinity), self.namespaces.labels(pod.namespace),
            self.hard_pod_affinity_weight)
        if scores is None:
            return Status(Code.SKIP)
        state.write(PRE_SCORE_STATE_KEY, scores)
        return None

    def _merged(self, terms: tuple[WeightedAffinityTerm, ...]
                ) -> tuple[WeightedAffinityTerm, ...]:
        return tuple(WeightedAffinityTerm(self.namespaces.merge(wt.term), wt.weight)
                     for wt in terms)

    def score(self, state: CycleState, pod: PodInfo,
              node_info: NodeInfo) -> tuple[int, Status | None]:
        scores = state.get(PRE_SCORE_STATE_KEY)
        if scores is None:
            return 0, state_not_found(PRE_SCORE_STATE_KEY)
        return scoring.score(scores, node_info), None

    def score_nodes(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
                    idx: np.ndarray) -> tuple[np.ndarray, Status | None]:
        scores = state.get(PRE_SCORE_STATE_KEY)
        if scores is None:
            return np.zeros(len(idx), dtype=np.int64), state_not_found(PRE_SCORE_STATE_KEY)
        return scoring.score_nodes(scores, idx), None

    def normalize_score(self, state: CycleState, pod: PodInfo,
                        scores: np.ndarray) -> Status | None:
        if state.get(PRE_SCORE_STATE_KEY) is None:
            return state_not_found(PRE_SCORE_STATE_KEY)
        scoring.normalize(scores)
        return None

    # Events ------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # Add: a pod matching the affinity; UpdatePodLabel: labels that now match or no
            # longer clash; Delete: a clashing pod gone.
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL
                             | ActionType.DELETE), is_schedulable_after_pod_change),
            # With queueing hints there is no preCheck to miss Node/Add, so no UpdateNodeTaint.
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                is_schedulable_after_node_change),
        ]


def _required(pod: dict[str, Any]) -> PodAffinityTerms | None:
    terms = pod_dict_terms(pod)
    return None if terms.error else terms


def _meta_of(pod: dict[str, Any]) -> tuple[str, dict[str, str]]:
    meta = pod.get("metadata") or {}
    return meta.get("namespace", ""), meta.get("labels") or {}


def is_schedulable_after_pod_change(pod: dict[str, Any], old: Any, new: Any) -> QueueingHint:
    """Queue when an assigned pod now matches all the affinity terms, stopped (or, deleted,
    ceased) matching all the anti-affinity terms, or a deleted pod had required
    anti-affinity (it may have been what kept the pod out)."""
    if any(p is not None and not (p.get("spec") or {}).get("nodeName") for p in (old, new)):
        return QueueingHint.QUEUE_SKIP
    terms = _required(pod)
    if terms is None:
        return QueueingHint.QUEUE
    affinity, anti = terms.required_affinity, terms.required_anti_affinity
    if old is not None and new is not None:
        if (not matches_all(affinity, *_meta_of(old))
                and matches_all(affinity, *_meta_of(new))):
            return QueueingHint.QUEUE
        if matches_all(anti, *_meta_of(old)) and not matches_all(anti, *_meta_of(new)):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
    if new is not None:
        return QueueingHint.QUEUE if matches_all(affinity, *_meta_of(new)) else (
            QueueingHint.QUEUE_SKIP)
    deleted = pod_dict_terms(old)
    if matches_all(anti, *_meta_of(old)) or deleted.required_anti_affinity:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def is_schedulable_after_node_change(pod: dict[str, Any], old: Any, new: Any) -> QueueingHint:
    """Queue when a node gains (or changes) an affinity term's topology label, or loses (or
    changes) an anti-affinity term's; every added node may help anti-affinity."""
    terms = _required(pod)
    if terms is None:
        return QueueingHint.QUEUE
    new_labels = ((new or {}).get("metadata") or {}).get("labels") or {}
    old_labels = None if old is None else (old.get("metadata") or {}).get("labels") or {}
    for t in terms.required_affinity:
        key = t.topology_key
        if key not in new_labels:
            continue
        if old_labels is None or key not in old_labels or old_labels[key] != new_labels[key]:
            return QueueingHint.QUEUE
    for t in terms.required_anti_affinity:
        if old_labels is None:
            return QueueingHint.QUEUE
        key = t.topology_key
        if key in old_labels and old_labels.get(key) != new_labels.get(key):
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
