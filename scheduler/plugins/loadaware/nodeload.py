"""One node's measured load, its assigned pods, and the existing-load vector built from both.

Corresponds to ``nodeInfo`` in koordinator ``pkg/scheduler/plugins/loadaware/pod_assign_cache.go``
(``addPod``/``deletePod``, ``getTargetAggregatedUsage``, ``GetNodeMetricAndEstimatedOfExisting``).
The sums are kept up to date as pods and the NodeMetric change, so reading a node's existing
load costs one vector addition.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scheduler.plugins.loadaware.metric import MetricSummary, duration_key
from scheduler.plugins.loadaware.vector import ResourceVectorizer, Vector

_NEVER = float("-inf")


@dataclass(frozen=True, slots=True)
class UsageSource:
    """Which measurement a node's existing load starts from."""

    prod: bool = False  # koord-prod pods' usage (prod thresholds, scoreAccordingProdUsage)
    aggregation_type: str = ""  # "" = the latest node usage, else avg/p50/.../p99
    duration: int = 0  # ns; 0 = the longest window the NodeMetric reports


NODE_USAGE = UsageSource()
PROD_USAGE = UsageSource(prod=True)


def aggregated_usage(aggregation_type: str, seconds: float) -> UsageSource:
    return UsageSource(aggregation_type=aggregation_type, duration=duration_key(seconds))


@dataclass(frozen=True, slots=True)
class AssignedPod:
    """A pod the node runs or is about to run, as the plugin accounts for it."""

    key: str  # namespace/name, as podsMetric names it
    prod: bool  # the pod's own priority class is koord-prod
    estimated: Vector | None  # None when every entry is 0
    timestamp: float  # when it was scheduled (epoch seconds)
    deadline: float | None  # estimate it at least until then


def _delta(e: Vector, u: Vector | None) -> Vector:
    return e if u is None else np.maximum(e - u, 0)


class NodeLoad:
    """Assigned pods and the NodeMetric of one node, with the sums derived from them."""

    __slots__ = ("pods", "metric", "prod_usage", "node_delta", "prod_delta", "node_estimated",
                 "_vectorizer", "_prod_usage_include_sys")

    def __init__(self, vectorizer: ResourceVectorizer, prod_usage_include_sys: bool) -> None:
        self._vectorizer = vectorizer
        self._prod_usage_include_sys = prod_usage_include_sys
        self.pods: dict[str, AssignedPod] = {}  # by uid
        self.metric: MetricSummary | None = None
        self._reset()

    def _reset(self) -> None:
        v = self._vectorizer
        m = self.metric
        self.prod_usage = v.empty()
        if self._prod_usage_include_sys and m is not None and m.system_usage is not None:
            self.prod_usage += m.system_usage
        self.node_delta = v.empty()  # max(0, e - u) of pods whose usage may be missing
        self.prod_delta = v.empty()  # the same, over prod pods
        self.node_estimated = v.empty()  # full estimates of every pod

    def is_empty(self) -> bool:
        return self.metric is None and not self.pods

    def set_metric(self, metric: MetricSummary | None) -> None:
        self.metric = metric
        self._reset()
        if metric is not None:
            for pod in self.pods.values():
                self._account(pod, 1)

    def put_pod(self, uid: str, pod: AssignedPod) -> None:
        self.remove_pod(uid)
        self.pods[uid] = pod
        if self.metric is not None:
            self._account(pod, 1)

    def remove_pod(self, uid: str) -> bool:
        pod = self.pods.pop(uid, None)
        if pod is None:
            return False
        if self.metric is not None:
            self._account(pod, -1)
        return True

    def _account(self, pod: AssignedPod, sign: int) -> None:
        m = self.metric
        assert m is not None
        u = m.pod_usages.get(pod.key)
        # Prod usage counts only when the pod claims prod and koordlet reports it as prod
        # (the class may have changed, or a stale pod may linger in the report).
        active_prod = pod.prod and pod.key in m.prod_pods
        if active_prod:
            assert u is not None  # the prod pods are among the pods with usage
            self.prod_usage += sign * u
        e = pod.estimated
        if e is None:
            return
        updated = m.update_time if m.update_time is not None else _NEVER
        # Not measured yet, scheduled too recently to be in the report, or still within its
        # estimation deadline: the measurement may not show the pod's load yet.
        must = (u is None or pod.timestamp > updated - m.report_interval
                or (pod.deadline is not None and pod.deadline > updated))
        if must:
            self.node_delta += sign * _delta(e, u)
        self.node_estimated += sign * e
        if not pod.prod:
            return
        if not active_prod and u is not None:
            u, must = None, True
        if must:
            self.prod_delta += sign * _delta(e, u)

    def existing(self, source: UsageSource) -> Vector | None:
        """Load already on the node as ``source`` sees it; None without a NodeMetric."""
        m = self.metric
        if m is None:
            return None
        if source.prod:
            return self.prod_usage + self.prod_delta
        usage = m.node_usage
        if source.aggregation_type:
            usage = m.aggregated.get((source.aggregation_type, source.duration))
            if usage is None and source.duration == 0:
                usage = m.node_usage
        if usage is None:
            # A window the NodeMetric does not report: all the estimates, no measurement.
            return self.node_estimated.copy()
        return usage + self.node_delta
