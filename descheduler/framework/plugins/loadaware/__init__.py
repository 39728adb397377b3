"""LowNodeLoad: the balance plugin moving pods off nodes whose measured usage is high."""

from descheduler.framework.plugins.loadaware.low_node_load import LowNodeLoad

__all__ = ["LowNodeLoad"]
