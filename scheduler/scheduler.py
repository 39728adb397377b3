"""The scheduler: the loop that pops pods, runs the scheduling cycle, and binds off-thread.

Corresponds to kube-scheduler ``pkg/scheduler/scheduler.go`` and ``schedule_one.go``
(``ScheduleOne``, ``schedulingCycle``, ``bindingCycle``, ``handleSchedulingFailure``). One
scheduling thread takes pods one at a time; after Reserve and Permit the pod is *assumed* in
the cache and its binding cycle (WaitOnPermit, PreBind, Bind, PostBind) runs on a worker pool,
so the next pod is scheduled while the API call is in flight. A pod that fits nowhere gets
PostFilter (preemption), a ``PodScheduled=False`` condition and a ``FailedScheduling`` event
with kube-scheduler's message, and its diagnosis is kept for ``/debug/pods/<ns>/<name>``.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pkg.client.resources import PODS
from pkg.util.clock import REAL_CLOCK, Clock
from scheduler.diagnosis import Diagnosis, FitError
from scheduler.framework import events as ev
from scheduler.framework.cache import Cache, CacheError
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import NodeToStatus
from scheduler.framework.runtime import Framework
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status, is_success
from scheduler.framework.types import PodInfo
from scheduler.schedule_one import GenericScheduler, SchedulingError

log = logging.getLogger(__name__)

# Upstream samples plugin durations in 10% of cycles (pluginMetricsSamplePercent).
PLUGIN_METRICS_SAMPLE_PERCENT = 10
# Diagnoses kept for pending pods (oldest dropped first).
MAX_DIAGNOSES = 10_000


class Scheduler:
    def __init__(self, profiles: dict[str, Framework], queue: Any, cache: Cache,
                 snapshot: Snapshot, *, percentage_of_nodes_to_score: int = 0,
                 client: Any = None, recorder: Any = None, metrics: Any = None,
                 clock: Clock = REAL_CLOCK, bind_workers: int = 16,
                 rng: random.Random | None = None,
                 pod_getter: Callable[[str], dict[str, Any] | None] | None = None) -> None:
        self.profiles = profiles
        self.queue = queue
        self.cache = cache
        self.snapshot = snapshot
        self.client = client
        self.recorder = recorder
        self.metrics = metrics
        self.clock = clock
        # The informer's view of a pod by key; failures consult it before requeueing.
        self.pod_getter = pod_getter
        self._rng = rng or random.Random()
        self.algorithm = GenericScheduler(percentage_of_nodes_to_score, self._rng)
        self._default_percentage = percentage_of_nodes_to_score
        self._binder_pool = ThreadPoolExecutor(bind_workers, thread_name_prefix="binding")
        self._diagnoses: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._diag_lock = threading.Lock()
        self._stop = threading.Event()
        self._inflight = 0
        self._inflight_cond = threading.Condition()

    # Loop --------------------------------------------------------------------------------

    def run(self, stop: threading.Event | None = None) -> None:
        """Schedule until ``stop`` (or ``self.stop()``) is set."""
        stop = stop or self._stop
        while not stop.is_set() and not self._stop.is_set():
            self.schedule_one(timeout=0.5)

    def stop(self) -> None:
        self._stop.set()
        self.queue.close()
        self._binder_pool.shutdown(wait=True)

    def wait_for_bindings(self, timeout: float | None = None) -> bool:
        """Block until no binding cycle is in flight (tests and benchmarks)."""
        with self._inflight_cond:
            return self._inflight_cond.wait_for(lambda: self._inflight == 0, timeout)

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
        state.record_plugin_metrics = self._rng.randrange(100) < PLUGIN_METRICS_SAMPLE_PERCENT
        cycle = self.queue.scheduling_cycle()
        self.cache.update_snapshot(self.snapshot)
        pct = fwk.percentage_of_nodes_to_score
        self.algorithm.percentage_of_nodes_to_score = (
            self._default_percentage if pct is None else pct)
        try:
            result = self.algorithm.schedule(fwk, state, pi)
        except FitError as err:
            nominated = self._post_filter(fwk, state, pi, err.diagnosis)
            self._fail(fwk, qpi, pi, Status(Code.UNSCHEDULABLE, err.message()), err.diagnosis,
                       nominated, cycle, start)
            return True
        except SchedulingError as err:
            self._fail(fwk, qpi, pi, err.status, None, None, cycle, start)
            return True

        host = result.suggested_host
        assumed = pi.with_node(host)
        try:
            self.cache.assume_pod(assumed)
        except CacheError as err:
            # The pod was bound meanwhile (by another scheduler): an error, as upstream; the
            # queue drops it if the informer reported it gone from the pending pods.
            self._fail(fwk, qpi, pi, Status.as_error(err), None, "", cycle, start)
            return True
        status = fwk.run_reserve(state, assumed, host)
        if is_success(status):
            status = fwk.run_permit(state, assumed, host)
            if status is not None and status.code == Code.WAIT:
                status = None
        if not is_success(status):
            assert status is not None
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
            self._fail(fwk, qpi, pi, status, diagnosis, "", cycle, start)
            return True
        # The queue keeps tracking the pod until it passed Permit (see _binding_cycle).
        with self._inflight_cond:
            self._inflight += 1
        self._binder_pool.submit(self._binding_cycle, fwk, state, qpi, assumed, host, start)
        return True

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

    def _binding_cycle(self, fwk: Framework, state: CycleState, qpi: Any, assumed: PodInfo,
                       host: str, start: float) -> None:
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
            if not is_success(status):
                fwk.run_unreserve(state, assumed, host)
                self._forget(fwk, assumed)
                self._fail(fwk, qpi, assumed.with_node(""), status, None, "",  # type: ignore
                           self.queue.scheduling_cycle(), start)
                self._assumed_pod_gone(assumed)
                return
            self.cache.finish_binding(assumed)
            if self.metrics is not None:
                self.metrics.observe_attempt("scheduled", fwk.profile_name,
                                             time.perf_counter() - start, qpi)
            self._forget_diagnosis(assumed.key)
            if self.recorder is not None:
                self.recorder.eventf(assumed.pod, "Normal", "Scheduled",
                                     "Successfully assigned %s to %s", assumed.key, host)
            fwk.run_post_bind(state, assumed, host)
        except Exception:  # noqa: BLE001 - a crashed binding must not lose the pod
            log.exception("binding cycle of pod %s failed", assumed.key)
            self._forget(fwk, assumed)
            self.queue.add_unschedulable_if_not_present(qpi, self.queue.scheduling_cycle())
            self._assumed_pod_gone(assumed)
        finally:
            with self._inflight_cond:
                self._inflight -= 1
                self._inflight_cond.notify_all()

    def _forget(self, fwk: Framework, assumed: PodInfo) -> None:
        self.cache.forget_pod(assumed)
        fwk.forget_pod(assumed)

    def _assumed_pod_gone(self, assumed: PodInfo) -> None:
        """A pod forgotten in its binding cycle had held room on its node: to the others it is
        an assigned pod deleted (upstream handleBindingCycleError)."""
        uid = assumed.uid
        self.queue.move_all_to_active_or_backoff(
            ev.ASSIGNED_POD_DELETE, assumed.pod, None,
            precheck=lambda pod: (pod.get("metadata") or {}).get("uid") != uid)

    # Failures ----------------------------------------------------------------------------

    def _fail(self, fwk: Framework, qpi: Any, pi: PodInfo, status: Status,
              diagnosis: Diagnosis | None, nominated: str | None, cycle: int,
              start: float) -> None:
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
        if self.pod_getter is not None:
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
        self._keep_diagnosis(pi, message, reason, diagnosis, nominated)
        if self.recorder is not None:
            self.recorder.event(pi.pod, "Warning", "FailedScheduling", message)
        if self.client is not None:
            self._binder_pool.submit(self._update_pod_condition, pi, reason, message,
                                     nominated)

    def _update_pod_condition(self, pi: PodInfo, reason: str, message: str,
                              nominated: str | None) -> None:
        """Patch ``PodScheduled=False`` and the nomination, unless nothing changed."""
        current = next((c for c in (pi.pod.get("status") or {}).get("conditions") or ()
                        if c.get("type") == "PodScheduled"), None)
        old_nominated = (pi.pod.get("status") or {}).get("nominatedNodeName") or ""
        if (current is not None and current.get("status") == "False"
                and current.get("reason") == reason and current.get("message") == message
                and (nominated is None or nominated == old_nominated)):
            return
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.clock.now()))
        condition = {"type": "PodScheduled", "status": "False", "reason": reason,
                     "message": message, "lastProbeTime": None, "lastTransitionTime": now}
        status: dict[str, Any] = {"conditions": [condition]}
        if nominated:
            status["nominatedNodeName"] = nominated
        elif nominated == "" and old_nominated:
            status["nominatedNodeName"] = None
        try:
            self.client.patch(PODS, pi.name, {"status": status}, pi.namespace,
                              patch_type="strategic", subresource="status")
        except Exception as err:  # noqa: BLE001 - the pod may be gone; the next try retries
            log.warning("Updating the PodScheduled condition of %s failed: %s", pi.key, err)

    # Why pending -------------------------------------------------------------------------

    def _keep_diagnosis(self, pi: PodInfo, message: str, reason: str,
                        diagnosis: Diagnosis | None, nominated: str | None) -> None:
        entry = {"pod": pi.key, "reason": reason, "message": message,
                 "nominatedNodeName": nominated or None,
                 "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.clock.now())),
                 "diagnosis": diagnosis.to_dict() if diagnosis is not None else None}
        with self._diag_lock:
            self._diagnoses[pi.key] = entry
            self._diagnoses.move_to_end(pi.key)
            while len(self._diagnoses) > MAX_DIAGNOSES:
                self._diagnoses.popitem(last=False)

    def _forget_diagnosis(self, key: str) -> None:
        with self._diag_lock:
            self._diagnoses.pop(key, None)

    def diagnosis_of(self, key: str) -> dict[str, Any] | None:
        with self._diag_lock:
            return self._diagnoses.get(key)

    def pending_diagnoses(self) -> list[str]:
        with self._diag_lock:
            return list(self._diagnoses)

    def forget_pod(self, key: str) -> None:
        """The pod is gone (deleted or bound elsewhere): drop what we kept about it."""
        self._forget_diagnosis(key)
