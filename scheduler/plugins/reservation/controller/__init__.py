"""The Reservation controller (upstream ``pkg/scheduler/plugins/reservation/controller``)."""

from scheduler.plugins.reservation.controller.controller import NAME, ReservationController

__all__ = ["NAME", "ReservationController"]
