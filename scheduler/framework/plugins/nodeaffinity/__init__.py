"""The NodeAffinity plugin (kubernetes ``pkg/scheduler/framework/plugins/nodeaffinity``)."""

from scheduler.framework.plugins.nodeaffinity.node_affinity import NodeAffinity

__all__ = ["NodeAffinity"]
