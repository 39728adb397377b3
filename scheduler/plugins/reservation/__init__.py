"""The Reservation plugin (upstream ``pkg/scheduler/plugins/reservation``)."""

from scheduler.plugins.reservation.plugin import NAME, Reservation

__all__ = ["NAME", "Reservation"]
