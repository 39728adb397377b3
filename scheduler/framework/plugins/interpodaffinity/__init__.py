"""The InterPodAffinity plugin (kubernetes ``pkg/scheduler/framework/plugins/interpodaffinity``)."""

from scheduler.framework.plugins.interpodaffinity.plugin import InterPodAffinity

__all__ = ["InterPodAffinity"]
