"""Garbage collection of finished Reservations.

Corresponds to upstream ``pkg/scheduler/plugins/reservation/controller/garbage_collection.go``:
every ``gcIntervalSeconds`` (default 60) each expired or succeeded Reservation is deleted when
it finished more than ``gcDurationSeconds`` (default 24h) ago, or when its node is gone.
"Finished" is the Ready condition's transition time for an expired Reservation and its probe
time for a succeeded one, as upstream reads them. Upstream compares against its 24h constant
whatever ``gcDurationSeconds`` says; here the argument is honoured (its default is the same).
"""

from __future__ import annotations

from collections.abc import Callable

from api.meta import parse_time
from api.scheduling.v1alpha1.reservation import (
    REASON_RESERVATION_EXPIRED,
    REASON_RESERVATION_SUCCEEDED,
    Reservation,
    ReservationPhase,
)
from pkg.util.reservation import is_reservation_expired

DEFAULT_GC_CHECK_INTERVAL_SECONDS = 60.0
DEFAULT_GC_DURATION_SECONDS = 24 * 3600.0


def missing_node(r: Reservation, node_exists: Callable[[str], bool]) -> bool:
    """Scheduled to a node the node informer no longer holds."""
    node = (r.status.node_name if r.status else None) or ""
    return bool(node) and not node_exists(node)


def is_reservation_need_cleanup(r: Reservation, now: float, gc_duration: float) -> bool:
    """Expired or succeeded longer than ``gc_duration`` seconds before ``now``."""
    conditions = (r.status.conditions if r.status else None) or ()
    if is_reservation_expired(r):
        for c in conditions:
            if c.reason == REASON_RESERVATION_EXPIRED:
                return _older(c.last_transition_time, now, gc_duration)
    elif r.phase == ReservationPhase.SUCCEEDED:
        for c in conditions:
            if c.reason == REASON_RESERVATION_SUCCEEDED:
                return _older(c.last_probe_time, now, gc_duration)
    return False


def _older(ts: str | None, now: float, duration: float) -> bool:
    # An unset time is Go's zero time: long ago.
    return ts is None or now - parse_time(ts).timestamp() > duration


__all__ = ["DEFAULT_GC_CHECK_INTERVAL_SECONDS", "DEFAULT_GC_DURATION_SECONDS",
           "is_reservation_need_cleanup", "missing_node"]
