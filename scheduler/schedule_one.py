"""One pod's way through the scheduler: the scheduling cycle, the binding cycle, failures.

Corresponds to kube-scheduler ``pkg/scheduler/schedule_one.go``:

* ``ScheduleOne`` (mixed into ``scheduler.Scheduler``, as upstream's methods on
  ``*Scheduler``): ``schedule_one`` pops a pod and runs ``_scheduling_cycle`` (snapshot, find
  a host, PostFilter when none fits, assume, Reserve, Permit); the pod's ``_binding_cycle``
  (WaitOnPermit, PreBind, Bind, PostBind) then runs on the binding pool.
  ``_handle_scheduling_failure`` requeues a pod whose attempt failed and records its
  nomination, ``PodScheduled=False`` condition (``_update_pod``), ``FailedScheduling`` event
  and diagnosis. Events go through the profile's recorder (events.k8s.io, reported as the
  profile's schedulerName): ``Scheduled`` with action ``Binding``, ``FailedScheduling`` with
  action ``Scheduling`` and its note cut to the API's limit (``truncate_note``). A fake pod
  (a Reservation's reserve pod, ``Framework.fake_pod_owner``) is requeued only while its
  object is still pending, and its owner reports failures and bindings on that object.
* ``GenericScheduler.schedule`` is ``schedulePod`` (``findNodesThatFitPod``,
  ``numFeasibleNodesToFind``, ``prioritizeNodes``, ``selectHost``). Filter plugins run over
  the whole snapshot as masks (``Framework.filter_masks``); the feasible nodes taken are the
  first ``numFeasibleNodesToFind`` in rotating order from ``next_start_node_index``, which
  advances by the nodes examined, as upstream. Nodes with nominated pods of equal or higher
  priority are re-checked with those pods counted.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from pkg.client.resources import PODS
from pkg.events.events import NORMAL, NOTE_LENGTH_LIMIT, WARNING
from pkg.util.clock import Clock
from scheduler.diagnosis import (
    Diagnosis,
    FitError,
    NearestMiss,
    PendingDiagnoses,
    PluginRejections,
)
from scheduler.framework import events as ev
from scheduler.framework.cache import Cache, CacheError
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import FilterPlugin, NodeToStatus
from scheduler.framework.queue import QueuedPodInfo, SchedulingQueue
from scheduler.framework.runtime import Framework, PermitTimer
from scheduler.framework.snapshot import NodeInfosAt, Snapshot
from scheduler.framework.status import Code, Status, is_success
from scheduler.framework.types import PodInfo
from scheduler.frameworkext.interface import ClientSet
from scheduler.frameworkext.nominating import nomination_after_rejection
from scheduler.metrics.metrics import SchedulerMetrics

log = logging.getLogger(__name__)

PodGetter = Callable[[str], dict[str, Any] | None]

# Upstream samples plugin durations in 10% of cycles (pluginMetricsSamplePercent).
PLUGIN_METRICS_SAMPLE_PERCENT = 10
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


class SchedulingError(Exception):
    """A plugin failed with Error (not a fit problem): the pod goes to backoff."""

    def __init__(self, status: Status) -> None:
        self.status = status
        super().__init__(status.message())


class NoNodesAvailable(SchedulingError):
    def __init__(self) -> None:
        super().__init__(Status(Code.ERROR, "no nodes available to schedule pods"))


def num_feasible_nodes_to_find(num_all_nodes: int, percentage: int) -> int:
    """How many feasible nodes to look for before scoring (adaptive when percentage is 0)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if percentage == 0:
        percentage = 50 - num_all_nodes // 125
        if percentage < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND:
            percentage = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND
    k = num_all_nodes * percentage // 100
    return max(k, MIN_FEASIBLE_NODES_TO_FIND)


@dataclass(slots=True)
class ScheduleResult:
    suggested_host: str
    evaluated_nodes: int
    feasible_nodes: int


class GenericScheduler:
    """Finds the host for one pod; keeps the rotating start index between cycles."""

    def __init__(self, percentage_of_nodes_to_score: int = 0,
                 rng: random.Random | None = None) -> None:
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.next_start_node_index = 0
        self._rng = rng or random.Random()

    def schedule(self, fwk: Framework, state: CycleState, pod: PodInfo) -> ScheduleResult:
        snap = fwk.snapshot
        if len(snap) == 0:
            raise NoNodesAvailable()
        feasible, diagnosis, evaluated = self.find_nodes_that_fit(fwk, state, pod)
        if len(feasible) == 0:
            raise FitError(pod.key, len(snap), diagnosis)
        if len(feasible) == 1:
            return ScheduleResult(snap.node_infos[int(feasible[0])].name, evaluated, 1)
        status = fwk.run_pre_score(state, pod, NodeInfosAt(snap.node_infos, feasible))
        if not is_success(status):
            raise SchedulingError(status)  # type: ignore[arg-type]
        totals, status = fwk.run_score(state, pod, feasible)
        if not is_success(status):
            raise SchedulingError(status)  # type: ignore[arg-type]
        host = snap.node_infos[int(feasible[self._select(totals)])].name
        return ScheduleResult(host, evaluated, len(feasible))

    def _select(self, totals: np.ndarray) -> int:
        """Index of the highest total; ties broken uniformly at random, as selectHost."""
        best = np.flatnonzero(totals == totals.max())
        if len(best) == 1:
            return int(best[0])
        return int(best[self._rng.randrange(len(best))])

    def find_nodes_that_fit(self, fwk: Framework, state: CycleState,
                            pod: PodInfo) -> tuple[np.ndarray, Diagnosis, int]:
        """(feasible node indices, diagnosis, number of nodes evaluated)."""
        snap = fwk.snapshot
        diagnosis = Diagnosis()
        pre, status, restricting = fwk.run_pre_filter(state, pod)
        # The plugins that narrowed the nodes are among those that may make the pod fit later.
        diagnosis.unschedulable_plugins.update(restricting)
        if not is_success(status):
            assert status is not None
            if not status.is_rejected():
                raise SchedulingError(status)
            diagnosis.pre_filter_msg = status.message()
            diagnosis.node_to_status.absent = status
            if status.plugin:
                diagnosis.unschedulable_plugins.add(status.plugin)
            return np.empty(0, dtype=np.int64), diagnosis, 0

        n = len(snap)
        allowed: np.ndarray | None = None
        if pre is not None and pre.node_names is not None:
            allowed = np.zeros(n, dtype=bool)
            for name in pre.node_names:
                i = snap.index.get(name)
                if i is not None:
                    allowed[i] = True

        # A pod nominated by an earlier preemption goes to that node if it still fits.
        nominated = (pod.pod.get("status") or {}).get("nominatedNodeName")
        if nominated:
            ni = snap.get(nominated)
            if ni is not None and (allowed is None or allowed[snap.index[nominated]]):
                if is_success(fwk.run_filter_plugins_with_nominated_pods(state, pod, ni)):
                    return np.array([snap.index[nominated]], dtype=np.int64), diagnosis, 1

        masks = fwk.filter_masks(state, pod)
        feasible = allowed.copy() if allowed is not None else np.ones(n, dtype=bool)
        for _, m in masks:
            feasible &= m
        self._recheck_nominated(fwk, state, pod, feasible)

        candidates = n if allowed is None else int(allowed.sum())
        k = num_feasible_nodes_to_find(candidates, self.percentage_of_nodes_to_score)
        start = self.next_start_node_index % n
        rotated = np.flatnonzero(np.concatenate((feasible[start:], feasible[:start])))
        if len(rotated) > k:
            rotated = rotated[:k]
            examined_rotated = int(rotated[-1]) + 1
            if allowed is not None:
                order = np.concatenate((allowed[start:], allowed[:start]))
                examined = int(order[:examined_rotated].sum())
            else:
                examined = examined_rotated
        else:
            examined = candidates
        self.next_start_node_index = (start + examined) % n
        chosen = (rotated + start) % n
        if len(chosen) == 0:
            self._diagnose(fwk, state, pod, masks, allowed, restricting, diagnosis)
        return chosen, diagnosis, examined

    def _recheck_nominated(self, fwk: Framework, state: CycleState, pod: PodInfo,
                           feasible: np.ndarray) -> None:
        nominator = fwk.nominator
        if nominator is None:
            return
        snap = fwk.snapshot
        for node_name in nominator.nodes_with_nominated_pods():
            i = snap.index.get(node_name)
            if i is None or not feasible[i] or not fwk.nominated_pods_for(pod, node_name):
                continue
            if not is_success(fwk.run_filter_plugins_with_nominated_pods(
                    state, pod, snap.node_infos[i])):
                feasible[i] = False

    def _diagnose(self, fwk: Framework, state: CycleState, pod: PodInfo,
                  masks: list[tuple[FilterPlugin, np.ndarray]], allowed: np.ndarray | None,
                  restricting: set[str], diagnosis: Diagnosis) -> None:
        """Fill the diagnosis of a pod no node fits: statuses, per-plugin counts, nearest miss.

        Plugins are asked again on each node as the filter transformers leave it; where a
        transformer failed, its status is the node's.
        """
        snap = fwk.snapshot
        n = len(snap)
        statuses = diagnosis.node_to_status.statuses
        if allowed is not None:
            outside = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                             f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(restricting))}]")
            for i in np.flatnonzero(~allowed):
                statuses[snap.node_infos[i].name] = outside
        failures = np.zeros(n, dtype=np.int64)
        first_failed = np.full(n, -1, dtype=np.int64)
        for j, (plugin, m) in enumerate(masks):
            rejected = ~m if allowed is None else (~m & allowed)
            failures += rejected
            first_failed[(first_failed < 0) & rejected] = j
            idx = np.flatnonzero(rejected)
            if len(idx) == 0:
                continue
            rej = diagnosis.plugin_rejections[plugin.name] = PluginRejections(nodes=len(idx))
            for i in idx:
                pod_i, node_i, status = fwk.transformers.before_filter(state, pod,
                                                                       snap.node_infos[i])
                if status is None:
                    status = plugin.filter(state, pod_i, node_i)
                if status is None or status.code == Code.SUCCESS:
                    # Only a nominated pod made this node infeasible.
                    continue
                status.with_plugin(plugin.name)
                rej.reasons.update(status.reasons)
                if first_failed[i] == j:
                    statuses[snap.node_infos[i].name] = status
                    if status.code == Code.PENDING:
                        diagnosis.pending_plugins.add(plugin.name)
                    else:
                        diagnosis.unschedulable_plugins.add(plugin.name)
        # Nodes that passed every plugin mask but not the nominated-pods re-check.
        leftover = np.flatnonzero((first_failed < 0) if allowed is None
                                  else ((first_failed < 0) & allowed))
        for i in leftover:
            ni = snap.node_infos[i]
            status = fwk.run_filter_plugins_with_nominated_pods(state, pod, ni)
            if status is not None:
                statuses[ni.name] = status
                if status.plugin:
                    diagnosis.unschedulable_plugins.add(status.plugin)
        considered = np.flatnonzero(failures > 0) if allowed is None else np.flatnonzero(
            (failures > 0) & allowed)
        if len(considered) == 0:
            return
        best = int(considered[np.argmin(failures[considered])])
        ni = snap.node_infos[best]
        miss = NearestMiss(node=ni.name, failed_plugins=[])
        pod_b, node_b, failed = fwk.transformers.before_filter(state, pod, ni)
        for plugin, m in masks:
            if m[best]:
                continue
            miss.failed_plugins.append(plugin.name)
            status = failed if failed is not None else plugin.filter(state, pod_b, node_b)
            miss.reasons[plugin.name] = list(status.reasons) if status is not None else []
            detail = None if failed is not None else plugin.explain(state, pod_b, node_b)
            if detail:
                miss.details[plugin.name] = detail
        diagnosis.nearest_miss = miss


def truncate_note(message: str) -> str:
    """A FailedScheduling note the API server accepts (upstream ``truncateMessage``): a long
    diagnosis over thousands of nodes is cut at the limit and ends with " ..."."""
    raw = message.encode()
    if len(raw) <= NOTE_LENGTH_LIMIT:
        return message
    suffix = " ..."
    return raw[:NOTE_LENGTH_LIMIT - len(suffix)].decode(errors="ignore") + suffix


class ScheduleOne:
    """The cycles of ``scheduler.Scheduler``, which sets these attributes."""

    profiles: dict[str, Framework]
    queue: SchedulingQueue
    cache: Cache
    snapshot: Snapshot
    client: ClientSet | None
    metrics: SchedulerMetrics | None
    clock: Clock
    # The informer's view of a pod by key; failures consult it before requeueing.
    pod_getter: PodGetter | None
    rng: random.Random
    algorithm: GenericScheduler
    default_percentage_of_nodes_to_score: int
    binder_pool: ThreadPoolExecutor
    permit_timer: PermitTimer
    diagnoses: PendingDiagnoses
    # Binding cycles in flight, under inflight_cond (Scheduler.wait_for_bindings).
    inflight: int
    inflight_cond: threading.Condition

    def schedule_one(self, timeout: float | None = None) -> bool:
        """Pop one pod and run its scheduling cycle; False when nothing was popped."""
        qpi = self.queue.pop(timeout)
        if qpi is None:
            return False
        pi = qpi.pod_info
        fwk = self.profiles.get(pi.scheduler_name)
        if fwk is None:
            log.error("Pod %s names scheduler %r, which has no profile here", pi.key,
                      pi.scheduler_name)
            self.queue.done(pi.uid)
            return True
        if (pi.pod.get("metadata") or {}).get("deletionTimestamp") or \
                self.cache.is_assumed(pi.key):
            self.queue.done(pi.uid)
            return True
        start = time.perf_counter()
        state = CycleState()
        state.record_plugin_metrics = self.rng.randrange(100) < PLUGIN_METRICS_SAMPLE_PERCENT
        placed = self._scheduling_cycle(fwk, state, qpi, start)
        if placed is None:
            return True
        assumed, host = placed
        # The queue keeps tracking the pod until it passed Permit (see _binding_cycle).
        with self.inflight_cond:
            self.inflight += 1
        waiting = fwk.get_waiting_pod(assumed.uid)
        if waiting is None:
            self.binder_pool.submit(self._binding_cycle, fwk, state, qpi, assumed, host, start)
            return True
        # A pod parked at Permit (a gang member) may wait until its whole gang is assumed: its
        # binding cycle starts once it is allowed or rejected (or timed out by the
        # permit timer), so that it never holds a binding worker meanwhile.
        cycle = (fwk, state, qpi, assumed, host, start)
        waiting.when_decided(lambda: self._submit_binding_cycle(cycle))
        self.permit_timer.add(waiting)
        return True

    def _submit_binding_cycle(
            self, cycle: tuple[Framework, CycleState, QueuedPodInfo, PodInfo, str, float]
    ) -> None:
        try:
            self.binder_pool.submit(self._binding_cycle, *cycle)
        except RuntimeError:  # the pool shut down: the scheduler stops; bind here
            self._binding_cycle(*cycle)

    # Scheduling cycle --------------------------------------------------------------------

    def _scheduling_cycle(self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo,
                          start: float) -> tuple[PodInfo, str] | None:
        """The assumed pod and its host; None when the attempt failed (and was handled)."""
        pi = qpi.pod_info
        cycle = self.queue.scheduling_cycle()
        self.cache.update_snapshot(self.snapshot)
        pct = fwk.percentage_of_nodes_to_score
        self.algorithm.percentage_of_nodes_to_score = (
            self.default_percentage_of_nodes_to_score if pct is None else pct)
        try:
            result = self.algorithm.schedule(fwk, state, pi)
        except FitError as err:
            nominated = self._post_filter(fwk, state, pi, err.diagnosis)
            self._handle_scheduling_failure(fwk, qpi, pi, Status(Code.UNSCHEDULABLE,
                                                                 err.message()),
                                            err.diagnosis, nominated, cycle, start)
            return None
        except SchedulingError as err:
            self._handle_scheduling_failure(fwk, qpi, pi, err.status, None, None, cycle, start)
            return None

        host = result.suggested_host
        assumed = pi.with_node(host)
        try:
            self.cache.assume_pod(assumed)
        except CacheError as err:
            # The pod was bound meanwhile (by another scheduler): an error, as upstream; the
            # queue drops it if the informer reported it gone from the pending pods.
            self._handle_scheduling_failure(fwk, qpi, pi, Status.as_error(err), None, "",
                                            cycle, start)
            return None
        status = fwk.run_reserve(state, assumed, host)
        if is_success(status):
            status = fwk.run_permit(state, assumed, host)
            if status is not None and status.code == Code.WAIT:
                status = None
        if status is not None and not status.is_success():
            fwk.run_unreserve(state, assumed, host)
            self._forget(fwk, assumed)
            diagnosis = None
            if status.is_rejected():
                # Upstream reports a rejection after host selection as a FitError on that host.
                diagnosis = Diagnosis(node_to_status=NodeToStatus({host: status}))
                if status.plugin:
                    diagnosis.unschedulable_plugins.add(status.plugin)
                status = Status(status.code, FitError(pi.key, 1, diagnosis).message(),
                                plugin=status.plugin)
            self._handle_scheduling_failure(fwk, qpi, pi, status, diagnosis, "", cycle, start)
            return None
        return assumed, host

    def _post_filter(self, fwk: Framework, state: CycleState, pi: PodInfo,
                     diagnosis: Diagnosis) -> str | None:
        """The node to nominate; "" to clear the nomination; None to leave it."""
        if not fwk.post_filter:
            return None
        result, status = fwk.run_post_filter(state, pi, diagnosis.node_to_status)
        # Upstream appends the message of any outcome, an error's included.
        diagnosis.post_filter_msg = status.message()
        if status.code == Code.ERROR:
            log.error("Status after running PostFilter plugins for pod %s: %s", pi.key,
                      status.message())
        return result.nominated_node_name if result is not None else None

    # Binding cycle -----------------------------------------------------------------------

    def _binding_cycle(self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo,
                       assumed: PodInfo, host: str, start: float) -> None:
        try:
            status = fwk.wait_on_permit(assumed)
            if is_success(status):
                # Past Permit the pod counts as scheduled (upstream bindingCycle); until then a
                # deletion or update is recorded, so a pod deleted while waiting is not
                # requeued when its rejection comes back here.
                self.queue.done(qpi.uid)
                status = fwk.run_pre_bind(state, assumed, host)
            if is_success(status):
                status = fwk.run_bind(state, assumed, host)
            if status is not None and not status.is_success():
                fwk.run_unreserve(state, assumed, host)
                self._forget(fwk, assumed)
                self._handle_scheduling_failure(fwk, qpi, assumed.with_node(""), status, None,
                                                nomination_after_rejection(status, host),
                                                self.queue.scheduling_cycle(), start)
                self._handle_binding_cycle_error(assumed)
                return
            self.cache.finish_binding(assumed)
            if self.metrics is not None:
                self.metrics.observe_attempt("scheduled", fwk.profile_name,
                                             time.perf_counter() - start, qpi)
            self.diagnoses.forget(assumed.key)
            # A fake pod's owner reported the binding on its own object (the Reservation).
            if fwk.recorder is not None and fwk.fake_pod_owner(assumed) is None:
                fwk.recorder.eventf(assumed.pod, None, NORMAL, "Scheduled", "Binding",
                                    "Successfully assigned %s to %s", assumed.key, host)
            fwk.run_post_bind(state, assumed, host)
        except Exception:  # noqa: BLE001 - a crashed binding must not lose the pod
            log.exception("binding cycle of pod %s failed", assumed.key)
            self._forget(fwk, assumed)
            self.queue.add_unschedulable_if_not_present(qpi, self.queue.scheduling_cycle())
            self._handle_binding_cycle_error(assumed)
        finally:
            with self.inflight_cond:
                self.inflight -= 1
                self.inflight_cond.notify_all()

    def _forget(self, fwk: Framework, assumed: PodInfo) -> None:
        self.cache.forget_pod(assumed)
        fwk.forget_pod(assumed)

    def _handle_binding_cycle_error(self, assumed: PodInfo) -> None:
        """A pod forgotten in its binding cycle had held room on its node: to the others it is
        an assigned pod deleted."""
        uid = assumed.uid
        self.queue.move_all_to_active_or_backoff(
            ev.ASSIGNED_POD_DELETE, assumed.pod, None,
            precheck=lambda pod: (pod.get("metadata") or {}).get("uid") != uid)

    # Failures ----------------------------------------------------------------------------

    def _handle_scheduling_failure(self, fwk: Framework, qpi: QueuedPodInfo, pi: PodInfo,
                                   status: Status, diagnosis: Diagnosis | None,
                                   nominated: str | None, cycle: int, start: float) -> None:
        """Requeue the pod and say why it failed. ``nominated``: the node to nominate, "" to
        clear the nomination, None to leave it."""
        rejected = status.is_rejected()
        reason = "Unschedulable" if rejected else "SchedulerError"
        message = status.message()
        if diagnosis is not None:
            qpi.unschedulable_plugins = set(diagnosis.unschedulable_plugins)
            qpi.pending_plugins = set(diagnosis.pending_plugins)
        elif rejected and status.plugin:
            qpi.unschedulable_plugins = {status.plugin}
        else:
            qpi.unschedulable_plugins = set()
        if not rejected:
            log.error("Error scheduling pod %s: %s", pi.key, message)
        else:
            log.info("Unable to schedule pod %s: %s", pi.key, message)
        if self.metrics is not None:
            self.metrics.observe_attempt("unschedulable" if rejected else "error",
                                         fwk.profile_name, time.perf_counter() - start, qpi)
        owner = fwk.fake_pod_owner(pi)
        if owner is not None:
            if not owner.still_pending(pi):
                log.info("Reserve pod %s is no longer pending; not requeued", pi.key)
                self.queue.done(pi.uid)
                return
        elif self.pod_getter is not None:
            current = self.pod_getter(pi.key)
            if current is None or (current.get("spec") or {}).get("nodeName"):
                # Deleted or bound while we tried (e.g. during a failed bind): not requeued.
                log.info("Pod %s was deleted or bound meanwhile; not requeued", pi.key)
                self.queue.done(pi.uid)
                return
        # Also ends the pod's in-flight state in the queue (as done()).
        self.queue.add_unschedulable_if_not_present(qpi, cycle)
        if nominated:
            self.queue.nominator.add_nominated_pod(pi, nominated)
        elif nominated == "":
            self.queue.nominator.delete_nominated_pod_if_exists(pi.pod)
        self.diagnoses.keep(pi.key, {
            "pod": pi.key, "reason": reason, "message": message,
            "nominatedNodeName": nominated or None, "time": self._timestamp(),
            "diagnosis": diagnosis.to_dict() if diagnosis is not None else None})
        if owner is not None:
            try:
                self.binder_pool.submit(owner.report_failure, pi, reason, message)
            except RuntimeError:
                log.info("scheduler stopping: the failure of %s not reported", pi.key)
            return
        if fwk.recorder is not None:
            fwk.recorder.eventf(pi.pod, None, WARNING, "FailedScheduling", "Scheduling",
                                truncate_note(message))
        if self.client is not None:
            try:
                self.binder_pool.submit(self._update_pod, pi, reason, message, nominated)
            except RuntimeError:
                # Stopping: the pool is shut down once the waiting pods are rejected; the pod
                # stays in the API as it was, for the next scheduler to try.
                log.info("scheduler stopping: PodScheduled condition of %s not written", pi.key)

    def _update_pod(self, pi: PodInfo, reason: str, message: str,
                    nominated: str | None) -> None:
        """Patch ``PodScheduled=False`` and the nomination, unless nothing changed."""
        current = next((c for c in (pi.pod.get("status") or {}).get("conditions") or ()
                        if c.get("type") == "PodScheduled"), None)
        old_nominated = (pi.pod.get("status") or {}).get("nominatedNodeName") or ""
        if (current is not None and current.get("status") == "False"
                and current.get("reason") == reason and current.get("message") == message
                and (nominated is None or nominated == old_nominated)):
            return
        condition = {"type": "PodScheduled", "status": "False", "reason": reason,
                     "message": message, "lastProbeTime": None,
                     "lastTransitionTime": self._timestamp()}
        status: dict[str, Any] = {"conditions": [condition]}
        if nominated:
            status["nominatedNodeName"] = nominated
        elif nominated == "" and old_nominated:
            status["nominatedNodeName"] = None
        assert self.client is not None  # only submitted with a client
        try:
            self.client.patch(PODS, pi.name, {"status": status}, pi.namespace,
                              patch_type="strategic", subresource="status")
        except Exception as err:  # noqa: BLE001 - the pod may be gone; the next try retries
            log.warning("Updating the PodScheduled condition of %s failed: %s", pi.key, err)

    def _timestamp(self) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.clock.now()))
