"""colocation-config: defaults, validity, node configs and node overrides."""

from __future__ import annotations

import json
from typing import Any

import pytest

from api.configuration.colocation import (
    ColocationCfg,
    ColocationStrategy,
    InvalidColocationStrategyError,
    apply_node_overrides,
    colocation_strategy_on_node,
    colocation_strategy_problems,
    default_colocation_cfg,
    default_colocation_strategy,
    resolve_colocation_cfg,
)


def _node(labels: dict[str, str] | None = None,
          annotations: dict[str, str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "node-1"}
    if labels is not None:
        metadata["labels"] = labels
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Node", "metadata": metadata}


def _resolve(data: dict[str, Any]) -> ColocationCfg:
    return resolve_colocation_cfg(ColocationCfg.model_validate(data, strict=True))


def test_default_colocation_strategy() -> None:
    assert default_colocation_strategy().to_dict() == {
        "enable": False, "metricAggregateDurationSeconds": 300, "metricReportIntervalSeconds": 60,
        "metricAggregatePolicy": {"durations": ["5m0s", "10m0s", "30m0s"]},
        "metricMemoryCollectPolicy": "usageWithoutPageCache", "cpuReclaimThresholdPercent": 60,
        "cpuCalculatePolicy": "usage", "memoryReclaimThresholdPercent": 65,
        "memoryCalculatePolicy": "usage", "degradeTimeMinutes": 15,
        "updateTimeThresholdSeconds": 300, "resourceDiffThreshold": 0.1,
        "midCPUThresholdPercent": 100, "midMemoryThresholdPercent": 100,
        "midUnallocatedPercent": 0, "midStaticCPUReservedPercent": 0,
        "midStaticMemoryReservedPercent": 0}
    assert default_colocation_cfg().node_configs is None
    assert colocation_strategy_problems(default_colocation_strategy()) == []


def test_cluster_strategy_is_merged_onto_the_defaults() -> None:
    cfg = _resolve({"enable": True, "cpuReclaimThresholdPercent": 70,
                    "batchCPUThresholdPercent": 80})
    strategy = cfg.cluster_strategy()
    assert strategy.enable is True
    assert strategy.cpu_reclaim_threshold_percent == 70
    assert strategy.batch_cpu_threshold_percent == 80
    assert strategy.memory_reclaim_threshold_percent == 65
    assert strategy.degrade_time_minutes == 15


@pytest.mark.parametrize(("override", "problem"), [
    ({"metricAggregateDurationSeconds": 0}, "metricAggregateDurationSeconds must be > 0"),
    ({"metricReportIntervalSeconds": -1}, "metricReportIntervalSeconds must be > 0"),
    ({"cpuReclaimThresholdPercent": -1}, "cpuReclaimThresholdPercent must be >= 0"),
    ({"memoryReclaimThresholdPercent": -5}, "memoryReclaimThresholdPercent must be >= 0"),
    ({"degradeTimeMinutes": 0}, "degradeTimeMinutes must be > 0"),
    ({"updateTimeThresholdSeconds": 0}, "updateTimeThresholdSeconds must be > 0"),
    ({"resourceDiffThreshold": 0}, "resourceDiffThreshold must be > 0"),
    ({"metricMemoryCollectPolicy": ""}, "metricMemoryCollectPolicy must be non-empty"),
    ({"midCPUThresholdPercent": 101}, "midCPUThresholdPercent must be in 0..100"),
    ({"midMemoryThresholdPercent": -1}, "midMemoryThresholdPercent must be in 0..100"),
    ({"midUnallocatedPercent": 200}, "midUnallocatedPercent must be in 0..100"),
    ({"midStaticCPUReservedPercent": -1}, "midStaticCPUReservedPercent must be >= 0"),
    ({"batchMemoryThresholdPercent": -1}, "batchMemoryThresholdPercent must be >= 0"),
])
def test_invalid_cluster_strategy_rejects_the_whole_config(override: dict[str, Any],
                                                           problem: str) -> None:
    with pytest.raises(InvalidColocationStrategyError, match=problem):
        _resolve({"enable": True, **override})


def test_invalid_node_config_falls_back_to_the_cluster_strategy() -> None:
    cfg = _resolve({"enable": True, "cpuReclaimThresholdPercent": 55, "nodeConfigs": [
        {"name": "bad", "nodeSelector": {"matchLabels": {"pool": "a"}},
         "degradeTimeMinutes": 0, "cpuReclaimThresholdPercent": 70},
        {"name": "good", "nodeSelector": {"matchLabels": {"pool": "b"}},
         "cpuReclaimThresholdPercent": 80}]})
    assert cfg.node_configs is not None
    bad, good = cfg.node_configs
    assert (bad.name, bad.cpu_reclaim_threshold_percent, bad.degrade_time_minutes) == (
        "bad", 55, 15)
    assert bad.node_selector is not None and bad.node_selector.match_labels == {"pool": "a"}
    assert (good.cpu_reclaim_threshold_percent, good.memory_reclaim_threshold_percent) == (80, 65)
    assert cfg.for_node(_node({"pool": "a"})).cpu_reclaim_threshold_percent == 55
    assert cfg.for_node(_node({"pool": "b"})).cpu_reclaim_threshold_percent == 80


def test_first_matching_node_config_wins_and_null_selector_matches_nothing() -> None:
    cfg = _resolve({"enable": True, "nodeConfigs": [
        {"name": "no-selector", "cpuReclaimThresholdPercent": 10},
        {"name": "null-selector", "nodeSelector": None, "cpuReclaimThresholdPercent": 11},
        {"name": "broken", "nodeSelector": {"matchExpressions": [
            {"key": "pool", "operator": "Bogus"}]}, "cpuReclaimThresholdPercent": 12},
        {"name": "first", "nodeSelector": {"matchLabels": {"pool": "a"}},
         "cpuReclaimThresholdPercent": 70},
        {"name": "everything", "nodeSelector": {}, "cpuReclaimThresholdPercent": 90}]})
    assert cfg.for_node(_node({"pool": "a"})).cpu_reclaim_threshold_percent == 70
    assert cfg.for_node(_node({"pool": "z"})).cpu_reclaim_threshold_percent == 90
    assert cfg.for_node(_node()).cpu_reclaim_threshold_percent == 90


def test_node_annotation_is_merged_on_top() -> None:
    cfg = _resolve({"enable": True, "nodeConfigs": [
        {"name": "a", "nodeSelector": {"matchLabels": {"pool": "a"}},
         "cpuReclaimThresholdPercent": 70}]})
    annotation = json.dumps({"memoryReclaimThresholdPercent": 50, "enable": False})
    strategy = cfg.for_node(_node({"pool": "a"}),)
    assert strategy.memory_reclaim_threshold_percent == 65
    strategy = cfg.for_node(_node(
        {"pool": "a"}, {"node.koordinator.sh/colocation-strategy": annotation}))
    assert (strategy.enable, strategy.cpu_reclaim_threshold_percent,
            strategy.memory_reclaim_threshold_percent) == (False, 70, 50)


@pytest.mark.parametrize("annotation", ["{not json", "[1]", '{"enable": "yes"}'])
def test_unparsable_node_annotation_is_ignored(annotation: str) -> None:
    cfg = _resolve({"enable": True})
    strategy = cfg.for_node(_node(annotations={
        "node.koordinator.sh/colocation-strategy": annotation}))
    assert strategy == cfg.cluster_strategy()


@pytest.mark.parametrize(("labels", "expected"), [
    ({"node.koordinator.sh/cpu-reclaim-ratio": "0.6"}, {"cpu_reclaim_threshold_percent": 60}),
    ({"node.koordinator.sh/cpu-reclaim-ratio": "0.29"}, {"cpu_reclaim_threshold_percent": 28}),
    ({"node.koordinator.sh/memory-reclaim-ratio": "1.2"},
     {"memory_reclaim_threshold_percent": 120}),
    ({"node.koordinator.sh/mid-static-cpu-reserved-ratio": "0.1"},
     {"mid_static_cpu_reserved_percent": 10}),
    ({"node.koordinator.sh/mid-static-memory-reserved-ratio": "2e-1"},
     {"mid_static_memory_reserved_percent": 20}),
    ({"node.koordinator.sh/cpu-reclaim-ratio": "-0.5"}, {"cpu_reclaim_threshold_percent": 60}),
    ({"node.koordinator.sh/cpu-reclaim-ratio": "abc"}, {"cpu_reclaim_threshold_percent": 60}),
    ({"node.koordinator.sh/cpu-reclaim-ratio": " 0.5"}, {"cpu_reclaim_threshold_percent": 60}),
])
def test_ratio_labels_override_percent_fields(labels: dict[str, str],
                                              expected: dict[str, int]) -> None:
    cfg = _resolve({"enable": True})
    strategy = cfg.for_node(_node(labels))
    for field, value in expected.items():
        assert getattr(strategy, field) == value


def test_labels_win_over_annotation() -> None:
    cfg = _resolve({"enable": True})
    strategy = cfg.for_node(_node(
        {"node.koordinator.sh/cpu-reclaim-ratio": "0.5"},
        {"node.koordinator.sh/colocation-strategy": '{"cpuReclaimThresholdPercent": 90}'}))
    assert strategy.cpu_reclaim_threshold_percent == 50


def test_keys_match_ignoring_case_and_unknown_keys_are_ignored() -> None:
    strategy = ColocationStrategy.model_validate(
        {"ENABLE": True, "cpureclaimthresholdpercent": 42, "midcputhresholdpercent": 50,
         "notAField": 1}, strict=True)
    assert strategy.to_dict() == {"enable": True, "cpuReclaimThresholdPercent": 42,
                                  "midCPUThresholdPercent": 50}


def test_deeply_nested_node_strategy_annotation_is_refused_and_ignored():
    # json.loads raised RecursionError, out of the noderesource controller's override step.
    deep = _node(annotations={"node.koordinator.sh/colocation-strategy":
                              '{"cpuReclaimThresholdPercent": 70, "x": ' + "[" * 5000
                              + "]" * 5000 + "}"})
    with pytest.raises(ValueError, match="nested more than 100 levels deep"):
        colocation_strategy_on_node(deep)
    strategy = default_colocation_strategy()
    assert apply_node_overrides(strategy, deep) == strategy
