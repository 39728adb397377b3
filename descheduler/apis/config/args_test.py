"""Plugin args: upstream's defaults (``v1alpha2/defaults_test.go``) and validation rules
(``validation/validation_loadaware.go``, ``validation_pluginargs.go``), located at the field."""

from __future__ import annotations

from typing import Any

import pytest

from descheduler.apis.config.args import (
    DEFAULT_POOL_NAME,
    ArbitrationArgs,
    LoadAnomalyCondition,
    LowNodeLoadArgs,
    MigrationControllerArgs,
    MigrationObjectLimiter,
    RemovePodsViolatingNodeAffinityArgs,
)
from descheduler.apis.config.loader import decode_plugin_args


def decoded(name: str, raw: dict[str, Any]) -> Any:
    args, errors = decode_plugin_args(name, raw)
    assert errors == [], errors
    return args


def problems(name: str, raw: dict[str, Any]) -> list[str]:
    args = decoded(name, raw)
    return [str(e) for e in args.validate_args()]


def test_low_node_load_defaults() -> None:
    args = decoded("LowNodeLoad", {})
    assert isinstance(args, LowNodeLoadArgs)
    assert (args.paused, args.dry_run, args.number_of_nodes, args.node_fit,
            args.use_deviation_thresholds) == (False, False, 0, True, False)
    assert args.node_metric_expiration_seconds == 180
    assert args.detector_cache_timeout == 300.0
    assert args.anomaly_condition == LoadAnomalyCondition(
        timeout=60.0, consecutive_abnormalities=5, consecutive_normalities=3)
    assert args.resource_weights == {"cpu": 1, "memory": 1}
    assert (args.low_thresholds, args.high_thresholds, args.node_pools) == (None, None, [])
    assert args.validate_args() == []


def test_low_node_load_keeps_node_fit_false() -> None:
    assert decoded("LowNodeLoad", {"nodeFit": False}).node_fit is False


def test_low_node_load_anomaly_condition_fills_zero_abnormalities() -> None:
    args = decoded("LowNodeLoad", {"anomalyCondition": {"timeout": "10s",
                                                        "consecutiveNormalities": 3}})
    assert args.anomaly_condition == LoadAnomalyCondition(
        timeout=10.0, consecutive_abnormalities=5, consecutive_normalities=3)


def test_low_node_load_anomaly_condition_both_zero_is_refused() -> None:
    # Upstream's else-if: abnormalities get their default, normalities stay 0.
    args = decoded("LowNodeLoad", {"anomalyCondition": {"timeout": "10s"}})
    assert args.anomaly_condition.consecutive_abnormalities == 5
    assert args.anomaly_condition.consecutive_normalities == 0
    assert [str(e) for e in args.validate_args()] == [
        "anomalyCondition.consecutiveNormalities: consecutiveNormalities must be greater than 0"]


def test_low_node_load_resource_weights_default_per_threshold_resource() -> None:
    args = decoded("LowNodeLoad", {"lowThresholds": {"cpu": 30, "memory": 30, "pods": 10},
                                   "resourceWeights": {"cpu": 10, "memory": 5}})
    assert args.resource_weights == {"cpu": 10, "memory": 5, "pods": 1}
    args = decoded("LowNodeLoad", {"highThresholds": {"pods": 10},
                                   "resourceWeights": {"cpu": 0, "memory": -1}})
    assert args.resource_weights == {"cpu": 1, "memory": 1, "pods": 1}


def test_low_node_load_explicit_zero_expiration_is_refused() -> None:
    assert problems("LowNodeLoad", {"nodeMetricExpirationSeconds": 0}) == [
        "nodeMetricExpirationSeconds: must be greater than 0"]


@pytest.mark.parametrize(("raw", "expected"), [
    ({"numberOfNodes": -1}, ["numberOfNodes: must be greater than or equal to 0"]),
    ({"evictableNamespaces": {"include": ["a"], "exclude": ["b"]}},
     ["evictableNamespaces: only one of Include/Exclude namespaces can be set"]),
    ({"lowThresholds": {"cpu": -1}},
     ["lowThresholds.cpu: percentage must be greater than or equal to 0, got -1"]),
    ({"highThresholds": {"memory": -5}},
     ["highThresholds.memory: percentage must be greater than or equal to 0, got -5"]),
    ({"lowThresholds": {"cpu": 80}, "highThresholds": {"cpu": 70.5}},
     ["lowThresholds.cpu: must be less than or equal to highThresholds.cpu (70.5), got 80"]),
    ({"highThresholds": {"cpu": 70}, "prodHighThresholds": {"cpu": 75}},
     ["prodHighThresholds.cpu: must be less than or equal to highThresholds.cpu (70), got 75"]),
    ({"prodLowThresholds": {"cpu": 50}, "prodHighThresholds": {"cpu": 40}},
     ["prodLowThresholds.cpu: must be less than or equal to prodHighThresholds.cpu (40), "
      "got 50"]),
    ({"podSelectors": [{"name": "a", "selector": {"matchLabels": {"bad key!": "x"}}}]},
     ["podSelectors[0].selector: "]),
    ({"nodePools": [{"name": "p", "lowThresholds": {"cpu": 90},
                     "highThresholds": {"cpu": 80}}]},
     ["nodePools[0].lowThresholds.cpu: must be less than or equal to highThresholds.cpu "
      "(80), got 90"]),
    ({"nodePools": [{"name": "p", "nodeSelector": {"matchExpressions": [
        {"key": "a", "operator": "Bogus"}]}}]},
     ["nodePools[0].nodeSelector: "]),
])
def test_low_node_load_validation(raw: dict[str, Any], expected: list[str]) -> None:
    found = problems("LowNodeLoad", raw)
    assert len(found) == len(expected), found
    for message, prefix in zip(found, expected, strict=True):
        assert message.startswith(prefix), (message, prefix)


def test_low_node_load_thresholds_only_compared_for_common_resources() -> None:
    assert problems("LowNodeLoad", {"lowThresholds": {"cpu": 90},
                                    "highThresholds": {"memory": 10}}) == []


def test_node_pools_inherit_the_top_level_and_follow_the_default_pool() -> None:
    args = decoded("LowNodeLoad", {
        "lowThresholds": {"cpu": 40}, "highThresholds": {"cpu": 70},
        "anomalyCondition": {"consecutiveAbnormalities": 2, "consecutiveNormalities": 4},
        "nodeSelector": {"matchLabels": {"pool": "default"}},
        "nodePools": [
            {"name": "gpu", "highThresholds": {"cpu": 90}},
            {"name": "batch", "anomalyCondition": {"consecutiveNormalities": 1}},
        ]})
    default, gpu, batch = args.node_pools_effective()
    assert default.name == DEFAULT_POOL_NAME
    assert default.node_selector == args.node_selector
    assert (gpu.low_thresholds, gpu.high_thresholds) == ({"cpu": 40}, {"cpu": 90})
    assert gpu.anomaly_condition == args.anomaly_condition
    assert gpu.resource_weights == {"cpu": 1, "memory": 1}
    assert batch.high_thresholds == {"cpu": 70}
    assert batch.anomaly_condition == LoadAnomalyCondition(
        timeout=None, consecutive_abnormalities=2, consecutive_normalities=1)
    # the configured pools are left as written
    assert args.node_pools[0].low_thresholds is None


def test_migration_controller_defaults() -> None:
    args = decoded("MigrationController", {})
    assert isinstance(args, MigrationControllerArgs)
    assert (args.dry_run, args.max_concurrent_reconciles, args.max_migrating_per_node) == (
        False, 1, 2)
    assert (args.max_migrating_globally, args.max_migrating_per_namespace,
            args.max_migrating_per_workload, args.max_unavailable_per_workload) == (
        None, None, None, None)
    assert (args.default_job_mode, args.default_job_ttl, args.scheduler_names) == (
        "ReservationFirst", 300.0, ["koord-scheduler"])
    assert (args.evict_qps_value(), args.evict_burst, args.eviction_policy) == (
        10.0, 1, "Eviction")
    assert args.object_limiters == {"workload": MigrationObjectLimiter(duration=300.0)}
    assert args.arbitration_args == ArbitrationArgs(enabled=True, interval=0.5)
    assert (args.node_fit, args.node_selector, args.skip_eviction_gates) == (False, "", [])
    assert args.validate_args() == []


def test_migration_controller_keeps_what_is_set() -> None:
    args = decoded("MigrationController", {
        "maxMigratingPerNode": 0, "defaultJobTTL": "0s", "evictQPS": 2.5,
        "objectLimiters": {"namespace": {"duration": "1m", "maxMigrating": "10%"}},
        "arbitrationArgs": {"enabled": False}, "defaultJobMode": "EvictDirectly",
        "schedulerNames": ["a", "b"], "evictionPolicy": "SoftEviction",
        "skipEvictionGates": ["MaxMigratingPerNode", "ExpectedReplicas"]})
    assert (args.max_migrating_per_node, args.default_job_ttl, args.evict_qps_value()) == (
        0, 0.0, 2.5)
    assert list(args.object_limiters) == ["namespace"]
    assert args.arbitration_args == ArbitrationArgs(enabled=False, interval=0.5)
    assert args.validate_args() == []


@pytest.mark.parametrize(("raw", "expected"), [
    ({"maxMigratingGlobally": -1},
     "maxMigratingGlobally: maxMigratingGlobally should be greater or equal 0"),
    ({"maxMigratingPerNamespace": -1},
     "maxMigratingPerNamespace: maxMigratingPerNamespace should be greater or equal 0"),
    ({"maxMigratingPerNode": -1},
     "maxMigratingPerNode: maxMigratingPerNode should be greater or equal 0"),
    ({"maxMigratingPerWorkload": "ten"}, "maxMigratingPerWorkload: must be an integer or a"),
    ({"maxUnavailablePerWorkload": "5"}, "maxUnavailablePerWorkload: must be an integer or a"),
    ({"evictQPS": 0}, "evictQPS: evictQPS must be greater than 0"),
    ({"evictQPS": "fast"}, "evictQPS: must be a number, got 'fast'"),
    ({"evictBurst": 0}, "evictBurst: evictBurst must be greater than 0"),
    ({"labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
     "labelSelector: "),
    ({"namespaces": {"include": ["a"], "exclude": ["b"]}},
     "namespaces: only one of Include/Exclude namespaces can be set"),
    ({"maxConcurrentReconciles": 0},
     "maxConcurrentReconciles: maxConcurrentReconciles should be greater than or equal to 1"),
    ({"defaultJobMode": "Later"}, "defaultJobMode: unsupported value 'Later'"),
    ({"defaultJobTTL": "-1s"}, "defaultJobTTL: defaultJobTTL should be positive or zero"),
    ({"evictionPolicy": "Kill"}, "evictionPolicy: unsupported value 'Kill'"),
    ({"skipEvictionGates": ["NodeFit", "Everything"]},
     "skipEvictionGates[1]: unsupported value 'Everything'"),
])
def test_migration_controller_validation(raw: dict[str, Any], expected: str) -> None:
    found = problems("MigrationController", raw)
    assert len(found) == 1 and found[0].startswith(expected), found


def test_default_evictor_and_node_affinity_args() -> None:
    evictor = decoded("DefaultEvictor", {"evictLocalStoragePods": True, "nodeFit": True,
                                         "priorityThreshold": {"value": 100}})
    assert (evictor.evict_local_storage_pods, evictor.node_fit) == (True, True)
    assert evictor.priority_threshold.value == 100
    affinity = decoded("RemovePodsViolatingNodeAffinity", {
        "nodeAffinityType": ["requiredDuringSchedulingIgnoredDuringExecution"],
        "namespaces": {"include": ["a"], "exclude": ["b"]}})
    assert isinstance(affinity, RemovePodsViolatingNodeAffinityArgs)
    assert [str(e) for e in affinity.validate_args()] == [
        "namespaces: only one of Include/Exclude namespaces can be set"]


def test_decoding_errors_are_relative_to_the_args() -> None:
    args, errors = decode_plugin_args("LowNodeLoad", {"paused": "no", "pools": []})
    assert args is None
    assert [str(e) for e in errors] == ["pools: unknown field"]
    args, errors = decode_plugin_args("LowNodeLoad", {"paused": "no"})
    assert [e.path for e in errors] == ["paused"]
