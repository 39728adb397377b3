"""Koordinator plugin args: upstream's defaults (``pkg/scheduler/apis/config/v1/defaults.go``),
conditional defaults and validation rules (``validation/validation_pluginargs.go``), decoded
from their JSON form."""

from __future__ import annotations

from typing import Any, TypeVar

import pytest

from scheduler.apis.config.base import PluginArgs
from scheduler.apis.config.koord_args import (
    KOORD_ARGS_KINDS,
    ElasticQuotaArgs,
    LoadAwareSchedulingArgs,
    NodeNUMAResourceArgs,
    ReservationArgs,
)
from scheduler.apis.config.plugin_args import decode_plugin_args
from scheduler.apis.config.types import V1

MAX = "1844674407370955161"
LEAST_CPU_MEMORY = {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 1},
                                                            {"name": "memory", "weight": 1}]}

DEFAULTS: dict[str, dict[str, Any]] = {
    "LoadAwareScheduling": {
        "filterExpiredNodeMetrics": True, "nodeMetricExpirationSeconds": 180,
        "enableScheduleWhenNodeMetricsExpired": False, "resourceWeights": {"cpu": 1, "memory": 1},
        "dominantResourceWeight": 0, "usageThresholds": {"cpu": 65, "memory": 95},
        "prodUsageThresholds": {}, "prodUsageIncludeSys": False, "scoreAccordingProdUsage": False,
        "estimator": "", "estimatedScalingFactors": {"cpu": 85, "memory": 70},
        "allowCustomizeEstimation": False, "supportedResources": []},
    "NodeNUMAResource": {"defaultCPUBindPolicy": "FullPCPUs", "scoringStrategy": LEAST_CPU_MEMORY,
                         "numaScoringStrategy": LEAST_CPU_MEMORY},
    "Reservation": {
        "enablePreemption": False, "minCandidateNodesPercentage": 10,
        "minCandidateNodesAbsolute": 100, "controllerWorkers": 1, "gcDurationSeconds": 86400,
        "gcIntervalSeconds": 60, "disableGarbageCollection": False, "resyncIntervalSeconds": 60,
        "ignoredResources": [], "ignoredResourceGroups": []},
    "ElasticQuota": {
        "delayEvictTime": "2m0s", "revokePodInterval": "1s",
        "defaultQuotaGroupMax": {"cpu": MAX, "memory": MAX},
        "systemQuotaGroupMax": {"cpu": MAX, "memory": MAX},
        "quotaGroupNamespace": "koordinator-system", "monitorAllQuotas": False,
        "enableCheckParentQuota": False, "enableRuntimeQuota": True, "enableMinQuotaScale": True,
        "disableDefaultQuotaPreemption": True, "enableQueueHint": False,
        "quotaSnapshotUpdateInterval": "2m0s", "hookPlugins": []},
    "Coscheduling": {
        "defaultTimeout": "10m0s", "controllerWorkers": 1, "skipCheckScheduleCycle": False,
        "enablePreemption": False, "awareNetworkTopology": False,
        "defaultMatchPolicy": "once-satisfied"},
    "DeviceShare": {
        "allocator": "",
        "scoringStrategy": {"type": "LeastAllocated", "resources": [
            {"name": "koordinator.sh/gpu-memory-ratio", "weight": 1},
            {"name": "koordinator.sh/gpu-memory", "weight": 1},
            {"name": "koordinator.sh/rdma", "weight": 1},
            {"name": "koordinator.sh/fpga", "weight": 1}]},
        "disableDeviceNUMATopologyAlignment": False,
        "gpuSharedResourceTemplatesConfig": {
            "configMapNamespace": "koordinator-system",
            "configMapName": "gpu-shared-resource-templates",
            "matchedResources": ["huawei.com/npu-core"]},
        "gpuShareUnsupportedModels": []},
    "ScarceResourceAvoidance": {"resources": []},
    "NodeResourcesFitPlus": {"resources": {}},
    "SchedulingHint": {"maxHintNodes": 100},
}


A = TypeVar("A", bound=PluginArgs)


def decode(model: type[A], raw: dict[str, Any] | None) -> A:
    """``raw`` decoded as the args of ``model``'s plugin."""
    args, errors = decode_plugin_args(model.PLUGIN, raw, V1)
    assert errors == [] and isinstance(args, model)
    return args


def problems(name: str, raw: dict[str, Any]) -> list[str]:
    """Decoding and validation problems, as "path: message"."""
    args, errors = decode_plugin_args(name, raw, V1)
    if errors:
        return [str(e) for e in errors]
    assert isinstance(args, PluginArgs)
    return [str(e) for e in args.validate_args()]


def test_every_koordinator_kind_has_a_defaults_row() -> None:
    assert set(DEFAULTS) == set(KOORD_ARGS_KINDS)


@pytest.mark.parametrize("name", sorted(DEFAULTS))
def test_defaults(name: str) -> None:
    kind = f"{name}Args"
    expected = {"apiVersion": V1, "kind": kind, **DEFAULTS[name]}
    assert decode(KOORD_ARGS_KINDS[name], None).to_dict() == expected
    assert decode(KOORD_ARGS_KINDS[name], {"kind": kind, "apiVersion": V1}).to_dict() == expected
    assert KOORD_ARGS_KINDS[name]().validate_args() == []


# --- conditional defaults ------------------------------------------------------------------


def test_resource_weights_default_only_without_dominant_resource_weight() -> None:
    assert decode(LoadAwareSchedulingArgs, {"dominantResourceWeight": 5}).resource_weights == {}
    assert decode(LoadAwareSchedulingArgs, {"resourceWeights": {"cpu": 3}}
                  ).resource_weights == {"cpu": 3}


def test_estimated_scaling_factors_fill_missing_cpu_and_memory() -> None:
    args = decode(LoadAwareSchedulingArgs, {"estimatedScalingFactors": {"cpu": 50, "x/y": 10}})
    assert args.estimated_scaling_factors == {"cpu": 50, "memory": 70, "x/y": 10}


def test_usage_thresholds_default_only_when_empty() -> None:
    assert decode(LoadAwareSchedulingArgs, {"usageThresholds": {}}).usage_thresholds == {
        "cpu": 65, "memory": 95}
    assert decode(LoadAwareSchedulingArgs, {"usageThresholds": {"cpu": 0}}).usage_thresholds == {
        "cpu": 0}


def test_reservation_zero_durations_mean_the_default() -> None:
    args = decode(ReservationArgs, {"gcDurationSeconds": 0, "gcIntervalSeconds": 0,
                                  "resyncIntervalSeconds": 30})
    assert (args.gc_duration_seconds, args.gc_interval_seconds, args.resync_interval_seconds
            ) == (86400, 60, 30)


def test_elastic_quota_empty_values_mean_the_default() -> None:
    args = decode(ElasticQuotaArgs, {"quotaGroupNamespace": "", "defaultQuotaGroupMax": {},
                                   "systemQuotaGroupMax": {"cpu": "10"}, "delayEvictTime": "0s"})
    assert args.quota_group_namespace == "koordinator-system"
    assert args.default_quota_group_max == {"cpu": MAX, "memory": MAX}
    assert args.system_quota_group_max == {"cpu": "10"}
    # A pointer upstream: an explicit zero stays.
    assert args.delay_evict_time == 0.0


def test_explicit_empty_cpu_bind_policy_stays() -> None:
    assert decode(NodeNUMAResourceArgs, {"defaultCPUBindPolicy": ""}).default_cpu_bind_policy == ""


# --- validation ----------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "raw", "expected"), [
    ("LoadAwareScheduling", {"nodeMetricExpirationSeconds": 0},
     "nodeMetricExpirationSeconds: must be positive, got 0"),
    ("LoadAwareScheduling", {"resourceWeights": {"cpu": 0}},
     "resourceWeights.cpu: must be in 1..100, got 0"),
    ("LoadAwareScheduling", {"dominantResourceWeight": 101},
     "dominantResourceWeight: must be in 0..100, got 101"),
    ("LoadAwareScheduling", {"usageThresholds": {"cpu": 120}},
     "usageThresholds.cpu: must be in 0..100, got 120"),
    ("LoadAwareScheduling", {"estimatedScalingFactors": {"memory": 0}},
     "estimatedScalingFactors.memory: must be in 1..100, got 0"),
    ("LoadAwareScheduling", {"resourceWeights": {"example.com/gpu": 1}},
     "estimatedScalingFactors: has no factor for weighted resource 'example.com/gpu'"),
    ("LoadAwareScheduling", {"aggregated": {"usageThresholds": {"cpu": -1}}},
     "aggregated.usageThresholds.cpu: must be in 0..100, got -1"),
    ("LoadAwareScheduling", {"aggregated": {"usageAggregationType": "p80"}},
     "aggregated.usageAggregationType: unsupported value 'p80': must be one of 'avg', 'p50', "
     "'p90', 'p95', 'p99'"),
    ("LoadAwareScheduling", {"aggregated": {"scoreAggregatedDuration": "-5m"}},
     "aggregated.scoreAggregatedDuration: must be >= 0, got -300.0s"),
    ("ElasticQuota", {"defaultQuotaGroupMax": {"cpu": "-1"}},
     "defaultQuotaGroupMax.cpu: must not be negative, got -1"),
    ("ElasticQuota", {"revokePodInterval": "-1s"},
     "revokePodInterval: must not be negative, got -1.0s"),
    ("Coscheduling", {"defaultTimeout": "-1s"}, "defaultTimeout: must not be negative, got -1.0s"),
    ("Coscheduling", {"controllerWorkers": 0}, "controllerWorkers: must be at least 1, got 0"),
    ("DeviceShare", {"scoringStrategy": {"type": "MostAllocated",
                                         "resources": [{"name": "koordinator.sh/rdma"}]}},
     "scoringStrategy.resources[0].weight: must be in 1..100, got 0"),
    ("Reservation", {"minCandidateNodesPercentage": 101},
     "minCandidateNodesPercentage: must be in 0..100, got 101"),
    ("Reservation", {"gcIntervalSeconds": -1}, "gcIntervalSeconds: must not be negative, got -1"),
    ("Reservation", {"ignoredResources": ["cpu"]},
     "ignoredResources[0]: 'cpu' must be an extended resource name (e.g. example.com/gpu); "
     "native resources cannot be ignored"),
    ("Reservation", {"ignoredResourceGroups": ["example.com/gpu"]},
     "ignoredResourceGroups[0]: resource group name can't contain '/'"),
    ("Reservation", {"ignoredResourceGroups": ["kubernetes.io"]},
     "ignoredResourceGroups[0]: 'kubernetes.io' must be usable as an extended resource prefix "
     "(a DNS subdomain other than the reserved 'kubernetes.io')"),
    ("NodeNUMAResource", {"defaultCPUBindPolicy": "Spread"},
     "defaultCPUBindPolicy: unsupported value 'Spread': must be one of '', 'FullPCPUs', "
     "'SpreadByPCPUs'"),
    ("NodeNUMAResource", {"numaScoringStrategy": {"type": "LeastAllocated",
                                                  "resources": [{"name": "cpu", "weight": 101}]}},
     "numaScoringStrategy.resources[0].weight: must be in 1..100, got 101"),
    ("NodeResourcesFitPlus", {"resources": {"cpu": {"type": "Balanced", "weight": 1}}},
     "resources.cpu.type: unsupported value 'Balanced': must be one of 'MostAllocated', "
     "'LeastAllocated'"),
    ("SchedulingHint", {"maxHintNodes": 0}, "maxHintNodes: must be positive, got 0"),
])
def test_validation(name: str, raw: dict[str, Any], expected: str) -> None:
    assert problems(name, raw) == [expected]


@pytest.mark.parametrize(("raw", "expected"), [
    ({"filterExpiredNodeMetrics": "false"}, "filterExpiredNodeMetrics: Input should be a valid "
                                            "boolean"),
    ({"usageThresholds": {"cpu": 6.5}}, "usageThresholds.cpu: Input should be a valid integer"),
    ({"nodeMetricExpirationSeconds": 2**63}, "nodeMetricExpirationSeconds: Input should be less "
                                             "than or equal to 9223372036854775807"),
    ({"aggregated": {"usageAggregatedDuration": 60}}, "aggregated.usageAggregatedDuration: must "
                                                      "be a duration string such as '15s', got 60"),
    ({"Estimator": "x"}, "Estimator: unknown field"),
])
def test_decoding_is_strict(raw: dict[str, Any], expected: str) -> None:
    assert problems("LoadAwareScheduling", raw) == [expected]


def test_valid_args_keep_their_values() -> None:
    args = decode(LoadAwareSchedulingArgs, {
        "aggregated": {"usageThresholds": {"cpu": 70}, "usageAggregationType": "p95",
                       "usageAggregatedDuration": "5m"},
        "prodUsageThresholds": {"cpu": 50}, "estimatedSecondsAfterPodScheduled": 30})
    assert args.validate_args() == []
    assert args.aggregated is not None and args.aggregated.usage_aggregated_duration == 300.0
    assert args.prod_usage_thresholds == {"cpu": 50}
    assert args.estimated_seconds_after_pod_scheduled == 30
    reservation = decode(ReservationArgs, {"ignoredResources": ["example.com/gpu"],
                                         "ignoredResourceGroups": ["example.com"]})
    assert reservation.validate_args() == []
