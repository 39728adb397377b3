"""SchedulingGates (kubernetes ``pkg/scheduler/framework/plugins/schedulinggates``)."""

from scheduler.framework.plugins.schedulinggates.scheduling_gates import SchedulingGates

__all__ = ["SchedulingGates"]
