"""NodeUnschedulable (kubernetes ``pkg/scheduler/framework/plugins/nodeunschedulable``)."""

from scheduler.framework.plugins.nodeunschedulable.node_unschedulable import NodeUnschedulable

__all__ = ["NodeUnschedulable"]
