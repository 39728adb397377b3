"""NodeName (kubernetes ``pkg/scheduler/framework/plugins/nodename``)."""

from scheduler.framework.plugins.nodename.node_name import NodeName

__all__ = ["NodeName"]
