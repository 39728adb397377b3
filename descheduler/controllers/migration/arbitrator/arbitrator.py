"""The arbitrator: which waiting PodMigrationJobs may start, in which order.

Corresponds to koordinator ``pkg/descheduler/controllers/migration/arbitrator/arbitrator.go``.
A created job waits here (creating it does not start it). Every ``interval`` a round sorts the
waiting jobs (``sort.py``) and filters each job's pod: one failing a non-retryable check is
Failed (``ForbiddenMigratePod``), one failing a retryable limit waits for the next round, and
one passing (or whose pod is gone) gets ``descheduler.koordinator.sh/passed-arbitration: "true"``
with an Update, which the controller's first reconcile follows. A job passed earlier in a round
counts in the limits of the later ones, and in later rounds until the informer shows it
annotated (``delete`` forgets it when it ends).

A round costs one pass over the jobs for the limits snapshot plus a sort and a few index lookups
per waiting job; nothing lists all jobs per job.
"""

from __future__ import annotations

import copy
import logging
import threading
from typing import Any, Protocol

from api.extension.objects import metadata_of, name_of, spec_of
from api.scheduling.v1alpha1.pod_migration_job import PodMigrationJobPhase, PodMigrationJobReason
from descheduler.controllers.migration.arbitrator.filter import MigrationFilter
from descheduler.controllers.migration.arbitrator.sort import sort_jobs
from descheduler.controllers.migration.controllerfinder import POD_BY_OWNER_UID
from descheduler.controllers.migration.util import (
    ANNOTATION_PASSED_ARBITRATION,
    JOB_BY_POD_UID,
    is_job_active,
    job_phase,
    passed_arbitration,
)
from descheduler.framework.types import Obj, ObjectLister
from pkg.client.errors import ApiError, is_not_found
from pkg.client.resources import POD_MIGRATION_JOBS, Resource
from pkg.events.recorder import WARNING, EventRecorder
from pkg.util.clock import Clock

log = logging.getLogger(__name__)


def _uid(obj: Obj) -> str:
    return metadata_of(obj).get("uid") or ""


class JobClient(Protocol):
    """The writes the arbitrator makes (``pkg.client.rest.Client`` has them)."""

    def update(self, resource: Resource, obj: Any, namespace: str | None = None
               ) -> dict[str, Any]: ...

    def update_status(self, resource: Resource, obj: Any, namespace: str | None = None
                      ) -> dict[str, Any]: ...


def forbidden_message(job: Obj) -> str:
    ref = spec_of(job).get("podRef") or {}
    return (f'Pod "{ref.get("namespace") or ""}/{ref.get("name") or ""}" is forbidden to '
            "migrate because it does not meet the requirements")


class Arbitrator:
    def __init__(self, filter: MigrationFilter, client: JobClient, pods: ObjectLister,
                 jobs: ObjectLister, recorder: EventRecorder | None, clock: Clock,
                 interval: float = 0.5) -> None:
        self.filter = filter
        self.client = client
        self.pods = pods
        self.jobs = jobs
        self.recorder = recorder
        self.clock = clock
        self.interval = interval
        self._lock = threading.Lock()
        self._waiting: dict[str, Obj] = {}
        # Jobs this arbitrator passed, by UID, until they end: they count as passed even
        # before the informer shows their annotation.
        self._passed: dict[str, Obj] = {}

    def add(self, job: Obj) -> None:
        """A created job starts waiting."""
        with self._lock:
            self._waiting[_uid(job)] = job

    def delete(self, job: Obj) -> None:
        """A deleted or finished job leaves the waiting and the passed sets."""
        with self._lock:
            self._waiting.pop(_uid(job), None)
            self._passed.pop(_uid(job), None)

    def waiting(self) -> list[str]:
        with self._lock:
            return sorted(name_of(job) for job in self._waiting.values())

    def run(self, stop: threading.Event) -> None:
        """Arbitrate every ``interval`` until ``stop`` is set."""
        while not stop.is_set():
            try:
                self.run_once()
            except Exception:  # noqa: BLE001 - a bad round must not end the loop
                log.exception("arbitration round failed")
            if self.clock.sleep(self.interval, stop):
                return

    def _current(self, job: Obj) -> Obj | None:
        """The informer's copy of a waiting job (fresher than the create event's), or the
        waiting copy; None when it already ended."""
        current = self.jobs.get(name_of(job)) or job
        if _uid(current) != _uid(job):
            current = job
        return current if is_job_active(current) else None

    def _forget_finished(self) -> None:
        """Passed jobs the informer shows ended or deleted (in case no event told us)."""
        with self._lock:
            passed = list(self._passed.values())
        for job in passed:
            current = self.jobs.get(name_of(job))
            if current is None or _uid(current) != _uid(job) or not is_job_active(current):
                self.delete(job)

    def _pod_of(self, job: Obj) -> Obj | None:
        ref = spec_of(job).get("podRef") or {}
        if not ref.get("name"):
            return None
        return self.pods.get(ref["name"], ref.get("namespace") or "")

    def _migrating_jobs(self, batch_job_uid: str) -> int:
        """Jobs passed or Running for the pods of one batch Job."""
        count = 0
        for pod in self.pods.by_index(POD_BY_OWNER_UID, batch_job_uid):
            for job in self.jobs.by_index(JOB_BY_POD_UID, _uid(pod)):
                if (passed_arbitration(job) or _uid(job) in self._passed
                        or job_phase(job) == PodMigrationJobPhase.RUNNING):
                    count += 1
        return count

    def run_once(self) -> None:
        """One arbitration round over the jobs waiting now."""
        self._forget_finished()
        with self._lock:
            waiting = list(self._waiting.values())
            passed = list(self._passed.values())
        if not waiting:
            return
        jobs: list[Obj] = []
        for job in waiting:
            current = self._current(job)
            if current is None:
                self.delete(job)
            else:
                jobs.append(current)
        pod_of = {_uid(job): self._pod_of(job) for job in jobs}
        migrating = self.filter.migrating(arbitrating=True, passed=passed)
        for job in sort_jobs(jobs, pod_of, self._migrating_jobs):
            pod = pod_of[_uid(job)]
            if pod is not None:
                if not self.filter.non_retryable(pod):
                    self._fail(job)
                    continue
                if not self.filter.retryable_with(pod, migrating):
                    continue
            if self._pass(job):
                migrating.add(job, pod)

    def _pass(self, job: Obj) -> bool:
        updated: dict[str, Any] = copy.deepcopy(dict(job))
        md = updated.setdefault("metadata", {})
        md["annotations"] = {**(md.get("annotations") or {}),
                             ANNOTATION_PASSED_ARBITRATION: "true"}
        try:
            updated = self.client.update(POD_MIGRATION_JOBS, updated)
        except ApiError as err:
            if is_not_found(err):
                self.delete(job)
            else:  # a conflict: the next round reads the fresher copy
                log.error("failed to update job %s: %s", name_of(job), err)
            return False
        with self._lock:
            self._waiting.pop(_uid(job), None)
            self._passed[_uid(job)] = updated
        log.info("PodMigrationJob %s passed arbitration", name_of(job))
        return True

    def _fail(self, job: Obj) -> None:
        failed: dict[str, Any] = copy.deepcopy(dict(job))
        message = forbidden_message(job)
        failed["status"] = {**(failed.get("status") or {}), "phase": PodMigrationJobPhase.FAILED,
                            "reason": PodMigrationJobReason.FORBIDDEN_MIGRATE_POD,
                            "message": message}
        try:
            self.client.update_status(POD_MIGRATION_JOBS, failed)
        except ApiError as err:
            log.error("failed to fail job %s: %s", name_of(job), err)
        else:
            if self.recorder is not None:
                self.recorder.event(failed, WARNING,
                                    PodMigrationJobReason.FORBIDDEN_MIGRATE_POD, message)
        # Failed for good either way: a later round would only fail it again.
        with self._lock:
            self._waiting.pop(_uid(job), None)
