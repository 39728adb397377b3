"""HighNodeUtilization and LowNodeUtilization: balancing nodes by what their pods request."""

from descheduler.framework.plugins.kubernetes.nodeutilization.high_node_utilization import (
    HighNodeUtilization,
)
from descheduler.framework.plugins.kubernetes.nodeutilization.low_node_utilization import (
    LowNodeUtilization,
)

__all__ = ["HighNodeUtilization", "LowNodeUtilization"]
