"""The CPUNormalization plugin (upstream
`pkg/slo-controller/noderesource/plugins/cpunormalization`): the node annotation
``node.koordinator.sh/cpu-normalization-ratio``.

Cores differ in speed between CPU models, hyper-threading and turbo states; the ratio (from
``cpu-normalization-config``'s ``ratioModel`` for the model and state that koordlet reports in
the ``node.koordinator.sh/cpu-basic-info`` annotation of the node's NodeResourceTopology)
says how many reference cores one of this node's cores is worth. Disabled → ``"1.00"``. The
node label ``node.koordinator.sh/cpu-normalization-enabled`` beats the config's ``enable``.
A ratio outside [1.0, 5.0] is refused: a typo in the config must not multiply a node's
batch-cpu by 100. Any missing input (config, NRT, basic info, model) leaves the annotation as
it is. ``resourcesync.write_resource`` multiplies batch-cpu by the ratio.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from api.configuration import ColocationStrategy
from api.configuration.cpu_normalization import CPUNormalizationStrategy
from api.errors import MalformedValueError
from api.extension.cpu_normalization import (
    ANNOTATION_CPU_NORMALIZATION_RATIO,
    CPUBasicInfo,
    format_cpu_normalization_ratio,
    is_cpu_normalization_ratio_different,
    parse_cpu_basic_info,
    parse_cpu_normalization_ratio,
)
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

PLUGIN_NAME = "CPUNormalization"
DEFAULT_RATIO = "1.00"
MIN_RATIO, MAX_RATIO = 1.0, 5.0  # ratios below 1 are not supported upstream


def ratio_from_model(info: CPUBasicInfo, strategy: CPUNormalizationStrategy) -> float:
    """The configured ratio of the node's CPU model in its (HT, turbo) state, else
    ``defaultRatio``; CalculateError when neither is configured."""
    model = (strategy.ratio_model or {}).get(info.cpu_model)
    if model is not None:
        if info.hyper_thread_enabled and info.turbo_enabled:
            ratio, field = model.hyper_thread_turbo_enabled_ratio, "hyperThreadTurboEnabledRatio"
        elif info.hyper_thread_enabled:
            ratio, field = model.hyper_thread_enabled_ratio, "hyperThreadEnabledRatio"
        elif info.turbo_enabled:
            ratio, field = model.turbo_enabled_ratio, "turboEnabledRatio"
        else:
            ratio, field = model.base_ratio, "baseRatio"
        if ratio is not None:
            return ratio
        missing = f"missing {field} for CPU {info.cpu_model}"
    else:
        missing = f"no ratio for CPU {info.cpu_model}"
    if strategy.default_ratio is not None:
        return strategy.default_ratio
    raise CalculateError(missing)


def validate_ratio(ratio: float) -> None:
    if ratio < MIN_RATIO:
        raise CalculateError(f"the ratio is too small, cur[{ratio}] < min[{MIN_RATIO}]")
    if ratio > MAX_RATIO:
        raise CalculateError(f"the ratio is too big, cur[{ratio}] > max[{MAX_RATIO}]")


def calculate_ratio(node: Mapping[str, Any], extra: PluginInputs) -> str:
    """The annotation value for the node; CalculateError when an input is missing or bad."""
    if extra.config is None:
        raise CalculateError("cpu-normalization-config is not available")
    try:
        strategy = extra.config.cpu_normalization.for_node(node)
    except MalformedValueError as err:
        raise CalculateError(str(err)) from None
    if not strategy.enable:  # label already applied by for_node
        return DEFAULT_RATIO
    if extra.topology is None:
        raise CalculateError("NodeResourceTopology not found")
    try:
        info = parse_cpu_basic_info((extra.topology.get("metadata") or {}).get("annotations"))
    except MalformedValueError as err:
        raise CalculateError(f"NodeResourceTopology: {err}") from None
    if info is None:
        raise CalculateError("CPUBasicInfo is missing on the NodeResourceTopology")
    ratio = ratio_from_model(info, strategy)
    validate_ratio(ratio)
    return format_cpu_normalization_ratio(ratio)


class CPUNormalizationPlugin(CalculatePlugin, PreparePlugin, MetaCheckPlugin):
    """Calculate, NodePrepare and NodeMetaCheck for the CPU normalization ratio annotation."""

    name = PLUGIN_NAME

    def calculate(self, strategy: ColocationStrategy, node: Mapping[str, Any],
                  pods: list[PodInfo], metrics: ResourceMetrics, now: float,
                  extra: PluginInputs) -> list[ResourceItem]:
        ratio = calculate_ratio(node, extra)
        return [ResourceItem(PLUGIN_NAME, annotations={ANNOTATION_CPU_NORMALIZATION_RATIO: ratio})]

    def reset(self, node: Mapping[str, Any], message: str) -> list[ResourceItem]:
        return []  # as upstream: a node leaving colocation keeps its ratio

    def prepare(self, node: dict[str, Any], nr: NodeResource) -> None:
        ratio = nr.annotations.get(ANNOTATION_CPU_NORMALIZATION_RATIO)
        if ratio is None:
            return
        meta = node.setdefault("metadata", {})
        if meta.get("annotations") is None:
            meta["annotations"] = {}
        meta["annotations"][ANNOTATION_CPU_NORMALIZATION_RATIO] = ratio

    def need_sync_meta(self, old: Mapping[str, Any], new: Mapping[str, Any]
                       ) -> tuple[bool, str]:
        try:
            old_ratio = parse_cpu_normalization_ratio(_annotations(old))
        except MalformedValueError:
            return True, "old ratio parsed error"
        try:
            new_ratio = parse_cpu_normalization_ratio(_annotations(new))
        except MalformedValueError:
            return False, "new ratio parsed error"
        if old_ratio == -1 and new_ratio == -1:
            return False, "ratios are nil"
        if old_ratio == -1:
            return True, "old ratio is nil"
        if new_ratio == -1:
            return True, "new ratio is nil"
        # Upstream compares |new − old| < 0.01; the same epsilon as the annotation readers.
        if not is_cpu_normalization_ratio_different(old_ratio, new_ratio):
            return False, "ratios are close"
        return True, "ratio is different"


def _annotations(node: Mapping[str, Any]) -> Mapping[str, str] | None:
    return (node.get("metadata") or {}).get("annotations")


__all__ = ["CPUNormalizationPlugin", "DEFAULT_RATIO", "PLUGIN_NAME", "calculate_ratio",
           "ratio_from_model", "validate_ratio"]
