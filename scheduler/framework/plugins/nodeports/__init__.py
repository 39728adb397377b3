"""NodePorts (kubernetes ``pkg/scheduler/framework/plugins/nodeports``)."""

from scheduler.framework.plugins.nodeports.node_ports import NodePorts

__all__ = ["NodePorts"]
