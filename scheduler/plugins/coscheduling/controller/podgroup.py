"""The PodGroup status controller: phase and member counts, as koord-scheduler sees them.

Corresponds to koordinator ``pkg/scheduler/plugins/coscheduling/controller/podgroup.go``. One
step of the phase machine per reconcile (each patch brings an update event and the next
step): ``""`` → ``Pending``; ``Pending`` → ``PreScheduling`` once the gang has minMember pods
(``occupiedBy`` from the first pod's owners); after that the counts are refreshed and the
phase is ``Scheduling`` (bound < minMember, stamping ``scheduleStartTime`` once),
``Scheduled``, ``Running`` (running + succeeded ≥ minMember), ``Failed`` (a failed pod and
failed + running + succeeded ≥ minMember) or ``Finished`` (succeeded ≥ minMember); no pods at
all puts it back to ``Pending``. The pods are the gang cache's members, bound ones by the
cache's count. The status is written with a merge patch of the fields that changed (the
PodGroup CRD has no status subresource).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from api.extension.coscheduling import LABEL_POD_GROUP
from api.meta import format_timestamp
from api.thirdparty.schedulerplugins.v1alpha1.pod_group import PodGroupPhase
from pkg.client.resources import POD_GROUPS
from pkg.controller.controller import Controller
from pkg.util.clock import Clock
from scheduler.frameworkext.interface import ClientSet, Informer
from scheduler.plugins.coscheduling.core.gang_cache import GangCache

log = logging.getLogger(__name__)

NAME = "podgroup-controller"


def _occupied_by(pod: Mapping[str, Any]) -> str | None:
    meta = pod.get("metadata") or {}
    refs = sorted(f"{meta.get('namespace') or ''}/{ref.get('name') or ''}"
                  for ref in meta.get("ownerReferences") or ())
    return ",".join(refs) or None


def next_status(pg: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], bound: int,
                now: Callable[[], str]) -> dict[str, Any]:
    """The PodGroup's status after one reconcile (a new dict; ``now`` gives the time)."""
    status = dict(pg.get("status") or {})
    min_member = int((pg.get("spec") or {}).get("minMember") or 0)
    phase = status.get("phase") or ""
    if phase == "":
        status["phase"] = PodGroupPhase.PENDING.value
        return status
    if phase == PodGroupPhase.PENDING:
        if min_member > 0 and len(pods) >= min_member:
            status["phase"] = PodGroupPhase.PRE_SCHEDULING.value
            occupied = _occupied_by(pods[0])
            if occupied:
                status["occupiedBy"] = occupied
        return status
    if not pods:
        status["phase"] = PodGroupPhase.PENDING.value
        return status
    phases = [(p.get("status") or {}).get("phase") for p in pods]
    running, succeeded, failed = (phases.count(x) for x in ("Running", "Succeeded", "Failed"))
    status.update(running=running, succeeded=succeeded, failed=failed, scheduled=bound)
    if bound < min_member:
        status["phase"] = PodGroupPhase.SCHEDULING.value
        if not status.get("scheduleStartTime"):
            status["scheduleStartTime"] = now()
    else:
        status["phase"] = PodGroupPhase.SCHEDULED.value
    if running + succeeded >= min_member and status["phase"] == PodGroupPhase.SCHEDULED:
        status["phase"] = PodGroupPhase.RUNNING.value
    if failed and failed + running + succeeded >= min_member:
        status["phase"] = PodGroupPhase.FAILED.value
    if succeeded >= min_member:
        status["phase"] = PodGroupPhase.FINISHED.value
    return status


class PodGroupController:
    """Reconciles PodGroup keys (``namespace/name``) from the PodGroup and pod informers."""

    def __init__(self, cache: GangCache, client: ClientSet, pod_groups: Informer,
                 pods: Informer, clock: Clock, workers: int) -> None:
        self.cache = cache
        self.client = client
        self.pod_groups = pod_groups
        self.pods = pods
        self.clock = clock
        self.controller = Controller(NAME, self.reconcile, workers=workers, clock=clock)
        pod_groups.add_event_handler(self.controller.event_handler())
        pods.add_event_handler(self.controller.event_handler(_pod_group_key))

    def start(self) -> bool:
        """Start the workers once both informers synced (blocks until then)."""
        return self.controller.start(wait_for=[self.pod_groups, self.pods])

    def stop(self) -> None:
        self.controller.stop(timeout=5)

    def _now(self) -> str:
        return format_timestamp(self.clock.now())

    def reconcile(self, key: str) -> None:
        pg = self.pod_groups.indexer.get_by_key(key)
        if pg is None:
            return
        members, bound = self.cache.members(key)
        # The cache may lag the pod informer: read each member's current state there.
        pods = [p for p in (self.pods.indexer.get_by_key(k) for k in members) if p is not None]
        old = pg.get("status") or {}
        new = next_status(pg, pods, bound, self._now)
        changed = {k: v for k, v in new.items() if old.get(k) != v}
        if not changed:
            return
        meta = pg.get("metadata") or {}
        self.client.patch(POD_GROUPS, meta.get("name") or "", {"status": changed},
                          meta.get("namespace"))


def _pod_group_key(pod: Mapping[str, Any]) -> str | None:
    """The PodGroup a pod's events concern (only PodGroup members, as upstream)."""
    meta = pod.get("metadata") or {}
    name = (meta.get("labels") or {}).get(LABEL_POD_GROUP)
    return f"{meta.get('namespace') or ''}/{name}" if name else None
