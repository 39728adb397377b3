"""The status transitions the Reservation controller writes, and the phase checks it needs.

Corresponds to upstream ``pkg/util/reservation/reservation.go`` (``IsReservationExpired``,
``SetReservationExpired``, ``SetReservationSucceeded``) as the controller in
``pkg/scheduler/plugins/reservation/controller`` uses them. Both setters work on the Ready
condition only: Expired makes it Ready=False (a fresh condition when it was Ready=True or
missing, else only the reason and probe time change, so the transition time stays when the
Reservation was already not ready); Succeeded sets Ready=False, reason Succeeded, keeping the
transition time of an existing Ready condition. Upstream writes no message on either.
"""

from __future__ import annotations

from datetime import UTC, datetime

from api.meta import format_time
from api.scheduling.v1alpha1.reservation import (
    REASON_RESERVATION_EXPIRED,
    REASON_RESERVATION_SUCCEEDED,
    ConditionStatus,
    Reservation,
    ReservationCondition,
    ReservationConditionType,
    ReservationPhase,
    ReservationStatus,
)


def metav1_now(now: float) -> str:
    """``metav1.Now()`` at ``now`` (seconds since the epoch) as it is written."""
    return format_time(datetime.fromtimestamp(now, UTC))


def is_finished(r: Reservation) -> bool:
    """Failed or Succeeded: nothing more happens to it but GC."""
    return r.phase in (ReservationPhase.FAILED, ReservationPhase.SUCCEEDED)


def _ready_condition(r: Reservation) -> ReservationCondition | None:
    # Upstream takes the last Ready condition should there be several.
    found = None
    for c in (r.status.conditions if r.status else None) or ():
        if c.type == ReservationConditionType.READY:
            found = c
    return found


def is_reservation_expired(r: Reservation) -> bool:
    """Failed with the (first) Ready condition False, reason Expired."""
    if r.phase != ReservationPhase.FAILED:
        return False
    for c in (r.status.conditions if r.status else None) or ():
        if c.type == ReservationConditionType.READY:
            return c.status == ConditionStatus.FALSE and c.reason == REASON_RESERVATION_EXPIRED
    return False


def set_reservation_expired(r: Reservation, now: float) -> None:
    status = r.status = r.status or ReservationStatus()
    status.phase = ReservationPhase.FAILED
    ts = metav1_now(now)
    ready = _ready_condition(r)
    fresh = ReservationCondition(type=ReservationConditionType.READY,
                                 status=ConditionStatus.FALSE, reason=REASON_RESERVATION_EXPIRED,
                                 last_probe_time=ts, last_transition_time=ts)
    conditions = status.conditions = list(status.conditions or ())
    if ready is None:
        conditions.append(fresh)
    elif ready.status == ConditionStatus.TRUE:
        conditions[_index(conditions, ready)] = fresh
    else:
        ready.reason = REASON_RESERVATION_EXPIRED
        ready.last_probe_time = ts


def set_reservation_succeeded(r: Reservation, now: float) -> None:
    status = r.status = r.status or ReservationStatus()
    status.phase = ReservationPhase.SUCCEEDED
    ts = metav1_now(now)
    ready = _ready_condition(r)
    conditions = status.conditions = list(status.conditions or ())
    if ready is None:
        conditions.append(ReservationCondition(
            type=ReservationConditionType.READY, status=ConditionStatus.FALSE,
            reason=REASON_RESERVATION_SUCCEEDED, last_probe_time=ts, last_transition_time=ts))
    else:
        ready.status = ConditionStatus.FALSE
        ready.reason = REASON_RESERVATION_SUCCEEDED
        ready.last_probe_time = ts


def _index(conditions: list[ReservationCondition], condition: ReservationCondition) -> int:
    return next(i for i, c in enumerate(conditions) if c is condition)


__all__ = ["is_finished", "is_reservation_expired", "metav1_now", "set_reservation_expired",
           "set_reservation_succeeded"]
