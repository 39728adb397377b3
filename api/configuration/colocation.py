"""``colocation-config``: how batch and mid resources are computed, cluster-wide and per node.

Corresponds to ``ColocationCfg``/``ColocationStrategy``/``NodeColocationCfg`` in upstream
`apis/configuration/slo_controller_config.go`, the defaults and validity rules of
`pkg/util/sloconfig/colocation_config.go` (DefaultColocationStrategy,
IsColocationStrategyValid, GetNodeColocationStrategy) and the resolution done by
`pkg/slo-controller/config/colocation_cfg.go`:

1. the cluster strategy is the defaults merged with the top-level fields; when it is invalid
   the whole key is rejected (see ``resolve_colocation_cfg``);
2. each ``nodeConfigs[i]`` is the cluster strategy merged with that entry; an invalid result
   silently falls back to the cluster strategy;
3. a node uses the first ``nodeConfigs`` entry whose selector matches, then the JSON in its
   annotation ``node.koordinator.sh/colocation-strategy`` merged on top (ignored when
   unparsable), then the ratio labels (``node.koordinator.sh/cpu-reclaim-ratio`` ...) override
   the matching percent fields.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import Field, ValidationError

from api.base import GoJSONModel, Int64
from api.configuration.merge import merge_cfg
from api.configuration.profile import NodeCfgProfile, first_matching, node_annotations, node_labels
from api.extension.codec import json_depth_error
from api.extension.node_colocation import (
    ANNOTATION_NODE_COLOCATION_STRATEGY,
    LABEL_CPU_RECLAIM_RATIO,
    LABEL_MEMORY_RECLAIM_RATIO,
    LABEL_MID_STATIC_CPU_RESERVED_RATIO,
    LABEL_MID_STATIC_MEMORY_RESERVED_RATIO,
    get_ratio_label_percent,
)
from api.slo.v1alpha1.nodemetric import AggregatePolicy, MemoryCollectPolicy


class CalculatePolicy:
    """Values of ``cpuCalculatePolicy``/``memoryCalculatePolicy``."""

    USAGE = "usage"  # charge high-priority pods by usage (resources over-committed)
    REQUEST = "request"  # by request (memory only)
    MAX_USAGE_REQUEST = "maxUsageRequest"  # by max(usage, request)


MID_RECLAIM_MODE_STATIC = "static"


class ColocationStrategy(GoJSONModel):
    """ColocationStrategy defines the strategy for node colocation."""

    # String fields that are pointers in Go: an explicit "" is written and overwrites.
    go_pointer_strings: ClassVar[frozenset[str]] = frozenset({
        "metric_memory_collect_policy", "cpu_calculate_policy", "memory_calculate_policy",
        "mid_reclaim_mode",
    })

    enable: bool | None = None
    # → NodeMetric spec.metricCollectPolicy.
    metric_aggregate_duration_seconds: Int64 | None = None
    metric_report_interval_seconds: Int64 | None = None
    metric_aggregate_policy: AggregatePolicy | None = None
    metric_memory_collect_policy: str | None = None
    # Utilisation ceiling (% of the node) that high-priority usage plus batch CPU may reach.
    cpu_reclaim_threshold_percent: Int64 | None = None
    cpu_calculate_policy: str | None = None
    memory_reclaim_threshold_percent: Int64 | None = None
    memory_calculate_policy: str | None = None
    # NodeMetric older than this → batch resources degraded.
    degrade_time_minutes: Int64 | None = None
    # Minimum interval between node resource updates, and the relative change that forces one.
    update_time_threshold_seconds: Int64 | None = None
    resource_diff_threshold: float | None = None
    # Mid resources: ``static`` takes a reserved share instead of reclaiming.
    mid_reclaim_mode: str | None = None
    mid_cpu_threshold_percent: Int64 | None = Field(None, alias="midCPUThresholdPercent")
    mid_memory_threshold_percent: Int64 | None = None
    mid_unallocated_percent: Int64 | None = None
    mid_static_cpu_reserved_percent: Int64 | None = Field(
        None, alias="midStaticCPUReservedPercent")
    mid_static_memory_reserved_percent: Int64 | None = None
    # When set, batch resources are also capped at this % of the node total.
    batch_cpu_threshold_percent: Int64 | None = Field(None, alias="batchCPUThresholdPercent")
    batch_memory_threshold_percent: Int64 | None = None
    # Third-party colocation extensions (ColocationStrategyExtender).
    extensions: dict[str, Any] | None = None


class NodeColocationCfg(ColocationStrategy, NodeCfgProfile):
    """A ``nodeConfigs[]`` entry: name, node selector and the strategy fields it overrides."""

    def strategy(self) -> ColocationStrategy:
        """The strategy part of the entry, without name and selector."""
        return merge_cfg(ColocationStrategy(), self)


class ColocationCfg(ColocationStrategy):
    """The ``colocation-config`` key: the cluster strategy's fields plus ``nodeConfigs``."""

    node_configs: list[NodeColocationCfg] | None = None

    def cluster_strategy(self) -> ColocationStrategy:
        """The cluster-wide strategy (the top-level fields)."""
        return merge_cfg(ColocationStrategy(), self)

    def for_node(self, node: Mapping[str, Any]) -> ColocationStrategy:
        """The strategy that applies to a node (GetNodeColocationStrategy); see module doc."""
        strategy = self.cluster_strategy()
        entry = first_matching(self.node_configs, node)
        if entry is not None:
            strategy = merge_cfg(strategy, entry)
        return apply_node_overrides(strategy, node)


def default_colocation_strategy() -> ColocationStrategy:
    """Upstream's DefaultColocationStrategy."""
    return ColocationStrategy(
        enable=False,
        metric_aggregate_duration_seconds=300,
        metric_report_interval_seconds=60,
        metric_aggregate_policy=AggregatePolicy(durations=["5m0s", "10m0s", "30m0s"]),
        metric_memory_collect_policy=MemoryCollectPolicy.USAGE_WITHOUT_PAGE_CACHE.value,
        cpu_reclaim_threshold_percent=60,
        cpu_calculate_policy=CalculatePolicy.USAGE,
        memory_reclaim_threshold_percent=65,
        memory_calculate_policy=CalculatePolicy.USAGE,
        degrade_time_minutes=15,
        update_time_threshold_seconds=300,
        resource_diff_threshold=0.1,
        mid_cpu_threshold_percent=100,
        mid_memory_threshold_percent=100,
        mid_unallocated_percent=0,
        mid_static_cpu_reserved_percent=0,
        mid_static_memory_reserved_percent=0,
    )


def default_colocation_cfg() -> ColocationCfg:
    """The config in force when ``colocation-config`` is missing or empty."""
    return ColocationCfg.model_validate(default_colocation_strategy().to_dict())


# (field, JSON name, check, rule as written in messages)
_RULES: tuple[tuple[str, str, Any, str], ...] = (
    ("metric_aggregate_duration_seconds", "metricAggregateDurationSeconds", lambda v: v > 0,
     "> 0"),
    ("metric_report_interval_seconds", "metricReportIntervalSeconds", lambda v: v > 0, "> 0"),
    ("cpu_reclaim_threshold_percent", "cpuReclaimThresholdPercent", lambda v: v >= 0, ">= 0"),
    ("mid_static_cpu_reserved_percent", "midStaticCPUReservedPercent", lambda v: v >= 0,
     ">= 0"),
    ("memory_reclaim_threshold_percent", "memoryReclaimThresholdPercent", lambda v: v >= 0,
     ">= 0"),
    ("mid_static_memory_reserved_percent", "midStaticMemoryReservedPercent", lambda v: v >= 0,
     ">= 0"),
    ("degrade_time_minutes", "degradeTimeMinutes", lambda v: v > 0, "> 0"),
    ("update_time_threshold_seconds", "updateTimeThresholdSeconds", lambda v: v > 0, "> 0"),
    ("resource_diff_threshold", "resourceDiffThreshold", lambda v: v > 0, "> 0"),
    ("metric_memory_collect_policy", "metricMemoryCollectPolicy", lambda v: len(v) > 0,
     "non-empty"),
    ("mid_cpu_threshold_percent", "midCPUThresholdPercent", lambda v: 0 <= v <= 100,
     "in 0..100"),
    ("mid_memory_threshold_percent", "midMemoryThresholdPercent", lambda v: 0 <= v <= 100,
     "in 0..100"),
    ("mid_unallocated_percent", "midUnallocatedPercent", lambda v: 0 <= v <= 100, "in 0..100"),
    ("batch_cpu_threshold_percent", "batchCPUThresholdPercent", lambda v: v >= 0, ">= 0"),
    ("batch_memory_threshold_percent", "batchMemoryThresholdPercent", lambda v: v >= 0, ">= 0"),
)


def colocation_strategy_problems(strategy: ColocationStrategy) -> list[str]:
    """Why upstream's IsColocationStrategyValid would refuse the strategy (empty: valid)."""
    problems = []
    for field, json_name, check, rule in _RULES:
        value = getattr(strategy, field)
        if value is not None and not check(value):
            problems.append(f"{json_name} must be {rule}, got {value!r}")
    return problems


def is_colocation_strategy_valid(strategy: ColocationStrategy | None) -> bool:
    return strategy is not None and not colocation_strategy_problems(strategy)


class InvalidColocationStrategyError(ValueError):
    """The merged cluster strategy breaks upstream's validity rules."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("invalid cluster strategy: " + "; ".join(problems))


def resolve_colocation_cfg(raw: ColocationCfg) -> ColocationCfg:
    """The config in force for a parsed ``colocation-config`` (steps 1 and 2 of the module doc).

    Raises InvalidColocationStrategyError when the merged cluster strategy is invalid.
    """
    cluster = merge_cfg(default_colocation_strategy(), raw)
    problems = colocation_strategy_problems(cluster)
    if problems:
        raise InvalidColocationStrategyError(problems)
    nodes = []
    for entry in raw.node_configs or []:
        merged = merge_cfg(cluster, entry)
        strategy = merged if is_colocation_strategy_valid(merged) else cluster
        nodes.append(NodeColocationCfg.model_validate(
            {**entry.model_dump(by_alias=True, exclude_none=True,
                                include={"name", "node_selector"}),
             **strategy.model_dump(by_alias=True, exclude_none=True)}))
    resolved = ColocationCfg.model_validate(cluster.model_dump(by_alias=True, exclude_none=True))
    resolved.node_configs = nodes if raw.node_configs is not None else None
    return resolved


def colocation_strategy_on_node(node: Mapping[str, Any]) -> ColocationStrategy | None:
    """The strategy in the node's ``node.koordinator.sh/colocation-strategy`` annotation.

    None when there is none; raises ValueError when it is not a valid ColocationStrategy.
    """
    text = node_annotations(node).get(ANNOTATION_NODE_COLOCATION_STRATEGY)
    if text is None:
        return None
    too_deep = json_depth_error(text)
    if too_deep is not None:
        raise ValueError(f"{ANNOTATION_NODE_COLOCATION_STRATEGY}: {too_deep}")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{ANNOTATION_NODE_COLOCATION_STRATEGY}: {err}") from None
    try:
        return ColocationStrategy.model_validate({} if data is None else data, strict=True)
    except ValidationError as err:
        raise ValueError(f"{ANNOTATION_NODE_COLOCATION_STRATEGY}: {err}") from None


def apply_node_overrides(strategy: ColocationStrategy,
                         node: Mapping[str, Any]) -> ColocationStrategy:
    """``strategy`` with the node's annotation and ratio labels applied (upstream's
    UpdateColocationStrategyForNode); an unparsable annotation or label is ignored."""
    try:
        on_node = colocation_strategy_on_node(node)
    except ValueError:
        on_node = None
    result = merge_cfg(strategy, on_node)
    labels = node_labels(node)
    for key, field in ((LABEL_CPU_RECLAIM_RATIO, "cpu_reclaim_threshold_percent"),
                       (LABEL_MEMORY_RECLAIM_RATIO, "memory_reclaim_threshold_percent"),
                       (LABEL_MID_STATIC_CPU_RESERVED_RATIO, "mid_static_cpu_reserved_percent"),
                       (LABEL_MID_STATIC_MEMORY_RESERVED_RATIO,
                        "mid_static_memory_reserved_percent")):
        percent = get_ratio_label_percent(labels, key)
        if percent is not None:
            setattr(result, field, percent)
    return result


__all__ = [
    "MID_RECLAIM_MODE_STATIC", "CalculatePolicy",
    "ColocationCfg", "ColocationStrategy", "InvalidColocationStrategyError",
    "NodeColocationCfg", "apply_node_overrides", "colocation_strategy_on_node",
    "colocation_strategy_problems", "default_colocation_cfg", "default_colocation_strategy",
    "is_colocation_strategy_valid", "resolve_colocation_cfg",
]
