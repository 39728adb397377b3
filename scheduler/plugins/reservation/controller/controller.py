"""The Reservation controller: expiry, consumption status and GC of Reservations.

Corresponds to upstream ``pkg/scheduler/plugins/reservation/controller`` (``controller.go``
and its event handlers; GC in ``garbage_collection.py``). Reservations are reconciled by name
from the Reservation, Pod and Node informers (scheduler.md §7.9). For each Reservation that is
neither Failed nor Succeeded:

* it expires (phase Failed, Ready=False reason Expired) when ``spec.expires`` is past, or
  ``spec.ttl`` is set, not 0, and the Reservation is older than it, or it was scheduled to a
  node that no longer exists;
* otherwise, once scheduled, ``status.currentOwners`` (namespace/name/uid of the pods on its
  node whose ``scheduling.koordinator.sh/reservation-allocated`` UID is the Reservation's) and
  ``status.allocated`` (their requests masked to ``status.allocatable``'s names) are brought
  up to date; when they change on an allocate-once Reservation it becomes Succeeded
  (Ready=False reason Succeeded).

A live Reservation with an expiry is looked at again before it is due: in the time left,
clamped to 3..15 s. Status goes through the status subresource; a write that loses a race
(409) is recomputed from the server's copy and retried, other errors requeue the name with
backoff. Upstream's controller records no events and none are recorded here; it keeps
``scheduler_reservation_status_phase`` (1 for the current phase) and
``scheduler_reservation_resource_allocated`` (allocated / allocatable) per Reservation.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any, Protocol

from api.core import ObjectReference, format_quantity, quantity_format
from api.errors import MalformedValueError
from api.extension.objects import annotations_of, metadata_of
from api.extension.reservation import parse_reservation_allocated
from api.meta import parse_duration, parse_time
from api.scheduling.v1alpha1.reservation import Reservation, ReservationPhase, ReservationStatus
from pkg.client.errors import ApiError, is_conflict, is_not_found
from pkg.client.informers.handlers import EventHandlerFuncs, deleted_object
from pkg.client.informers.store import NODE_NAME_INDEX
from pkg.client.resources import NODES, PODS, RESERVATIONS, Resource
from pkg.controller.controller import Controller, Result
from pkg.util.clock import Clock
from pkg.util.periodic import Periodic
from pkg.util.podresources import CPU, pod_requests, resource_list
from pkg.util.reservation import (
    is_finished,
    is_reservation_expired,
    set_reservation_expired,
    set_reservation_succeeded,
)
from scheduler.apis.config.koord_args import ReservationArgs
from scheduler.frameworkext.interface import InformerFactory
from scheduler.metrics.metrics import SchedulerMetrics
from scheduler.plugins.reservation.controller.garbage_collection import (
    DEFAULT_GC_CHECK_INTERVAL_SECONDS,
    DEFAULT_GC_DURATION_SECONDS,
    is_reservation_need_cleanup,
    missing_node,
)

log = logging.getLogger(__name__)

NAME = "reservationController"

MIN_RETRY_AFTER_SECONDS = 3.0
MAX_RETRY_AFTER_SECONDS = 15.0
# client-go retry.DefaultRetry: five tries of a status write that meets a conflict.
CONFLICT_RETRY_STEPS = 5
# The phases scheduler_reservation_status_phase reports (upstream leaves out Waiting).
RECORDED_PHASES = (ReservationPhase.PENDING, ReservationPhase.AVAILABLE,
                   ReservationPhase.SUCCEEDED, ReservationPhase.FAILED)


class ReservationClient(Protocol):
    """What the controller uses of ``pkg.client.rest.Client``."""

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Any: ...

    def update_status(self, resource: Resource, obj: Any, namespace: str | None = None
                      ) -> Any: ...

    def delete(self, resource: Resource, name: str, namespace: str | None = None) -> Any: ...


def is_reservation_need_expiration(r: Reservation, now: float) -> bool:
    """``expires`` past, or a non-zero ``ttl`` elapsed since creation (``ttl: 0`` disables
    expiry, ``expires`` included)."""
    if is_finished(r):
        return False
    ttl = parse_duration(r.spec.ttl) if r.spec.ttl is not None else None
    if ttl == 0:
        return False
    expires = r.spec.expires_at
    if expires is not None and now > expires.timestamp():
        return True
    return ttl is not None and now - _created(r) > ttl


def next_sync_time(r: Reservation, now: float) -> float:
    """Seconds until the Reservation should be looked at again for expiry (0: not needed)."""
    if is_finished(r):
        return 0.0
    expires = r.spec.expires_at
    ttl = parse_duration(r.spec.ttl) if r.spec.ttl is not None else 0.0
    if expires is not None:
        duration = expires.timestamp() - now
    elif ttl > 0:
        duration = _created(r) + ttl - now
    else:
        return 0.0
    if duration == 0:
        return 0.0
    return min(max(duration, MIN_RETRY_AFTER_SECONDS), MAX_RETRY_AFTER_SECONDS)


def _created(r: Reservation) -> float:
    ts = r.metadata.creation_timestamp
    # Unset is Go's zero time, long ago.
    return parse_time(ts).timestamp() if ts else float("-inf")


def _allocated_name(pod: Mapping[str, Any]) -> str | None:
    """The Reservation a bound pod says it consumed (upstream enqueues only those)."""
    if not (pod.get("spec") or {}).get("nodeName"):
        return None
    try:
        allocated = parse_reservation_allocated(annotations_of(pod))
    except MalformedValueError:
        return None
    return allocated.name if allocated is not None and allocated.name else None


def _owner_key(ref: ObjectReference) -> str:
    return ref.uid or ""


def _quantities(ints: Mapping[str, int], like: Mapping[str, Any]) -> dict[str, str]:
    """Integers (milli for cpu) back to quantities, each in the format of the allocatable
    quantity of that name (as Go's quantity arithmetic keeps the format it started from)."""
    out = {}
    for name, value in ints.items():
        amount = Decimal(value) / 1000 if name == CPU else Decimal(value)
        out[name] = format_quantity(amount, quantity_format(str(like[name])))
    return out


class ReservationController:
    """Reconciles Reservations by name; GC runs on its own period.

    The informer factory must be started by the owner (the scheduler); ``start`` waits for
    the three informers to sync.
    """

    def __init__(self, client: ReservationClient, informer_factory: InformerFactory,
                 args: ReservationArgs, clock: Clock,
                 metrics: SchedulerMetrics | None = None) -> None:
        self.client = client
        self.clock = clock
        self.metrics = metrics
        self.reservations = informer_factory.informer_for(RESERVATIONS)
        self.pods = informer_factory.informer_for(PODS, typed=False)
        self.nodes = informer_factory.informer_for(NODES, typed=False)
        self.gc_duration = (float(args.gc_duration_seconds) if args.gc_duration_seconds > 0
                            else DEFAULT_GC_DURATION_SECONDS)
        gc_interval = (float(args.gc_interval_seconds) if args.gc_interval_seconds > 0
                       else DEFAULT_GC_CHECK_INTERVAL_SECONDS)
        self.controller = Controller(NAME, self.sync, workers=max(1, args.controller_workers),
                                     clock=clock)
        self._gc = (None if args.disable_garbage_collection
                    else Periodic(f"{NAME}-gc", self.gc_reservations, gc_interval, clock))
        self.reservations.add_event_handler(EventHandlerFuncs(
            add=self._on_reservation, update=self._on_reservation_update,
            delete=self._on_reservation))
        self.pods.add_event_handler(EventHandlerFuncs(
            add=self._on_pod, update=self._on_pod_update, delete=self._on_pod))
        self.nodes.add_event_handler(EventHandlerFuncs(delete=self._on_node_delete))

    # -- running --------------------------------------------------------------------------

    def start(self, sync_timeout: float | None = None) -> bool:
        """Start the workers and the GC loop once the informers synced (False if they did
        not within ``sync_timeout``)."""
        if not self.controller.start(wait_for=[self.reservations, self.pods, self.nodes],
                                     sync_timeout=sync_timeout):
            return False
        if self._gc is not None:
            self._gc.start()
        return True

    def stop(self) -> None:
        if self._gc is not None:
            self._gc.stop()
        self.controller.stop(timeout=5)

    # -- events ---------------------------------------------------------------------------

    def _on_reservation(self, obj: Any) -> None:
        r = deleted_object(obj)
        if isinstance(r, Reservation) and r.metadata.name:
            self.controller.enqueue(r.metadata.name)

    def _on_reservation_update(self, old: Reservation, new: Reservation) -> None:
        def key(r: Reservation) -> tuple[Any, ...]:
            status = r.status or ReservationStatus()
            return r.metadata.generation, r.phase, status.node_name or ""
        if key(old) != key(new):
            self._on_reservation(new)

    def _on_pod(self, obj: Any) -> None:
        pod = deleted_object(obj)
        name = _allocated_name(pod) if isinstance(pod, Mapping) else None
        if name:
            self.controller.enqueue(name)

    def _on_pod_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        # The old pod too: a pod whose annotation was taken away leaves its Reservation.
        for name in {_allocated_name(old), _allocated_name(new)} - {None}:
            self.controller.enqueue(name)

    def _on_node_delete(self, obj: Any) -> None:
        node = deleted_object(obj)
        name = metadata_of(node).get("name") if isinstance(node, Mapping) else None
        for r in self.reservations.indexer.list():
            if r.status is not None and r.status.node_name == name:
                self.controller.enqueue(r.metadata.name)

    # -- reconcile ------------------------------------------------------------------------

    def sync(self, name: str) -> Result | None:
        """Expire or update one Reservation; how soon to look at it again."""
        r = self.reservations.indexer.get_by_key(name)
        if r is None or is_finished(r):
            return None
        r = r.model_copy(deep=True)
        for step in range(CONFLICT_RETRY_STEPS):
            if not self.sync_status(r):
                break
            self._record_phases(r)
            try:
                self.client.update_status(RESERVATIONS, r)
                log.debug("%s: synced the status of Reservation %s", NAME, name)
                break
            except ApiError as err:
                if not is_conflict(err) or step == CONFLICT_RETRY_STEPS - 1:
                    raise
                try:
                    r = Reservation.model_validate(self.client.get(RESERVATIONS, name))
                except ApiError as get_err:
                    if is_not_found(get_err):
                        return None
                    raise
                if is_finished(r):
                    return None
        after = next_sync_time(r, self.clock.now())
        return Result(requeue_after=after) if after > 0 else None

    def node_exists(self, name: str) -> bool:
        return self.nodes.indexer.get_by_key(name) is not None

    def sync_status(self, r: Reservation) -> bool:
        """Bring ``r``'s status up to date in place; True when it changed (to be written)."""
        now = self.clock.now()
        if is_reservation_need_expiration(r, now) or missing_node(r, self.node_exists):
            set_reservation_expired(r, now)
            return True
        status = r.status or ReservationStatus()
        if not status.node_name:
            self._record_phases(r)
            return False
        owners, requests = self._consumers(status.node_name, r.metadata.uid or "")
        allocatable = status.allocatable or {}
        allocated = {k: v for k, v in requests.items() if k in allocatable}
        current = sorted(status.current_owners or (), key=_owner_key)
        if current == owners and resource_list(status.allocated) == allocated:
            return False
        status.allocated = _quantities(allocated, allocatable) or None
        status.current_owners = owners or None
        r.status = status
        if r.spec.allocate_once_effective:
            set_reservation_succeeded(r, now)
        self._record_utilization(r, allocated)
        return True

    def _record_phases(self, r: Reservation) -> None:
        """Gauge 1 for the current phase (Pending while unset), 0 for the others."""
        if self.metrics is None:
            return
        gauge = self.metrics.reservation_status_phase
        for phase in RECORDED_PHASES:
            gauge.labels(r.metadata.name, phase).set(1.0 if r.phase == phase else 0.0)

    def _record_utilization(self, r: Reservation, allocated: Mapping[str, int]) -> None:
        """allocated / allocatable per resource (cpu in milli, others in units)."""
        if self.metrics is None or r.status is None or r.status.allocatable is None:
            return
        for name, capacity in resource_list(r.status.allocatable).items():
            if capacity:
                self.metrics.reservation_resource_allocated.labels(
                    r.metadata.name, name).set(allocated.get(name, 0) / capacity)

    def _consumers(self, node: str, uid: str) -> tuple[list[ObjectReference], dict[str, int]]:
        """The pods on ``node`` allocated to the Reservation ``uid`` (by UID) and the sum of
        their requests."""
        owners: list[ObjectReference] = []
        total: dict[str, int] = {}
        for pod in self.pods.indexer.by_index(NODE_NAME_INDEX, node):
            try:
                allocated = parse_reservation_allocated(annotations_of(pod))
            except MalformedValueError:
                continue
            if allocated is None or allocated.uid != uid:
                continue
            md = metadata_of(pod)
            owners.append(ObjectReference(namespace=md.get("namespace"), name=md.get("name"),
                                          uid=md.get("uid")))
            for k, v in pod_requests(pod).items():
                total[k] = total.get(k, 0) + v
        owners.sort(key=_owner_key)
        return owners, total

    # -- garbage collection ---------------------------------------------------------------

    def gc_reservations(self) -> Sequence[str]:
        """Delete the finished Reservations due for collection; the names deleted."""
        now = self.clock.now()
        deleted = []
        for r in self.reservations.indexer.list():
            if not (is_reservation_expired(r) or r.phase == ReservationPhase.SUCCEEDED):
                continue
            if not (is_reservation_need_cleanup(r, now, self.gc_duration)
                    or missing_node(r, self.node_exists)):
                continue
            try:
                self.client.delete(RESERVATIONS, r.metadata.name)
            except ApiError as err:
                log.info("%s: failed to delete Reservation %s: %s", NAME, r.metadata.name, err)
                continue
            log.debug("%s: Reservation %s has been garbage collected", NAME, r.metadata.name)
            deleted.append(r.metadata.name)
        return deleted


__all__ = ["CONFLICT_RETRY_STEPS", "MAX_RETRY_AFTER_SECONDS", "MIN_RETRY_AFTER_SECONDS", "NAME",
           "ReservationClient", "ReservationController", "is_reservation_need_expiration",
           "next_sync_time"]
