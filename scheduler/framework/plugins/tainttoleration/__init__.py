"""The TaintToleration plugin (kubernetes ``pkg/scheduler/framework/plugins/tainttoleration``)."""

from scheduler.framework.plugins.tainttoleration.taint_toleration import TaintToleration

__all__ = ["TaintToleration"]
