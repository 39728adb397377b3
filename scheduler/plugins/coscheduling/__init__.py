"""Koordinator's Coscheduling plugin (koordinator ``pkg/scheduler/plugins/coscheduling``)."""

from scheduler.plugins.coscheduling.coscheduling import NAME, Coscheduling

__all__ = ["NAME", "Coscheduling"]
