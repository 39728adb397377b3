"""PrioritySort (kubernetes ``pkg/scheduler/framework/plugins/queuesort``)."""

from scheduler.framework.plugins.queuesort.priority_sort import PrioritySort

__all__ = ["PrioritySort"]
