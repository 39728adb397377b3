"""The PodTopologySpread plugin
(kubernetes ``pkg/scheduler/framework/plugins/podtopologyspread``)."""

from scheduler.framework.plugins.podtopologyspread.plugin import PodTopologySpread

__all__ = ["PodTopologySpread"]
