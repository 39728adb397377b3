"""MigrationController: the descheduler's Evict and Filter plugin and the PodMigrationJob
controller that carries each job out.

Corresponds to koordinator ``pkg/descheduler/controllers/migration/controller.go`` and
``evict.go`` (manager-descheduler.md §10.2, §10.6). Evicting a pod creates a PodMigrationJob
(named by a fresh UUID, annotated with the reason, the plugin and this instance's
``koordinator.sh/job-created-by`` UUID); the arbitrator (another part) lets it through, and
each update of the job reconciles it:

* Pending → Running, with ``spec.podRef.uid`` filled in from the pod;
* ``EvictDirectly``: evict the pod, wait until it is gone, Succeeded;
* ``ReservationFirst``: create a Reservation for the pod (``reservation.py``), wait until the
  scheduler places it on another node, evict the pod, wait until a new pod consumed the
  Reservation and is Ready, Succeeded; a pod that was never scheduled is not evicted, the job
  waits for it to be scheduled into the Reservation instead;
* every wait looks again in 3 s; a job older than its ``ttl`` fails (its Reservation deleted),
  as does one whose pod or Reservation disappears, or whose Reservation expires, cannot be
  scheduled, or lands on the pod's own node.

Status is written only when it changed. A job annotated ``job-created-by`` with another
instance's UUID (a previous process) is left alone; jobs without it (made by users) are
handled. The scavenger deletes, every minute, jobs older than ``ttl`` + 5 min (30 min without a
ttl) and their Reservations. Jobs, pods and Reservations are read from the API server (the
job's writes need its latest resourceVersion anyway), so a reconcile never sees a job older
than the one it last wrote: upstream's "assumed cache" guarding its cached reads has nothing
to do here.

The filters, object limiters and arbitrator are the package's other modules; this one names
what it needs of them as Protocols (``MigrationFilter``, ``ObjectLimiter``, ``JobArbitrator``)
so its tests can stand in for them.
"""

from __future__ import annotations

import copy
import logging
import threading
import uuid
from collections.abc import Mapping
from typing import Any, Protocol, cast

from api.extension.objects import annotations_of, metadata_of, spec_of
from api.meta import format_duration, format_timestamp, parse_duration, parse_timestamp
from api.scheduling.v1alpha1.pod_migration_job import (
    PodMigrationJobConditionStatus,
    PodMigrationJobConditionType,
    PodMigrationJobMode,
    PodMigrationJobPhase,
    PodMigrationJobReason,
)
from descheduler.apis.config.args import MigrationControllerArgs
from descheduler.controllers.migration import reservation as rsv
from descheduler.controllers.migration.arbitrator.arbitrator import Arbitrator
from descheduler.controllers.migration.arbitrator.filter import (
    MigrationFilter as ArbitrationFilter,
)
from descheduler.controllers.migration.controllerfinder import (
    POD_BY_OWNER_UID,
    ApiWorkloadGetter,
    ControllerFinder,
    WorkloadListers,
    pod_owner_uid_index,
)
from descheduler.controllers.migration.evictor import (
    EvictorInterpreter,
    Recorder,
    trigger_and_reason,
)
from descheduler.controllers.migration.objectlimiter import ObjectLimiters
from descheduler.controllers.migration.util import (
    ANNOTATION_EVICT,
    ANNOTATION_EVICT_REASON,
    ANNOTATION_EVICT_TRIGGER,
    ANNOTATION_JOB_CREATED_BY,
    job_indexers,
    job_phase,
)
from descheduler.framework.types import EvictOptions, Handle
from pkg.client.errors import ApiError, is_not_found
from pkg.client.informers.handlers import deleted_object
from pkg.client.resources import (
    DEPLOYMENTS,
    POD_MIGRATION_JOBS,
    PODS,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    STATEFUL_SETS,
)
from pkg.client.rest import Client
from pkg.controller.controller import Controller, Result
from pkg.events.recorder import NORMAL, WARNING
from pkg.util.clock import REAL_CLOCK, Clock
from pkg.util.validation import go_quote

log = logging.getLogger(__name__)

Obj = Mapping[str, Any]

NAME = "MigrationController"
REQUEUE_AFTER = 3.0
SCAVENGE_INTERVAL = 60.0
# A job is scavenged this long after its ttl, or after SCAVENGE_WITHOUT_TTL without one.
SCAVENGE_AFTER_TTL = 5 * 60.0
SCAVENGE_WITHOUT_TTL = 30 * 60.0

STATUS_COMPLETE = "Complete"
REASON_INVALID_POD_REF = "InvalidPodRef"

_C = PodMigrationJobConditionType
_TRUE = PodMigrationJobConditionStatus.TRUE
_FALSE = PodMigrationJobConditionStatus.FALSE
_R = PodMigrationJobReason
_TERMINAL = (PodMigrationJobPhase.SUCCEEDED, PodMigrationJobPhase.FAILED,
             PodMigrationJobPhase.ABORTED)


class MigrationFilter(Protocol):
    """Which pods may migrate (``arbitrator.filter.MigrationFilter``, §10.4)."""

    def filter(self, pod: Obj) -> bool: ...

    def pre_eviction_filter(self, pod: Obj) -> bool: ...


class ObjectLimiter(Protocol):
    """How fast one workload or namespace may lose pods (``objectlimiter.ObjectLimiters``,
    §10.5)."""

    def limited(self, pod: Obj) -> bool: ...

    def track(self, pod: Obj) -> None: ...


class JobArbitrator(Protocol):
    """Lets new jobs through in order and within the limits (``arbitrator.Arbitrator``,
    §10.3)."""

    def add(self, job: Obj) -> None: ...

    def delete(self, job: Obj) -> None: ...

    def run(self, stop: threading.Event) -> None: ...


class JobEvictor(Protocol):
    """Evicts a job's pod (``evictor.EvictorInterpreter``); raises when it could not."""

    def evict(self, job: Obj, pod: Obj) -> None: ...


class JobAborted(Exception):
    """A pending job failed while it was being prepared (upstream returns an error, so the
    job is looked at again, and then finds itself Failed)."""


def _pod_name(job: Obj) -> tuple[str, str]:
    ref = spec_of(job).get("podRef") or {}
    return ref.get("namespace") or "", ref.get("name") or ""


def _quoted_pod(job: Obj) -> str:
    namespace, name = _pod_name(job)
    return go_quote(f"{namespace}/{name}")


def _condition(job: Obj, condition_type: str) -> Mapping[str, Any] | None:
    for cond in (job.get("status") or {}).get("conditions") or ():
        if cond.get("type") == condition_type:
            return cond
    return None


def _is_true(cond: Mapping[str, Any] | None) -> bool:
    return cond is not None and cond.get("status") == _TRUE


def _reservation_ref(job: Obj) -> Mapping[str, Any] | None:
    return (spec_of(job).get("reservationOptions") or {}).get("reservationRef")


class MigrationController:
    """The ``MigrationController`` plugin (Filter and Evict) and the PodMigrationJob
    reconciler. Also a Runnable: ``start`` runs the reconcile workers, the arbitrator and the
    scavenger (on the leader only)."""

    def __init__(self, args: MigrationControllerArgs, client: Client, *,
                 migration_filter: MigrationFilter, limiter: ObjectLimiter,
                 arbitrator: JobArbitrator, evictor: JobEvictor,
                 recorder: Recorder | None = None, clock: Clock = REAL_CLOCK,
                 instance_id: str | None = None) -> None:
        self.args = args
        self.client = client
        self.migration_filter = migration_filter
        self.limiter = limiter
        self.arbitrator = arbitrator
        self.evictor = evictor
        self.recorder = recorder
        self.clock = clock
        # Jobs created by an earlier process carry its UUID and are left alone.
        self.instance_id = instance_id or str(uuid.uuid4())
        self.controller = Controller(NAME, self.reconcile,
                                     workers=args.max_concurrent_reconciles, clock=clock)
        self.synced: list[Any] = []
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    @classmethod
    def new(cls, args: Any, handle: Handle) -> MigrationController:
        """Build the plugin and its parts from the running descheduler's services: the job and
        workload informers, the workload finder, object limiters, filter, arbitrator and
        evictors; the job informer's events feed the controller."""
        if not isinstance(args, MigrationControllerArgs):
            args = MigrationControllerArgs()
        services = handle.services
        factory = services.informer_factory
        jobs = factory.informer_for(POD_MIGRATION_JOBS, typed=False, indexers=job_indexers())
        workloads = {r: factory.informer_for(r, typed=False).lister
                     for r in (REPLICA_SETS, DEPLOYMENTS, STATEFUL_SETS)}
        # The workload finder reads a pod's siblings through this index of the shared pod
        # informer (the handle's pod lister).
        factory.informer_for(PODS, typed=False,
                             indexers={POD_BY_OWNER_UID: pod_owner_uid_index})
        finder = ControllerFinder(WorkloadListers(
            handle.pods, workloads[REPLICA_SETS], workloads[DEPLOYMENTS],
            workloads[STATEFUL_SETS],
            ApiWorkloadGetter(services.kube_client, REPLICATION_CONTROLLERS)))
        limiter = ObjectLimiters(args, finder, services.clock)
        migration_filter = ArbitrationFilter(args, jobs.lister, finder, nodes=handle.nodes)
        arbitration = args.arbitration_args
        arbitrator = Arbitrator(
            migration_filter, services.kube_client, handle.pods, jobs.lister,
            services.event_recorder, services.clock,
            interval=arbitration.interval if arbitration and arbitration.interval else 0.5)
        qps = args.evict_qps_value() or 0.0
        evictor = EvictorInterpreter.new(services.kube_client, args.eviction_policy, qps,
                                         args.evict_burst, services.event_recorder,
                                         services.clock)
        plugin = cls(args, services.kube_client, migration_filter=migration_filter,
                     limiter=limiter, arbitrator=arbitrator, evictor=evictor,
                     recorder=services.event_recorder, clock=services.clock)
        plugin.synced = [jobs.add_event_handler(plugin)]
        return plugin

    def name(self) -> str:
        return NAME

    # -- plugin -----------------------------------------------------------------------------

    def filter(self, pod: Obj) -> bool:
        return self.migration_filter.filter(pod)

    def pre_eviction_filter(self, pod: Obj) -> bool:
        return self.migration_filter.pre_eviction_filter(pod)

    def evict(self, pod: Obj, options: EvictOptions) -> bool:
        """Ask for the pod's migration: a PodMigrationJob, when the pod passes the filters and
        its workload's object limiter (dry run: only say yes)."""
        md = metadata_of(pod)
        if self.args.dry_run:
            log.info("%s tries to evict Pod %s/%s via dryRun mode since %s",
                     options.plugin_name, md.get("namespace"), md.get("name"), options.reason)
            return True
        if not self.filter(pod):
            log.error("Pod %s/%s cannot be evicted since failed to filter",
                      md.get("namespace"), md.get("name"))
            return False
        if self.limiter.limited(pod):
            log.error("Pod %s/%s cannot be evicted since it exceeds object limiter",
                      md.get("namespace"), md.get("name"))
            return False
        try:
            self.client.create(POD_MIGRATION_JOBS, self.new_job(pod, options))
        except ApiError as err:
            log.error("Failed to create PodMigrationJob for Pod %s/%s, err: %s",
                      md.get("namespace"), md.get("name"), err)
            return False
        return True

    def new_job(self, pod: Obj, options: EvictOptions) -> dict[str, Any]:
        """The PodMigrationJob migrating ``pod`` (upstream ``CreatePodMigrationJob``)."""
        md = metadata_of(pod)
        delete_options: Mapping[str, Any] | None = options.delete_options
        if delete_options is None and self.args.default_delete_options is not None:
            delete_options = self.args.default_delete_options.to_dict()
        spec: dict[str, Any] = {
            "podRef": {"namespace": md.get("namespace", ""), "name": md.get("name", ""),
                       "uid": md.get("uid", "")},
            "mode": self.args.default_job_mode,
            "ttl": format_duration(self.args.default_job_ttl),
        }
        if delete_options is not None:
            spec["deleteOptions"] = dict(delete_options)
        return {
            "apiVersion": POD_MIGRATION_JOBS.api_version, "kind": POD_MIGRATION_JOBS.kind,
            "metadata": {"name": str(uuid.uuid4()), "annotations": {
                ANNOTATION_EVICT_REASON: options.reason,
                ANNOTATION_EVICT_TRIGGER: options.plugin_name,
                ANNOTATION_JOB_CREATED_BY: self.instance_id,
            }},
            "spec": spec,
            "status": {"phase": PodMigrationJobPhase.PENDING},
        }

    # -- job informer events ----------------------------------------------------------------

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        # A new job waits for arbitration; the arbitrator's annotation starts its reconciles.
        self.arbitrator.add(obj)

    def on_update(self, old: Any, new: Any) -> None:
        self.controller.enqueue_object(new)
        if job_phase(new) in _TERMINAL:
            self.arbitrator.delete(new)

    def on_delete(self, obj: Any) -> None:
        job = deleted_object(obj)
        try:
            self._delete_reservation(job)
        except ApiError as err:
            if not is_not_found(err):
                log.error("Failed to delete reservation, MigrationJob: %s, err: %s",
                          metadata_of(job).get("name"), err)
        self.arbitrator.delete(job)
        self.controller.enqueue_object(job)

    # -- runnable ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start the reconcile workers (once the job informer synced), the arbitrator and
        the scavenger."""
        self._stop.clear()
        self.controller.start(wait_for=self.synced)
        for name, loop in (("arbitrator", self.arbitrator.run),
                           ("scavenger", self._scavenger)):
            thread = threading.Thread(target=loop, args=(self._stop,), daemon=True,
                                      name=f"{NAME}-{name}")
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        self.controller.stop()
        for thread in self._threads:
            thread.join()
        self._threads.clear()

    def _scavenger(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self.scavenge()
            if self.clock.sleep(SCAVENGE_INTERVAL, stop):
                return

    def scavenge(self) -> None:
        """Delete jobs (and their Reservations) past their ttl + 5 min, or 30 min old without
        a ttl, whatever their phase."""
        try:
            jobs = self.client.list_all(POD_MIGRATION_JOBS).get("items") or []
        except ApiError as err:
            log.error("Failed to list PodMigrationJobs: %s", err)
            return
        now = self.clock.now()
        for job in jobs:
            ttl = self._ttl(job)
            limit = ttl + SCAVENGE_AFTER_TTL if ttl > 0 else SCAVENGE_WITHOUT_TTL
            created = parse_timestamp(metadata_of(job).get("creationTimestamp"))
            if created is None or now - created < limit:
                continue
            try:
                self._delete_reservation(job)
            except ApiError as err:
                if not is_not_found(err):
                    break
            name = metadata_of(job).get("name", "")
            try:
                self.client.delete(POD_MIGRATION_JOBS, name)
            except ApiError as err:
                log.error("Failed to scavenge PodMigrationJob %s, err: %s", name, err)

    # -- reconcile --------------------------------------------------------------------------

    def reconcile(self, key: str) -> Result | None:
        try:
            job = self.client.get(POD_MIGRATION_JOBS, key)
        except ApiError as err:
            if is_not_found(err):
                return None
            raise
        created_by = annotations_of(job).get(ANNOTATION_JOB_CREATED_BY)
        if created_by and created_by != self.instance_id:
            log.debug("MigrationJob %s was created by another instance %s", key, created_by)
            return None
        try:
            return self._migrate(job)
        except JobAborted:
            return None

    def _migrate(self, job: dict[str, Any]) -> Result | None:
        spec = spec_of(job)
        if spec.get("paused"):
            return None
        phase = (job.get("status") or {}).get("phase") or ""
        if phase not in ("", PodMigrationJobPhase.PENDING, PodMigrationJobPhase.RUNNING):
            return None
        if self._abort_if_timeout(job):
            return None
        if phase in ("", PodMigrationJobPhase.PENDING):
            self._prepare_pending(job)
        if (_condition(job, _C.EVICTION) is None
                and ANNOTATION_EVICT not in annotations_of(job)):
            pod = self._get_pod(job)
            if pod is not None and self.limiter.limited(pod):
                return Result(requeue_after=REQUEUE_AFTER)
        mode = spec_of(job).get("mode") or self.args.default_job_mode
        if mode == PodMigrationJobMode.EVICTION_DIRECTLY:
            return self._evict_directly(job)
        ref = _reservation_ref(job)
        if ref is None:
            self._create_reservation(job)
            return None
        self._update_condition(job, _C.RESERVATION_CREATED, _TRUE)
        reservation = self._reservation_or_abort(job, ref)
        if reservation is None:
            return None
        rsv.ensure_reservation_order(self.client, reservation, self.clock.now())
        self._sync_schedule_failed(job, reservation)
        if rsv.is_pending(reservation):
            return Result(requeue_after=REQUEUE_AFTER)
        if rsv.is_expired(reservation):
            self._fail(job, _R.RESERVATION_EXPIRED, "Reservation expired", event=False)
            return None
        if not rsv.is_scheduled(reservation):
            cond = rsv.unschedulable_condition(reservation)
            self._fail(job, _R.UNSCHEDULABLE, (cond or {}).get("message") or "", event=False)
            return None
        if not self._reservation_scheduled(job, reservation):
            return None
        if rsv.migrates_pending_pod(reservation):
            return self._wait_pending_pod_scheduled(job)
        done, result = self._evict_pod(job)
        if not done:
            return result
        bound = rsv.bound_pod(reservation)
        if not _is_true(_condition(job, _C.RESERVATION_POD_BOUND_RESERVATION)) and bound is None:
            if self._update_condition(job, _C.RESERVATION_POD_BOUND_RESERVATION, _FALSE,
                                      _R.WAIT_FOR_POD_BIND_RESERVATION):
                self._event(job, NORMAL, _R.WAIT_FOR_POD_BIND_RESERVATION,
                            "Waiting for Pod bind Reservation")
            return Result(requeue_after=REQUEUE_AFTER)
        if bound is None:
            return None
        self._reservation_bound(job, bound)
        bound_name = f"{bound.get('namespace', '')}/{bound.get('name', '')}"
        if not self._bound_pod_ready(job, bound):
            return Result(requeue_after=REQUEUE_AFTER)
        self._event(job, NORMAL, "BoundPodReady", f"Bind pod {go_quote(bound_name)} is ready")
        self._update_condition(job, _C.BOUND_POD_READY, _TRUE)
        message = (f"Bind Pod {go_quote(bound_name)} in Reservation "
                   f"{go_quote(metadata_of(reservation).get('name', ''))}")
        status = self._status(job)
        status["podRef"] = dict(bound)
        self._set_status(job, phase=PodMigrationJobPhase.SUCCEEDED, status=STATUS_COMPLETE,
                         reason="", message=message)
        self._set_condition(job, _C.RESERVATION_POD_BOUND_RESERVATION, _TRUE, message=message)
        self._write_status(job)
        self._event(job, NORMAL, STATUS_COMPLETE, message)
        return None

    # -- steps ------------------------------------------------------------------------------

    @staticmethod
    def _ttl(job: Obj) -> float:
        ttl = spec_of(job).get("ttl")
        return parse_duration(ttl) if ttl else 0.0

    def _abort_if_timeout(self, job: dict[str, Any]) -> bool:
        ttl = self._ttl(job)
        if ttl <= 0:
            return False
        created = parse_timestamp(metadata_of(job).get("creationTimestamp"))
        if created is not None and self.clock.now() - created < ttl:
            return False
        try:
            self._delete_reservation(job)
        except ApiError as err:
            if not is_not_found(err):
                raise
        self._fail(job, _R.TIMEOUT, "Abort job caused by timeout")
        return True

    def _prepare_pending(self, job: dict[str, Any]) -> None:
        """Fill in the pod's UID and mark the job Running; fail it when the pod reference is
        invalid or the pod is missing."""
        namespace, name = _pod_name(job)
        if not namespace or not name:
            self._fail(job, REASON_INVALID_POD_REF, "Abort job caused by invalid PodRef")
            raise JobAborted("invalid podRef")
        pod = self._get_pod(job)
        if pod is None:
            self._abort_missing_pod(job)
            raise JobAborted("missing pod")
        job["spec"]["podRef"]["uid"] = metadata_of(pod).get("uid", "")
        self._write_spec(job)
        self._set_status(job, phase=PodMigrationJobPhase.RUNNING)
        self._write_status(job)

    def _evict_directly(self, job: dict[str, Any]) -> Result | None:
        done, result = self._evict_pod(job)
        if not done:
            return result
        self._set_status(job, phase=PodMigrationJobPhase.SUCCEEDED, status=STATUS_COMPLETE,
                         reason="", message=f"Pod {_quoted_pod(job)} has been evicted")
        self._write_status(job)
        return None

    def _evict_pod(self, job: dict[str, Any]) -> tuple[bool, Result | None]:
        """(evicted, what to return otherwise): evict the pod once, then wait until it is
        gone."""
        cond = _condition(job, _C.EVICTION)
        if _is_true(cond):
            return True, None
        pod = self._get_pod(job)
        uid = (spec_of(job).get("podRef") or {}).get("uid")
        replaced = (pod is not None and cond is not None and bool(uid)
                    and metadata_of(pod).get("uid") != uid)
        if pod is None or replaced:
            if (job.get("status") or {}).get("status") != _C.EVICTION:
                self._abort_missing_pod(job)
                return False, None
            if self._update_condition(job, _C.EVICTION, _TRUE, _R.EVICT_COMPLETE):
                self._event(job, NORMAL, _R.EVICT_COMPLETE,
                            f"Pod {_quoted_pod(job)} has been evicted")
            return True, None
        if cond is not None and cond.get("reason") == _R.EVICTING:
            return False, Result(requeue_after=REQUEUE_AFTER)
        if self._abort_if_reservation_bound_by_another_pod(job, None):
            return False, None
        if not spec_of(job).get("deleteOptions") and self.args.default_delete_options:
            job["spec"]["deleteOptions"] = self.args.default_delete_options.to_dict()
        try:
            self.evictor.evict(job, pod)
        except Exception as err:
            self._event(job, WARNING, _R.EVICTING,
                        f"Failed evict Pod {_quoted_pod(job)} caused by {err}")
            raise
        self.limiter.track(pod)
        _, reason = trigger_and_reason(annotations_of(job))
        message = (f"Pod {_quoted_pod(job)} evicted from node "
                   f"{go_quote(spec_of(pod).get('nodeName') or '')} by the reason "
                   f"{go_quote(reason)}")
        if self._update_condition(job, _C.EVICTION, _FALSE, _R.EVICTING, message):
            self._event(job, NORMAL, _R.EVICTING, message)
        return False, Result(requeue_after=REQUEUE_AFTER)

    def _reservation_or_abort(self, job: dict[str, Any],
                              ref: Mapping[str, Any]) -> dict[str, Any] | None:
        """The job's Reservation; None once the job is Failed because it is gone."""
        try:
            return rsv.get_reservation(self.client, ref)
        except ApiError as err:
            if not is_not_found(err):
                raise
            self._abort_missing_reservation(job)
            return None

    def _abort_if_reservation_bound_by_another_pod(self, job: dict[str, Any],
                                                   pod: Obj | None) -> bool:
        ref = _reservation_ref(job)
        if ref is None:
            return False
        reservation = self._reservation_or_abort(job, ref)
        if reservation is None:
            return True
        if not rsv.is_succeeded(reservation):
            return False
        bound = rsv.bound_pod(reservation)
        if (pod is not None and bound is not None
                and bound.get("uid") == metadata_of(pod).get("uid")):
            return False
        self._fail(job, _R.FORBIDDEN_MIGRATE_POD, "Reservation is already bound by another Pod")
        return True

    def _create_reservation(self, job: dict[str, Any]) -> None:
        pod = self._get_pod(job)
        if pod is None:
            self._abort_missing_pod(job)
            return
        options = rsv.reservation_options(job, pod, self.clock.now())
        try:
            reservation = rsv.create_reservation(self.client, options)
        except ApiError as err:
            message = f"Failed to create Reservation caused by {err}"
            if self._update_condition(job, _C.RESERVATION_CREATED, _FALSE,
                                      _R.FAILED_CREATE_RESERVATION, message):
                self._event(job, WARNING, _R.FAILED_CREATE_RESERVATION, message)
            raise
        options["reservationRef"] = rsv.reservation_ref(reservation)
        job["spec"]["reservationOptions"] = options
        self._write_spec(job)
        self._event(job, NORMAL, _C.RESERVATION_CREATED, "Successfully create Reservation "
                    f"{go_quote(metadata_of(reservation).get('name', ''))}")

    def _sync_schedule_failed(self, job: dict[str, Any], reservation: Obj) -> None:
        """Carry the Reservation's Unschedulable message over while it is not scheduled."""
        cond = _condition(job, _C.RESERVATION_SCHEDULED)
        if cond is not None and cond.get("status") != _FALSE:
            return
        unschedulable = rsv.unschedulable_condition(reservation)
        if unschedulable is None:
            return
        message = unschedulable.get("message") or ""
        if self._update_condition(job, _C.RESERVATION_SCHEDULED, _FALSE, _R.UNSCHEDULABLE,
                                  message):
            self._event(job, WARNING, _R.UNSCHEDULABLE, message)

    def _reservation_scheduled(self, job: dict[str, Any], reservation: Obj) -> bool:
        """Note the Reservation's node the first time it is scheduled; False (the job failed)
        when that is the pod's own node."""
        node = rsv.scheduled_node(reservation)
        if not node or (job.get("status") or {}).get("nodeName"):
            return True
        if _is_true(_condition(job, _C.RESERVATION_SCHEDULED)):
            return True
        pod = self._get_pod(job)
        if pod is not None and spec_of(pod).get("nodeName") == node:
            name = go_quote(metadata_of(reservation).get("name", ""))
            self._fail(job, _R.FORBIDDEN_MIGRATE_POD,
                       f"Scheduler assignes the Reservation {name} on the same node as the Pod")
            return False
        self._status(job)["nodeName"] = node
        if self._update_condition(job, _C.RESERVATION_SCHEDULED, _TRUE):
            self._event(job, NORMAL, _C.RESERVATION_SCHEDULED,
                        f"Assigned Reservation {go_quote(metadata_of(reservation)['name'])} "
                        f"to node {go_quote(node)}")
        return True

    def _wait_pending_pod_scheduled(self, job: dict[str, Any]) -> Result | None:
        pod = self._get_pod(job)
        if pod is None:
            self._abort_missing_pod(job)
            return None
        scheduled = rsv.pod_condition(pod, "PodScheduled")
        if scheduled is None or scheduled.get("status") == "False":
            if self._abort_if_reservation_bound_by_another_pod(job, pod):
                return None
            self._update_condition(job, _C.POD_SCHEDULED, _FALSE, _R.UNSCHEDULABLE,
                                   (scheduled or {}).get("message") or "")
            return Result(requeue_after=REQUEUE_AFTER)
        message = (f"Assign Pod {_quoted_pod(job)} to node "
                   f"{go_quote(spec_of(pod).get('nodeName') or '')}")
        self._set_status(job, phase=PodMigrationJobPhase.SUCCEEDED, status=STATUS_COMPLETE,
                         reason="", message=message)
        if self._set_condition(job, _C.POD_SCHEDULED, _TRUE):
            self._write_status(job)
            self._event(job, NORMAL, STATUS_COMPLETE, message)
        return None

    def _reservation_bound(self, job: dict[str, Any], bound: Obj) -> None:
        changed = self._set_condition(job, _C.RESERVATION_BOUND, _TRUE)
        status = self._status(job)
        if status.get("podRef") is None or changed:
            status["podRef"] = dict(bound)
            self._write_status(job)
            name = f"{bound.get('namespace', '')}/{bound.get('name', '')}"
            self._event(job, NORMAL, "PodBoundReservation",
                        f"Reservation bound by pod {go_quote(name)}")

    def _bound_pod_ready(self, job: dict[str, Any], bound: Obj) -> bool:
        """Whether the pod that took the Reservation is Ready (a missing one counts as
        Ready)."""
        if _is_true(_condition(job, _C.BOUND_POD_READY)):
            return True
        try:
            pod = self.client.get(PODS, bound.get("name", ""), bound.get("namespace", ""))
        except ApiError as err:
            if is_not_found(err):
                return True
            raise
        ready = rsv.pod_condition(pod, "Ready")
        if ready is not None and ready.get("status") == "True":
            return True
        if self._update_condition(job, _C.BOUND_POD_READY, _FALSE, _R.WAIT_FOR_BOUND_POD_READY):
            md = metadata_of(pod)
            self._event(job, NORMAL, _R.WAIT_FOR_BOUND_POD_READY,
                        f"Waiting for Bound Pod {md.get('namespace')}/{md.get('name')} Ready")
        return False

    # -- failing ----------------------------------------------------------------------------

    def _abort_missing_pod(self, job: dict[str, Any]) -> None:
        self._fail(job, _R.MISSING_POD, f"Abort job caused by missing Pod {_quoted_pod(job)}")

    def _abort_missing_reservation(self, job: dict[str, Any]) -> None:
        ref = _reservation_ref(job) or {}
        name = f"{ref.get('namespace') or ''}/{ref.get('name') or ''}"
        self._fail(job, _R.MISSING_RESERVATION,
                   f"Abort job caused by missing Reservation {go_quote(name)}")

    def _fail(self, job: dict[str, Any], reason: str, message: str, *,
              event: bool = True) -> None:
        self._set_status(job, phase=PodMigrationJobPhase.FAILED, reason=reason, message=message)
        self._write_status(job)
        if event:
            self._event(job, WARNING, reason, message)

    # -- status, conditions and writes ------------------------------------------------------

    @staticmethod
    def _status(job: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(job.get("status"), dict):
            job["status"] = {}
        return cast(dict[str, Any], job["status"])

    def _set_status(self, job: dict[str, Any], **fields: str) -> None:
        status = self._status(job)
        for key, value in fields.items():
            # Go leaves empty strings out of the JSON.
            if value:
                status[key] = value
            else:
                status.pop(key, None)

    def _set_condition(self, job: dict[str, Any], condition_type: str, status: str,
                       reason: str = "", message: str = "") -> bool:
        """Set the condition (upstream ``UpdateCondition``); True when anything changed. The
        transition time moves only with the status."""
        conditions = self._status(job).setdefault("conditions", [])
        cond: dict[str, Any] = {"type": condition_type, "status": status,
                                "lastTransitionTime": format_timestamp(self.clock.now())}
        if reason:
            cond["reason"] = reason
        if message:
            cond["message"] = message
        for i, old in enumerate(conditions):
            if old.get("type") != condition_type:
                continue
            if old.get("status") == status:
                cond["lastTransitionTime"] = old.get("lastTransitionTime")
                if old.get("lastProbeTime"):
                    cond["lastProbeTime"] = old["lastProbeTime"]
            conditions[i] = cond
            return cond != old
        conditions.append(cond)
        return True

    def _update_condition(self, job: dict[str, Any], condition_type: str, status: str,
                          reason: str = "", message: str = "") -> bool:
        """Set the condition and mirror it in ``status.status/reason/message``; writes and
        returns True only when the condition changed."""
        if not self._set_condition(job, condition_type, status, reason, message):
            return False
        self._set_status(job, status=condition_type, reason=reason, message=message)
        self._write_status(job)
        return True

    def _write_status(self, job: dict[str, Any]) -> None:
        written = self.client.update_status(POD_MIGRATION_JOBS, job)
        job.clear()
        job.update(copy.deepcopy(dict(written)))

    def _write_spec(self, job: dict[str, Any]) -> None:
        written = self.client.update(POD_MIGRATION_JOBS, job)
        job.clear()
        job.update(copy.deepcopy(dict(written)))

    def _get_pod(self, job: Obj) -> dict[str, Any] | None:
        namespace, name = _pod_name(job)
        try:
            return dict(self.client.get(PODS, name, namespace))
        except ApiError as err:
            if is_not_found(err):
                return None
            raise

    def _delete_reservation(self, job: Obj) -> None:
        ref = _reservation_ref(job)
        if ref is not None:
            rsv.delete_reservation(self.client, ref)

    def _event(self, job: Obj, event_type: str, reason: str, message: str) -> None:
        if self.recorder is not None:
            self.recorder.event(job, event_type, reason, message)


__all__ = ["NAME", "REQUEUE_AFTER", "JobArbitrator", "JobEvictor", "MigrationController",
           "MigrationFilter", "ObjectLimiter"]
