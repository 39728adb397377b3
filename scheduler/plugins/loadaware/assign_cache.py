"""The pods assigned to each node and each node's NodeMetric, fed by informers and Reserve.

Corresponds to koordinator ``pkg/scheduler/plugins/loadaware/pod_assign_cache.go``
(``podAssignCache``: ``assign``/``unAssign``, ``shouldEstimatePodDeadline``, the pod and
NodeMetric event handlers). Informer handlers run on their own threads, so every change happens
under one lock and names its node in ``dirty``; the plugin's per-node arrays re-read exactly
those nodes at the next cycle.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from api.extension.load_aware import (
    get_estimated_seconds_after_initialized,
    get_estimated_seconds_after_pod_scheduled,
)
from api.extension.objects import is_pod_terminated
from pkg.client.informers import EventHandlerFuncs, deleted_object
from pkg.events.recorder import WARNING
from pkg.util.clock import Clock
from scheduler.plugins.loadaware.estimator import DefaultEstimator, is_prod_pod
from scheduler.plugins.loadaware.metric import MetricSummary, summarize, timestamp
from scheduler.plugins.loadaware.nodeload import AssignedPod, NodeLoad, UsageSource
from scheduler.plugins.loadaware.vector import ResourceVectorizer, Vector

if TYPE_CHECKING:
    from scheduler.apis.config import LoadAwareSchedulingArgs
    from scheduler.frameworkext.interface import EventRecorder

log = logging.getLogger(__name__)

# The Warning event on a NodeMetric the plugin cannot use.
REASON_INVALID_NODE_METRIC = "InvalidNodeMetric"

# Set on the in-memory pods that stand for Reservations (Reservation plugin); such pods never
# run, so the informer path leaves them out.
ANNOTATION_RESERVE_POD = "scheduling.koordinator.sh/reserve-pod"


def pod_uid(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return meta.get("uid") or f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _same_but_node_name(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """Whether two pod specs differ at most in nodeName (which binding sets)."""
    if a is None or b is None:
        return a is b
    if len(a) == len(b) and a == b:
        return True
    return ({k: v for k, v in a.items() if k != "nodeName"}
            == {k: v for k, v in b.items() if k != "nodeName"})


def _true_condition_time(pod: Mapping[str, Any], kind: str) -> float | None:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == kind:
            return timestamp(c.get("lastTransitionTime")) if c.get("status") == "True" else None
    return None


class PodAssignCache:
    def __init__(self, vectorizer: ResourceVectorizer, estimator: DefaultEstimator,
                 args: LoadAwareSchedulingArgs, clock: Clock,
                 recorder: EventRecorder | None = None) -> None:
        self.vectorizer = vectorizer
        self.recorder = recorder
        self.estimator = estimator
        self.args = args
        self.clock = clock
        self.lock = threading.Lock()
        self.nodes: dict[str, NodeLoad] = {}
        # uid → (node, spec, conditions) of the pod as last assigned.
        self._pods: dict[str, tuple[str, Any, Any]] = {}
        self.dirty: set[str] = set()

    # Reading -----------------------------------------------------------------------------

    def existing(self, node: str,
                 source: UsageSource) -> tuple[MetricSummary | None, Vector | None]:
        """The node's NodeMetric summary and its existing load (None, None without one)."""
        with self.lock:
            load = self.nodes.get(node)
            if load is None or load.metric is None:
                return None, None
            return load.metric, load.existing(source)

    def take_dirty(self) -> set[str]:
        """Nodes changed since the last call; the caller holds ``lock``."""
        dirty, self.dirty = self.dirty, set()
        return dirty

    # Pods --------------------------------------------------------------------------------

    def assign(self, node: str, pod: Mapping[str, Any], uid: str | None = None) -> None:
        """Account ``pod`` on ``node`` (added, updated, or reserved there by the scheduler)."""
        if node and not is_pod_terminated(pod):
            self._put(node, pod, uid or pod_uid(pod), self._estimate(pod), is_prod_pod(pod))

    def assign_estimated(self, node: str, pod: Mapping[str, Any], uid: str,
                         estimated: Vector | None, prod: bool) -> None:
        """``assign`` with the pod's estimate and prod-ness already known (the scheduler's,
        at Reserve)."""
        if node and not is_pod_terminated(pod):
            self._put(node, pod, uid, estimated if estimated is not None and estimated.any()
                      else None, prod)

    def _put(self, node: str, pod: Mapping[str, Any], uid: str,
             estimated: Vector | None, prod: bool) -> None:
        entry = self._assigned_pod(pod, estimated, prod)
        spec, conditions = pod.get("spec"), (pod.get("status") or {}).get("conditions")
        with self.lock:
            old = self._pods.get(uid)
            if old is not None and old[0] != node:
                self._remove_locked(old[0], uid)
            self._pods[uid] = (node, spec, conditions)
            load = self.nodes.get(node)
            if load is None:
                load = self.nodes[node] = NodeLoad(self.vectorizer,
                                                   self.args.prod_usage_include_sys)
            load.put_pod(uid, entry)
            self.dirty.add(node)

    def unassign(self, pod: Mapping[str, Any], uid: str | None = None) -> None:
        uid = uid or pod_uid(pod)
        with self.lock:
            old = self._pods.pop(uid, None)
            if old is not None:
                self._remove_locked(old[0], uid)

    def _remove_locked(self, node: str, uid: str) -> None:
        load = self.nodes.get(node)
        if load is not None and load.remove_pod(uid):
            if load.is_empty():
                del self.nodes[node]
            self.dirty.add(node)

    def _estimate(self, pod: Mapping[str, Any]) -> Vector | None:
        """The pod's estimate, None when every entry is 0 or a quantity is malformed."""
        try:
            vec = self.vectorizer.to_factor_vec(self.estimator.estimate_pod(pod))
        except ValueError as err:
            meta = pod.get("metadata") or {}
            log.warning("LoadAwareScheduling: cannot estimate pod %s/%s: %s",
                        meta.get("namespace"), meta.get("name"), err)
            return None
        return vec if vec.any() else None

    def _assigned_pod(self, pod: Mapping[str, Any], estimated: Vector | None,
                      prod: bool) -> AssignedPod:
        meta = pod.get("metadata") or {}
        scheduled = _true_condition_time(pod, "PodScheduled")
        # Without a PodScheduled condition, the moment the scheduler assigned it.
        ts = scheduled if scheduled is not None else self.clock.now()
        return AssignedPod(
            key=f"{meta.get('namespace', '')}/{meta.get('name', '')}",
            prod=prod,
            estimated=estimated, timestamp=ts, deadline=self._deadline(pod, ts))

    def _deadline(self, pod: Mapping[str, Any], scheduled: float) -> float | None:
        after_scheduled = after_initialized = -1
        args = self.args
        if args.allow_customize_estimation:
            annotations = (pod.get("metadata") or {}).get("annotations")
            after_scheduled = get_estimated_seconds_after_pod_scheduled(annotations)
            after_initialized = get_estimated_seconds_after_initialized(annotations)
        if after_scheduled < 0 and args.estimated_seconds_after_pod_scheduled is not None:
            after_scheduled = args.estimated_seconds_after_pod_scheduled
        if after_initialized < 0 and args.estimated_seconds_after_initialized is not None:
            after_initialized = args.estimated_seconds_after_initialized
        if after_initialized > 0:
            # Once initialised, slow init containers are over: count from that moment.
            initialized = _true_condition_time(pod, "Initialized")
            if initialized is not None:
                return initialized + after_initialized
        if after_scheduled > 0:
            return scheduled + after_scheduled
        return None

    def on_pod_add(self, pod: Any) -> None:
        if not _reserve_pod(pod):
            self.assign((pod.get("spec") or {}).get("nodeName") or "", pod)

    def on_pod_update(self, old: Any, pod: Any) -> None:
        if _reserve_pod(pod):
            return
        node = (pod.get("spec") or {}).get("nodeName") or ""
        uid = pod_uid(pod)
        with self.lock:
            cached = self._pods.get(uid)
        if cached is None or cached[0] != node:
            self.assign(node, pod, uid)
        elif is_pod_terminated(pod):
            self.unassign(pod, uid)
        else:
            spec, conditions = pod.get("spec"), (pod.get("status") or {}).get("conditions")
            if cached[1] == spec and cached[2] == conditions:
                return
            # A new condition may change the timestamp or deadline, a new spec the estimate
            # too; binding only sets nodeName, which leaves the estimate as it was.
            with self.lock:
                load = self.nodes.get(node)
                known = load.pods.get(uid) if load is not None else None
            if known is not None and _same_but_node_name(cached[1], spec):
                self._put(node, pod, uid, known.estimated, known.prod)
            else:
                self.assign(node, pod, uid)

    def on_pod_delete(self, obj: Any) -> None:
        self.unassign(deleted_object(obj))

    def pod_handler(self) -> EventHandlerFuncs:
        return EventHandlerFuncs(self.on_pod_add, self.on_pod_update, self.on_pod_delete)

    # NodeMetrics -------------------------------------------------------------------------

    def set_node_metric(self, metric: Mapping[str, Any]) -> None:
        name = (metric.get("metadata") or {}).get("name") or ""
        try:
            summary = summarize(metric, self.vectorizer)
        except ValueError as err:
            # A quantity that would not decode upstream, or a non-finite, negative or
            # beyond-int64 usage: the node's load is unknown, so it counts as having no
            # NodeMetric (passes Filter, scores 0) until koordlet reports a usable one.
            message = (f"LoadAwareScheduling ignores NodeMetric {name}: {err}; "
                       f"node {name} is treated as having no NodeMetric")
            log.warning("%s", message)
            if self.recorder is not None:
                self.recorder.eventf(metric, None, WARNING, REASON_INVALID_NODE_METRIC,
                                     "Scheduling", "%s", message)
            self.delete_node_metric(name)
            return
        with self.lock:
            load = self.nodes.get(name)
            if load is None:
                load = self.nodes[name] = NodeLoad(self.vectorizer,
                                                   self.args.prod_usage_include_sys)
            load.set_metric(summary)
            self.dirty.add(name)

    def delete_node_metric(self, name: str) -> None:
        with self.lock:
            load = self.nodes.get(name)
            if load is None or load.metric is None:
                return
            load.set_metric(None)
            if load.is_empty():
                del self.nodes[name]
            self.dirty.add(name)

    def node_metric_handler(self) -> EventHandlerFuncs:
        return EventHandlerFuncs(
            self.set_node_metric, lambda _old, new: self.set_node_metric(new),
            lambda obj: self.delete_node_metric(
                (deleted_object(obj).get("metadata") or {}).get("name") or ""))


def _reserve_pod(pod: Mapping[str, Any]) -> bool:
    return ((pod.get("metadata") or {}).get("annotations") or {}).get(
        ANNOTATION_RESERVE_POD) == "true"
