"""The ResourceAmplification plugin (upstream
`pkg/slo-controller/noderesource/plugins/resourceamplification`): the node annotation
``node.koordinator.sh/resource-amplification-ratio``.

The ratios are ``resource-amplification-config``'s (when enabled for the node), with ``cpu``
multiplied by the CPU normalization ratio already on the node (when > 0), so a node with
faster cores advertises more cpu to the scheduler even when amplification itself is off.
Every ratio must be at least 1 (amplification never shrinks a node); no ratio at all removes
the annotation, as does a node leaving colocation (upstream's empty Reset) or a calculation
error (the prepare stage finds no value to write).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from api.configuration import ColocationStrategy
from api.errors import MalformedValueError
from api.extension.amplification import (
    ANNOTATION_NODE_RESOURCE_AMPLIFICATION_RATIO,
    format_resource_amplification_ratios,
)
from api.extension.cpu_normalization import parse_cpu_normalization_ratio
from api.extension.resource import RESOURCE_CPU
from manager.slo_controller.noderesource.framework import (
    CalculateError,
    CalculatePlugin,
    MetaCheckPlugin,
    NodeResource,
    PluginInputs,
    PodInfo,
    PreparePlugin,
    ResourceItem,
    ResourceMetrics,
)

PLUGIN_NAME = "ResourceAmplification"


def calculate_ratios(node: Mapping[str, Any], extra: PluginInputs) -> dict[str, float]:
    """Resource → ratio for the node; CalculateError on a missing config or a bad ratio."""
    if extra.config is None:
        raise CalculateError("resource-amplification-config is not available")
    strategy = extra.config.resource_amplification.for_node(node)
    ratios = dict(strategy.resource_amplification_ratio or {}) if strategy.enable else {}
    cpu = ratios.get(RESOURCE_CPU, 0.0)
    cpu = cpu if cpu > 0 else 1.0
    try:
        normalization = parse_cpu_normalization_ratio(
            (node.get("metadata") or {}).get("annotations"))
    except MalformedValueError as err:
        raise CalculateError(f"failed to get cpu normalization ratio: {err}") from None
    if normalization > 0:
        cpu *= normalization
    if cpu > 1:
        ratios[RESOURCE_CPU] = cpu
    for name, ratio in sorted(ratios.items()):
        if ratio < 1:
            raise CalculateError(
                f"ratio with resource type {name} and value {ratio} is invalid")
    return ratios


class ResourceAmplificationPlugin(CalculatePlugin, PreparePlugin, MetaCheckPlugin):
    """Calculate, NodePrepare and NodeMetaCheck for the amplification ratio annotation."""

    name = PLUGIN_NAME

    def calculate(self, strategy: ColocationStrategy, node: Mapping[str, Any],
                  pods: list[PodInfo], metrics: ResourceMetrics, now: float,
                  extra: PluginInputs) -> list[ResourceItem]:
        ratios = calculate_ratios(node, extra)
        if not ratios:
            return []
        return [ResourceItem(PLUGIN_NAME, annotations={
            ANNOTATION_NODE_RESOURCE_AMPLIFICATION_RATIO:
                format_resource_amplification_ratios(ratios)})]

    def reset(self, node: Mapping[str, Any], message: str) -> list[ResourceItem]:
        return []

    def prepare(self, node: dict[str, Any], nr: NodeResource) -> None:
        meta = node.setdefault("metadata", {})
        value = nr.annotations.get(ANNOTATION_NODE_RESOURCE_AMPLIFICATION_RATIO)
        if value is None:
            if meta.get("annotations"):
                meta["annotations"].pop(ANNOTATION_NODE_RESOURCE_AMPLIFICATION_RATIO, None)
            return
        if meta.get("annotations") is None:
            meta["annotations"] = {}
        meta["annotations"][ANNOTATION_NODE_RESOURCE_AMPLIFICATION_RATIO] = value

    def need_sync_meta(self, old: Mapping[str, Any], new: Mapping[str, Any]
                       ) -> tuple[bool, str]:
        old_value = _ratio_annotation(old)
        new_value = _ratio_annotation(new)
        if not old_value and not new_value:
            return False, "ratio remains empty"
        if not old_value:
            return True, "old ratio is empty"
        if not new_value:
            return True, "new ratio is empty"
        if old_value == new_value:
            return False, "ratio remains unchanged"
        return True, "ratio changed"


def _ratio_annotation(node: Mapping[str, Any]) -> str:
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    return annotations.get(ANNOTATION_NODE_RESOURCE_AMPLIFICATION_RATIO, "")


__all__ = ["PLUGIN_NAME", "ResourceAmplificationPlugin", "calculate_ratios"]
