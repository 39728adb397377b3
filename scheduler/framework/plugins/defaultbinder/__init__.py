"""DefaultBinder (kubernetes ``pkg/scheduler/framework/plugins/defaultbinder``)."""

from scheduler.framework.plugins.defaultbinder.default_binder import DefaultBinder

__all__ = ["DefaultBinder"]
