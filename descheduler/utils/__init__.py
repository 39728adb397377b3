"""Helpers shared by descheduler plugins and controllers (upstream ``pkg/descheduler/utils``)."""
