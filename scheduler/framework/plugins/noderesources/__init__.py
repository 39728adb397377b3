"""NodeResourcesFit and NodeResourcesBalancedAllocation (kubernetes
``pkg/scheduler/framework/plugins/noderesources``)."""

from scheduler.framework.plugins.noderesources.balanced_allocation import BalancedAllocation
from scheduler.framework.plugins.noderesources.fit import Fit

__all__ = ["BalancedAllocation", "Fit"]
