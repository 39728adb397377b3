"""FragmentationAware: evens out how much of each resource a node's pods request."""

from descheduler.framework.plugins.fragmentationaware.fragmentation_aware import (
    FragmentationAware,
)

__all__ = ["FragmentationAware"]
