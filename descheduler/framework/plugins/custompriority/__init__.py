"""CustomPriority: moves pods from expensive node levels to cheaper ones."""

from descheduler.framework.plugins.custompriority.custom_priority import CustomPriority

__all__ = ["CustomPriority"]
