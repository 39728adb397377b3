"""The LoadAwareScheduling plugin: filter and score nodes by measured load plus estimates.

Corresponds to koordinator ``pkg/scheduler/plugins/loadaware/load_aware.go``. A node's load is
its NodeMetric usage (latest, aggregated percentile, or koord-prod pods only) plus estimates of
pods the metric may not show yet, plus the incoming pod's estimate. Filter rejects nodes whose
rounded usage percentage of some resource exceeds its threshold; Score prefers the least used
nodes (truncating integer arithmetic, no normalisation).

Inputs, through the handle: ``informer_factory`` (pods and ``nodemetrics.v1alpha1.slo`` dicts
feed the assign cache), ``clock`` (metric expiry and scheduling timestamps) and the snapshot
passed to each call. ``forget_pod`` is the plugin's ForgetPod handler: the framework calls it
when an assumed pod is forgotten.

``filter``/``score`` read the cache node by node and are the reference; ``filter_nodes`` and
``score_nodes`` do the same over ``NodeColumns`` arrays. Nodes with their own thresholds
annotation are few, so they are judged one at a time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from api.extension.amplification import ANNOTATION_NODE_RAW_ALLOCATABLE
from api.extension.load_aware import ANNOTATION_CUSTOM_USAGE_THRESHOLDS
from api.extension.priority import PriorityClass
from pkg.client.resources import NODE_METRICS, PODS
from scheduler.apis.config import LoadAwareSchedulingArgs
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import (
    NODE_METRIC,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
)
from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    EnqueueExtensions,
    FilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
    ReservePlugin,
    ScorePlugin,
)
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.interface import ExtendedHandle
from scheduler.plugins.loadaware.assign_cache import PodAssignCache
from scheduler.plugins.loadaware.columns import NodeColumns
from scheduler.plugins.loadaware.estimator import new_estimator, priority_class_of
from scheduler.plugins.loadaware.metric import MetricSummary
from scheduler.plugins.loadaware.nodeload import (
    NODE_USAGE,
    PROD_USAGE,
    UsageSource,
    aggregated_usage,
)
from scheduler.plugins.loadaware.thresholds import FilterProfile, args_profile, node_profile
from scheduler.plugins.loadaware.vector import (
    ResourceVectorizer,
    Vector,
    round_half_away,
    round_half_away_array,
)

NAME = "LoadAwareScheduling"
ERR_REASON_NODE_METRIC_EXPIRED = "node(s) nodeMetric expired"
ERR_REASON_USAGE_EXCEED_THRESHOLD = "node(s) {} usage exceed threshold"
ERR_REASON_AGGREGATED_USAGE_EXCEED_THRESHOLD = "node(s) {} aggregated usage exceed threshold"


@dataclass(frozen=True, slots=True)
class _PodFacts:
    """What the plugin needs of the pod being scheduled (memoised on its PodInfo)."""

    daemonset: bool
    prod: bool
    estimated: Vector | None  # None: the pod could not be estimated


@dataclass(frozen=True, slots=True)
class _Miss:
    """Why a node failed Filter: the status, and by how much (for the diagnosis)."""

    status: Status
    detail: str


def least_used_score(used: int, capacity: int) -> int:
    if capacity == 0 or used > capacity:
        return 0
    return (capacity - used) * MAX_NODE_SCORE // capacity


class LoadAwareScheduling(PreFilterPlugin, FilterPlugin, ScorePlugin, ReservePlugin,
                          EnqueueExtensions):
    name = NAME

    def __init__(self, args: LoadAwareSchedulingArgs | None, handle: ExtendedHandle) -> None:
        args = args if args is not None else LoadAwareSchedulingArgs()
        errors = args.validate_args()
        if errors:
            raise ValueError("; ".join(str(e) for e in errors))
        super().__init__(args, handle)
        self.args = args
        self.clock = handle.clock
        self.vectorizer = ResourceVectorizer.from_args(args)
        self.estimator = new_estimator(args)
        self.cache = PodAssignCache(self.vectorizer, self.estimator, args, self.clock,
                                    handle.recorder)
        self.columns = NodeColumns(self.cache)
        self.filter_profile = args_profile(args, self.vectorizer)
        self.score_weights = self.vectorizer.to_factor_vec(args.resource_weights)
        # Validated args always weight something: resourceWeights are 1..100 and default to
        # cpu and memory unless a dominant weight is set, so upstream's "Score disabled" case
        # cannot arise.
        self.dominant_weight: int = args.dominant_resource_weight
        agg = args.aggregated
        self._score_usage = (aggregated_usage(agg.score_aggregation_type,
                                              agg.score_aggregated_duration)
                             if agg is not None and agg.score_aggregation_type else NODE_USAGE)
        handle.register_forget_pod_handler(self.forget_pod)
        factory = handle.informer_factory
        if factory is not None:
            factory.informer_for(PODS, typed=False).add_event_handler(self.cache.pod_handler())
            factory.informer_for(NODE_METRICS, typed=False).add_event_handler(
                self.cache.node_metric_handler())

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE)),
            ClusterEventWithHint(ClusterEvent(
                NODE_METRIC, ActionType.ADD | ActionType.UPDATE | ActionType.DELETE)),
        ]

    # The pod -----------------------------------------------------------------------------

    def _facts(self, pod: PodInfo) -> _PodFacts:
        facts = pod.memo.get(NAME)
        if facts is None:
            p = pod.pod
            owners = (p.get("metadata") or {}).get("ownerReferences") or ()
            # The class (a QoS computation over every container) once for both facts.
            priority_class = priority_class_of(p)
            try:
                estimated: Vector | None = self.vectorizer.to_factor_vec(
                    self.estimator.estimate_pod(p, priority_class=priority_class,
                                                requests=pod.requests))
            except ValueError:
                estimated = None
            facts = pod.memo[NAME] = _PodFacts(
                daemonset=any(o.get("kind") == "DaemonSet" for o in owners),
                prod=priority_class == PriorityClass.PROD, estimated=estimated)
        return facts

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   snapshot: Snapshot) -> tuple[PreFilterResult | None, Status | None]:
        self._facts(pod)  # estimate once, before Filter and Score need it
        return None, None

    # Nodes -------------------------------------------------------------------------------

    def _expired(self, update_time: float | None, now: float) -> bool:
        limit = self.args.node_metric_expiration_seconds
        return update_time is None or (limit > 0 and now - update_time >= limit)

    def _expired_mask(self, update_time: np.ndarray, now: float) -> np.ndarray:
        limit = self.args.node_metric_expiration_seconds
        missing = np.isnan(update_time)
        if limit <= 0:
            return missing
        return missing | (now - update_time >= limit)

    def _node_allocatable(self, node: Mapping[str, Any]) -> Vector:
        return self.vectorizer.to_factor_vec(self.estimator.estimate_node(node))

    def _allocatable(self, snapshot: Snapshot) -> np.ndarray:
        """Allocatable per resource row and node column (raw allocatable where annotated)."""
        def compute() -> np.ndarray:
            alloc = np.vstack([snapshot.allocatable_of(r) for r in self.vectorizer.names])
            for i, ni in enumerate(snapshot.node_infos):
                if ANNOTATION_NODE_RAW_ALLOCATABLE in ni.annotations:
                    alloc[:, i] = self._node_allocatable(ni.node or {})
            return alloc
        return snapshot.memoized((NAME, "allocatable", self.vectorizer.names), compute)

    def _profile(self, node: Mapping[str, Any]) -> FilterProfile:
        return node_profile(self.filter_profile, self.vectorizer,
                            (node.get("metadata") or {}).get("annotations"))

    def _custom_profiles(self, snapshot: Snapshot) -> list[tuple[int, FilterProfile]]:
        """Nodes whose annotation replaces some thresholds, with their profiles."""
        def compute() -> list[tuple[int, FilterProfile]]:
            out = []
            for i, ni in enumerate(snapshot.node_infos):
                if ANNOTATION_CUSTOM_USAGE_THRESHOLDS in ni.annotations:
                    profile = self._profile(ni.node or {})
                    if profile is not self.filter_profile:
                        out.append((i, profile))
            return out
        return snapshot.memoized((NAME, "thresholds", id(self)), compute)

    # Filter ------------------------------------------------------------------------------

    def _miss(self, pod: PodInfo, node_info: NodeInfo) -> _Miss | None:
        node = node_info.node
        if node is None:
            return _Miss(Status(Code.ERROR, "node not found"), "")
        facts = self._facts(pod)
        if facts.daemonset:
            return None
        thresholds, source, aggregated = self._profile(node).pick(facts.prod)
        if thresholds is None or not thresholds.any():
            return None
        # No NodeMetric: koordlet may not run there, and load awareness is only an optimisation.
        metric, existing = self.cache.existing(node_info.name, source)
        if metric is None or existing is None:
            return None
        now = self.clock.now()
        if self.args.filter_expired_node_metrics and self._expired(metric.update_time, now):
            if self.args.enable_schedule_when_node_metrics_expired:
                return None
            return _Miss(Status(Code.UNSCHEDULABLE, ERR_REASON_NODE_METRIC_EXPIRED),
                         _age(metric, now, self.args.node_metric_expiration_seconds))
        if not metric.has_node_metric:
            return None
        alloc = self._node_allocatable(node)
        # The existing load alone first, as upstream, so its reason wins when both fail.
        miss = self._over_threshold(existing, alloc, thresholds, aggregated)
        if miss is None and facts.estimated is not None:
            miss = self._over_threshold(existing + facts.estimated, alloc, thresholds,
                                        aggregated)
        return miss

    def _over_threshold(self, used: Vector, alloc: Vector, thresholds: Vector,
                        aggregated: bool) -> _Miss | None:
        for i, name in enumerate(self.vectorizer.names):
            threshold, total = int(thresholds[i]), int(alloc[i])
            if threshold == 0 or total == 0:
                continue
            usage = round_half_away(float(used[i]) / float(total) * 100)
            if usage <= threshold:
                continue
            reason = (ERR_REASON_AGGREGATED_USAGE_EXCEED_THRESHOLD if aggregated
                      else ERR_REASON_USAGE_EXCEED_THRESHOLD)
            return _Miss(Status(Code.UNSCHEDULABLE, reason.format(name)),
                         f"{name} usage {usage}% > threshold {threshold}%")
        return None

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        miss = self._miss(pod, node_info)
        return None if miss is None else miss.status

    def explain(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> str | None:
        miss = self._miss(pod, node_info)
        return miss.detail if miss is not None and miss.detail else None

    def filter_nodes(self, state: CycleState, pod: PodInfo,
                     snapshot: Snapshot) -> np.ndarray | None:
        facts = self._facts(pod)
        if facts.daemonset:
            return None
        thresholds, source, _ = self.filter_profile.pick(facts.prod)
        if thresholds is not None and not thresholds.any():
            thresholds = None  # all zero: filtering is off
        custom = self._custom_profiles(snapshot)
        if thresholds is None and not custom:
            return None
        self.columns.sync(snapshot)
        if not self.columns.with_metric:
            return None  # every node passes: only a NodeMetric can fail one
        alloc = self._allocatable(snapshot)
        now = self.clock.now()
        n = len(snapshot)
        mask = (np.ones(n, dtype=bool) if thresholds is None
                else self._passes(slice(None), thresholds, source, facts.estimated, alloc, now))
        for i, profile in custom:
            t, s, _ = profile.pick(facts.prod)
            mask[i] = (t is None or not t.any()
                       or bool(self._passes(np.array([i]), t, s, facts.estimated, alloc, now)[0]))
        return None if mask.all() else mask

    def _passes(self, idx: np.ndarray | slice, thresholds: Vector, source: UsageSource,
                estimated: Vector | None, alloc: np.ndarray, now: float) -> np.ndarray:
        """Filter verdicts of the columns ``idx`` (a slice avoids copying every array)."""
        cols = self.columns
        has_metric = cols.has_metric[idx]
        judged = has_metric & cols.has_node_metric[idx]
        failed = np.zeros(len(has_metric), dtype=bool)
        if self.args.filter_expired_node_metrics:
            expired = has_metric & self._expired_mask(cols.update_time[idx], now)
            if not self.args.enable_schedule_when_node_metrics_expired:
                failed |= expired
            judged &= ~expired
        used = cols.existing(source)[:, idx]
        if estimated is not None:
            used = used + estimated[:, None]
        sub_alloc = alloc[:, idx]
        exceeded = np.zeros(len(has_metric), dtype=bool)
        with np.errstate(divide="ignore", invalid="ignore"):
            for r in np.flatnonzero(thresholds):
                total = sub_alloc[r]
                usage = round_half_away_array(used[r] / total.astype(np.float64) * 100)
                exceeded |= (total != 0) & (usage > thresholds[r])
        return ~(failed | (judged & exceeded))

    # Score -------------------------------------------------------------------------------

    def _score_source(self, prod: bool) -> UsageSource:
        return PROD_USAGE if prod and self.args.score_according_prod_usage else self._score_usage

    def score(self, state: CycleState, pod: PodInfo,
              node_info: NodeInfo) -> tuple[int, Status | None]:
        node = node_info.node
        if node is None:
            return 0, Status(Code.ERROR, "node not found")
        facts = self._facts(pod)
        metric, existing = self.cache.existing(node_info.name, self._score_source(facts.prod))
        if (metric is None or existing is None or self._expired(metric.update_time,
                                                                self.clock.now())
                or not metric.has_node_metric or facts.estimated is None):
            return 0, None
        used = existing + facts.estimated
        alloc = self._node_allocatable(node)
        dominant = self.dominant_weight
        total, weight_sum = 0, dominant
        dominant_score = MAX_NODE_SCORE
        for w, u, a in zip(self.score_weights.tolist(), used.tolist(), alloc.tolist()):
            s = least_used_score(u, a)
            total += s * w
            weight_sum += w
            dominant_score = min(dominant_score, s)  # over every resource, weighted or not
        if dominant:
            total += dominant_score * dominant
        return total // weight_sum, None

    def score_nodes(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
                    idx: np.ndarray) -> tuple[np.ndarray, Status | None]:
        out = np.zeros(len(idx), dtype=np.int64)
        facts = self._facts(pod)
        if len(idx) == 0 or facts.estimated is None:
            return out, None
        cols = self.columns
        cols.sync(snapshot)
        if not cols.with_metric:
            return out, None  # no node has a NodeMetric to score by
        valid = (cols.has_metric[idx] & cols.has_node_metric[idx]
                 & ~self._expired_mask(cols.update_time[idx], self.clock.now()))
        used = cols.existing(self._score_source(facts.prod))[:, idx] + facts.estimated[:, None]
        alloc = self._allocatable(snapshot)[:, idx]
        scores = np.where((alloc == 0) | (used > alloc), 0,
                          (alloc - used) * MAX_NODE_SCORE // np.where(alloc == 0, 1, alloc))
        total = (scores * self.score_weights[:, None]).sum(axis=0)
        weight_sum = int(self.score_weights.sum()) + self.dominant_weight
        if self.dominant_weight:
            total += np.minimum(scores.min(axis=0), MAX_NODE_SCORE) * self.dominant_weight
        out[valid] = (total // weight_sum)[valid]
        return out, None

    # Reserve -----------------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        # The estimate Filter and Score used (estimating again costs a quantity parse each).
        facts = self._facts(pod)
        self.cache.assign_estimated(node_name, pod.pod, pod.uid or pod.key, facts.estimated,
                                    facts.prod)
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        self.cache.unassign(pod.pod, pod.uid or pod.key)

    def forget_pod(self, pod: PodInfo) -> None:
        """The framework forgot an assumed pod: stop counting it."""
        self.cache.unassign(pod.pod, pod.uid or pod.key)


def _age(metric: MetricSummary, now: float, limit: int) -> str:
    if metric.update_time is None:
        return "nodeMetric was never updated"
    return f"nodeMetric updated {now - metric.update_time:.0f}s ago (expiration {limit}s)"
