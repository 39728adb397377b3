"""Gangs and the gang cache (koordinator ``pkg/scheduler/plugins/coscheduling/core``)."""
