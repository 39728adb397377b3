"""The nodemetric controller (upstream `pkg/slo-controller/nodemetric`): one NodeMetric per
node, with koordlet's collect policy from ``colocation-config``."""

from manager.slo_controller.nodemetric.collect_policy import node_metric_spec
from manager.slo_controller.nodemetric.controller import NAME, NodeMetricController

__all__ = ["NAME", "NodeMetricController", "node_metric_spec"]
