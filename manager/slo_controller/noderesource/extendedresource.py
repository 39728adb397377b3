"""What the BatchResource and MidResource plugins share.

Corresponds to the common part of upstream's ``pkg/slo-controller/noderesource/plugins/
batchresource`` and ``midresource``: a pair of extended resources that are reset (removed)
when the NodeMetric is stale, written to the node's capacity and allocatable at NodePrepare,
and compared with ``resourceDiffThreshold`` at NodeStatusCheck. Subclasses compute the values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from api.configuration import ColocationStrategy
from manager.slo_controller.noderesource import inputs
from manager.slo_controller.noderesource.framework import (
    CalculatePlugin,
    NodeResource,
    PluginInputs,
    PodInfo,
    PreparePlugin,
    ResourceItem,
    ResourceMetrics,
    StatusCheckPlugin,
)
from manager.slo_controller.noderesource.resourcesync import is_resource_diff, write_resource


class ExtendedResourcePlugin(CalculatePlugin, PreparePlugin, StatusCheckPlugin):
    resource_names: ClassVar[tuple[str, str]]
    degrade_message: ClassVar[str]

    def calculate(self, strategy: ColocationStrategy, node: Mapping[str, Any],
                  pods: list[PodInfo], metrics: ResourceMetrics, now: float,
                  extra: PluginInputs) -> list[ResourceItem]:
        if inputs.is_degraded(metrics.status, strategy.degrade_time_minutes or 0, now):
            return self.reset(node, self.degrade_message)
        return self.compute(strategy, node, pods, metrics, extra)

    def compute(self, strategy: ColocationStrategy, node: Mapping[str, Any],
                pods: list[PodInfo], metrics: ResourceMetrics,
                extra: PluginInputs) -> list[ResourceItem]:
        """The resources' values from a fresh NodeMetric."""
        raise NotImplementedError

    def reset(self, node: Mapping[str, Any], message: str) -> list[ResourceItem]:
        return [ResourceItem(name, None, message, reset=True) for name in self.resource_names]

    def prepare(self, node: dict[str, Any], nr: NodeResource) -> None:
        for name in self.resource_names:
            write_resource(node, nr, name)

    def need_sync(self, strategy: ColocationStrategy, old: Mapping[str, Any],
                  new: Mapping[str, Any]) -> tuple[bool, str]:
        return is_resource_diff(old, new, self.resource_names,
                                strategy.resource_diff_threshold or 0.0)
