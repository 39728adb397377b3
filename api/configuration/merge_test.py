"""merge_cfg reproduces Go's MergeCfg (marshal the override, unmarshal onto the base)."""

from __future__ import annotations

from api.configuration.colocation import ColocationStrategy
from api.configuration.cpu_normalization import CPUNormalizationStrategy
from api.configuration.merge import go_marshal, merge_cfg
from api.slo.v1alpha1 import (
    ExtensionsMap,
    NodeSLOSpec,
    ResourceQOSPolicies,
    ResourceQOSStrategy,
    ResourceThresholdStrategy,
    SystemStrategy,
    default_resource_qos_strategy,
)


def test_nested_objects_merge_field_by_field() -> None:
    base = default_resource_qos_strategy()
    override = ResourceQOSStrategy.model_validate(
        {"beClass": {"memoryQOS": {"wmarkRatio": 90}, "cpuQOS": {"enable": True}}})
    merged = merge_cfg(base, override).to_dict()
    be = merged["beClass"]
    assert be["memoryQOS"]["wmarkRatio"] == 90
    assert be["memoryQOS"]["wmarkMinAdj"] == 50  # kept from the base
    assert be["cpuQOS"] == {"enable": True, "groupIdentity": -1, "schedIdle": 0,
                            "coreExpeller": False}
    assert merged["lsClass"] == base.to_dict()["lsClass"]


def test_arrays_are_replaced_wholesale() -> None:
    base = ResourceQOSStrategy.model_validate({"beClass": {"blkioQOS": {"blocks": [
        {"name": "a", "type": "volumegroup", "ioCfg": {"ioWeightPercent": 60}},
        {"name": "b", "type": "device", "ioCfg": {"readIOPS": 10}}]}}})
    override = ResourceQOSStrategy.model_validate(
        {"beClass": {"blkioQOS": {"blocks": [{"name": "c", "ioCfg": {"writeBPS": 5}}]}}})
    merged = merge_cfg(base, override).to_dict()
    assert merged["beClass"]["blkioQOS"]["blocks"] == [{"name": "c", "ioCfg": {"writeBPS": 5}}]

    durations = merge_cfg(
        ColocationStrategy.model_validate({"metricAggregatePolicy": {"durations": ["5m", "1h"]}}),
        ColocationStrategy.model_validate({"metricAggregatePolicy": {"durations": ["2m"]}}))
    assert durations.metric_aggregate_policy is not None
    assert durations.metric_aggregate_policy.durations == ["2m"]


def test_empty_arrays_and_maps_do_not_clear_the_base() -> None:
    # omitempty drops them from the marshalled override.
    base = SystemStrategy(sched_features={"A": True})
    assert merge_cfg(base, SystemStrategy(sched_features={})).sched_features == {"A": True}
    colocation = ColocationStrategy.model_validate(
        {"metricAggregatePolicy": {"durations": ["5m"]}})
    merged = merge_cfg(colocation, ColocationStrategy.model_validate(
        {"metricAggregatePolicy": {"durations": []}}))
    assert merged.metric_aggregate_policy is not None
    assert merged.metric_aggregate_policy.durations == ["5m"]


def test_maps_merge_key_by_key_and_values_are_replaced_whole() -> None:
    base = SystemStrategy(sched_features={"A": True, "B": True})
    merged = merge_cfg(base, SystemStrategy(sched_features={"B": False, "C": True}))
    assert merged.sched_features == {"A": True, "B": False, "C": True}

    ratios = merge_cfg(
        CPUNormalizationStrategy.model_validate({"ratioModel": {
            "m1": {"baseRatio": 1.3, "turboEnabledRatio": 1.5}, "m2": {"baseRatio": 2.0}}}),
        CPUNormalizationStrategy.model_validate({"ratioModel": {"m1": {"baseRatio": 1.1}}}))
    assert ratios.to_dict()["ratioModel"] == {"m1": {"baseRatio": 1.1}, "m2": {"baseRatio": 2.0}}

    extensions = merge_cfg(
        ColocationStrategy.model_validate({"extensions": {"a": {"x": 1}, "b": 2}}),
        ColocationStrategy.model_validate({"extensions": {"a": {"y": 2}}}))
    assert extensions.extensions == {"a": {"y": 2}, "b": 2}

    spec = merge_cfg(NodeSLOSpec(extensions=ExtensionsMap.of({"p1": {"on": True}})),
                     NodeSLOSpec(extensions=ExtensionsMap.of({"p2": {"on": False}})))
    assert spec.to_dict()["extensions"] == {"Object": {"p1": {"on": True}, "p2": {"on": False}}}


def test_always_written_fields_overwrite_the_bandwidth_quirk() -> None:
    base = SystemStrategy(total_network_bandwidth="10G", min_free_kbytes_factor=100)
    merged = merge_cfg(base, SystemStrategy(watermark_scale_factor=150))
    assert merged.total_network_bandwidth == "0"
    assert merged.min_free_kbytes_factor == 100
    assert merged.watermark_scale_factor == 150


def test_false_and_zero_overwrite() -> None:
    base = ColocationStrategy(enable=True, cpu_reclaim_threshold_percent=60)
    merged = merge_cfg(base, ColocationStrategy(enable=False, cpu_reclaim_threshold_percent=0))
    assert merged.enable is False and merged.cpu_reclaim_threshold_percent == 0


def test_empty_strings_only_overwrite_go_pointer_fields() -> None:
    # cpuCalculatePolicy is a *string in Go: "" is written and wins.
    merged = merge_cfg(ColocationStrategy(cpu_calculate_policy="usage"),
                       ColocationStrategy(cpu_calculate_policy=""))
    assert merged.cpu_calculate_policy == ""
    policies = merge_cfg(ResourceQOSPolicies(cpu_policy="coreSched"),
                         ResourceQOSPolicies(cpu_policy=""))
    assert policies.cpu_policy == ""
    # cpuSuppressPolicy is a plain string: "" is left out by omitempty.
    kept = merge_cfg(ResourceThresholdStrategy(cpu_suppress_policy="cpuset"),
                     ResourceThresholdStrategy(cpu_suppress_policy=""))
    assert kept.cpu_suppress_policy == "cpuset"


def test_inputs_are_not_changed_and_none_override_copies() -> None:
    base = default_resource_qos_strategy()
    before = base.to_json()
    override = ResourceQOSStrategy.model_validate({"lsClass": {"cpuQOS": {"enable": True}}})
    merged = merge_cfg(base, override)
    assert base.to_json() == before
    assert merged is not base
    copy = merge_cfg(base, None)
    assert copy == base and copy is not base


def test_go_marshal_leaves_out_what_go_omits() -> None:
    assert go_marshal(SystemStrategy()) == {"totalNetworkBandwidth": "0"}
    assert go_marshal(ColocationStrategy(enable=False, extensions={})) == {"enable": False}
