"""Koordinator's LoadAwareScheduling plugin (koordinator ``pkg/scheduler/plugins/loadaware``)."""

from scheduler.plugins.loadaware.load_aware import NAME, LoadAwareScheduling

__all__ = ["NAME", "LoadAwareScheduling"]
