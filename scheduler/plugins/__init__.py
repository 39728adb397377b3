"""Koordinator's scheduler plugins (koordinator ``pkg/scheduler/plugins``)."""
