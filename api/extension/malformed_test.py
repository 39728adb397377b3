"""Every malformed label or annotation value fails with MalformedValueError naming its key.

One table: (parser, key, bad value). Each row must raise MalformedValueError (and nothing
else: the assertion catches every exception type) whose ``key`` is the key and whose message
names it and says what is wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from api.errors import MalformedValueError
from api.extension import (
    ANNOTATION_CPU_BASIC_INFO,
    ANNOTATION_CPU_NORMALIZATION_RATIO,
    ANNOTATION_CUSTOM_ESTIMATED_SCALING_FACTORS,
    ANNOTATION_CUSTOM_ESTIMATED_SECONDS_AFTER_POD_SCHEDULED,
    ANNOTATION_CUSTOM_USAGE_THRESHOLDS,
    ANNOTATION_DEVICE_ALLOCATE_HINT,
    ANNOTATION_DEVICE_ALLOCATED,
    ANNOTATION_DEVICE_JOINT_ALLOCATE,
    ANNOTATION_EVICTION_COST,
    ANNOTATION_EXACT_MATCH_RESERVATION_SPEC,
    ANNOTATION_EXTENDED_RESOURCE_SPEC,
    ANNOTATION_GANG_GROUPS,
    ANNOTATION_GANG_MIN_NUM,
    ANNOTATION_GANG_NETWORK_TOPOLOGY_SPEC,
    ANNOTATION_GANG_POD_NETWORK_TOPOLOGY_INDEX,
    ANNOTATION_GANG_TOTAL_NUM,
    ANNOTATION_GANG_WAIT_TIME,
    ANNOTATION_GPU_PARTITION_SPEC,
    ANNOTATION_GPU_PARTITIONS,
    ANNOTATION_KUBELET_CPU_MANAGER_POLICY,
    ANNOTATION_NETWORK_QOS,
    ANNOTATION_NODE_COLOCATION_STRATEGY,
    ANNOTATION_NODE_CPU_ALLOCS,
    ANNOTATION_NODE_CPU_SHARED_POOLS,
    ANNOTATION_NODE_CPU_TOPOLOGY,
    ANNOTATION_NODE_NETWORK_BANDWIDTH,
    ANNOTATION_NODE_ORIGIN_EXTENDED_ALLOCATABLE,
    ANNOTATION_NODE_RAW_ALLOCATABLE,
    ANNOTATION_NODE_RESERVATION,
    ANNOTATION_NODE_RESOURCE_AMPLIFICATION_RATIO,
    ANNOTATION_NODE_SYSTEM_QOS_RESOURCE,
    ANNOTATION_NODE_THIRD_PARTY_ALLOCATIONS,
    ANNOTATION_NUMA_TOPOLOGY_SPEC,
    ANNOTATION_OOM_SCORE_ADJ,
    ANNOTATION_OOM_SCORE_ADJ_SPEC,
    ANNOTATION_POD_BLKIO_QOS,
    ANNOTATION_POD_CPU_BURST,
    ANNOTATION_POD_CPU_QOS,
    ANNOTATION_POD_EVICT_POLICY,
    ANNOTATION_POD_EVICTION_PRIORITY,
    ANNOTATION_POD_MEMORY_QOS,
    ANNOTATION_POD_PRE_ALLOCATABLE_PRIORITY,
    ANNOTATION_QUOTA_NAMESPACES,
    ANNOTATION_RESCTRL,
    ANNOTATION_RESERVATION_AFFINITY,
    ANNOTATION_RESERVATION_ALLOCATED,
    ANNOTATION_RESERVATION_CURRENT_OWNER,
    ANNOTATION_RESERVATION_OWNERS,
    ANNOTATION_RESERVATION_RESTRICTED_OPTIONS,
    ANNOTATION_RESOURCE_SPEC,
    ANNOTATION_RESOURCE_STATUS,
    ANNOTATION_RUNTIME,
    ANNOTATION_SCHEDULING_HINT,
    ANNOTATION_SHARED_WEIGHT,
    ANNOTATION_SOFT_EVICTION,
    LABEL_CPU_NORMALIZATION_ENABLED,
    LABEL_CPU_RECLAIM_RATIO,
    LABEL_LIGHTWEIGHT_COSCHEDULING_POD_GROUP_MIN_AVAILABLE,
    LABEL_POD_PRIORITY,
    LABEL_RESERVATION_ORDER,
    get_gang_min_num,
    get_pod_sub_priority,
    parse_cpu_basic_info,
    parse_cpu_normalization_enabled,
    parse_cpu_normalization_ratio,
    parse_cpu_shared_pools,
    parse_cpu_topology,
    parse_custom_usage_thresholds,
    parse_device_allocate_hints,
    parse_device_allocations,
    parse_device_joint_allocate,
    parse_estimated_scaling_factors,
    parse_estimated_seconds_after_pod_scheduled,
    parse_eviction_cost,
    parse_eviction_policy,
    parse_eviction_priority,
    parse_exact_match_reservation_spec,
    parse_extended_resource_spec,
    parse_gang_groups,
    parse_gang_min_num,
    parse_gang_total_num,
    parse_gang_wait_time,
    parse_gpu_partition_spec,
    parse_gpu_partition_table,
    parse_kubelet_cpu_manager_policy,
    parse_network_bandwidth,
    parse_network_topology_spec,
    parse_node_colocation_strategy,
    parse_node_reservation,
    parse_numa_topology_spec,
    parse_oom_score_adj,
    parse_oom_score_adj_spec,
    parse_origin_extended_allocatable,
    parse_pod_blkio_qos,
    parse_pod_cpu_allocs,
    parse_pod_cpu_burst,
    parse_pod_cpu_qos,
    parse_pod_memory_qos,
    parse_pod_network_qos,
    parse_pod_network_topology_index,
    parse_pre_allocatable_priority,
    parse_quota_namespaces,
    parse_quota_resource_list,
    parse_ratio_label,
    parse_raw_allocatable,
    parse_resctrl,
    parse_reservation_affinity,
    parse_reservation_allocated,
    parse_reservation_current_owner,
    parse_reservation_order,
    parse_reservation_owners,
    parse_reservation_restricted_options,
    parse_resource_amplification_ratios,
    parse_resource_spec,
    parse_resource_status,
    parse_scheduling_hint,
    parse_shared_weight,
    parse_soft_eviction,
    parse_system_qos_resource,
    parse_third_party_allocations,
)


def _pod_labels(labels: Mapping[str, str]) -> dict[str, Any]:
    return {"metadata": {"labels": dict(labels)}}


# (parser over a single-entry map, key, malformed value)
CASES: list[tuple[Callable[[Mapping[str, str]], Any], str, str]] = [
    # labels
    (lambda m: get_pod_sub_priority(_pod_labels(m)), LABEL_POD_PRIORITY, "abc"),
    (lambda m: get_pod_sub_priority(_pod_labels(m)), LABEL_POD_PRIORITY, "2147483648"),
    (lambda m: get_pod_sub_priority(_pod_labels(m)), LABEL_POD_PRIORITY, "1__0"),
    (lambda m: get_pod_sub_priority(_pod_labels(m)), LABEL_POD_PRIORITY, "09"),
    (lambda m: get_pod_sub_priority(_pod_labels(m)), LABEL_POD_PRIORITY, "0x"),
    (lambda m: get_gang_min_num(_pod_labels(m)),
     LABEL_LIGHTWEIGHT_COSCHEDULING_POD_GROUP_MIN_AVAILABLE, "two"),
    (parse_cpu_normalization_enabled, LABEL_CPU_NORMALIZATION_ENABLED, "yes"),
    (parse_reservation_order, LABEL_RESERVATION_ORDER, "1.5"),
    (lambda m: parse_ratio_label(m, LABEL_CPU_RECLAIM_RATIO), LABEL_CPU_RECLAIM_RATIO, "-0.5"),
    (lambda m: parse_ratio_label(m, LABEL_CPU_RECLAIM_RATIO), LABEL_CPU_RECLAIM_RATIO, "60%"),
    # CPU/NUMA and resources (numa_aware.go, resource.go)
    (parse_resource_spec, ANNOTATION_RESOURCE_SPEC, '{"preferredCPUBindPolicy":'),
    (parse_resource_spec, ANNOTATION_RESOURCE_SPEC, '["FullPCPUs"]'),
    (parse_resource_status, ANNOTATION_RESOURCE_STATUS, '{"cpuset":3}'),
    (parse_resource_status, ANNOTATION_RESOURCE_STATUS,
     '{"numaNodeResources":[{"node":"0"}]}'),
    (parse_resource_status, ANNOTATION_RESOURCE_STATUS,
     '{"numaNodeResources":[{"node":0,"resources":{"cpu":"two"}}]}'),
    (parse_numa_topology_spec, ANNOTATION_NUMA_TOPOLOGY_SPEC, '{"numaTopologyPolicy":true}'),
    (parse_extended_resource_spec, ANNOTATION_EXTENDED_RESOURCE_SPEC,
     '{"containers":{"c":{"limits":{"kubernetes.io/batch-cpu":"1K"}}}}'),
    (parse_resctrl, ANNOTATION_RESCTRL, '{"llc":{"schemata":{"percent":"20"}}}'),
    (parse_pod_network_qos, ANNOTATION_NETWORK_QOS, '{"ingressLimit":"10Mbps"}'),
    (parse_pod_cpu_burst, ANNOTATION_POD_CPU_BURST, '{"cpuBurstPercent":1.5}'),
    (parse_pod_cpu_qos, ANNOTATION_POD_CPU_QOS, '{"enable":true,"groupIdentity":3}'),
    (parse_pod_cpu_qos, ANNOTATION_POD_CPU_QOS, '{"enable":"true"}'),
    (parse_pod_memory_qos, ANNOTATION_POD_MEMORY_QOS, '{"minLimitPercent":NaN}'),
    (parse_pod_blkio_qos, ANNOTATION_POD_BLKIO_QOS, '{"blocks":[{"ioCfg":{"readIOPS":-1.0}}]}'),
    (parse_oom_score_adj, ANNOTATION_OOM_SCORE_ADJ, "1001"),
    (parse_oom_score_adj, ANNOTATION_OOM_SCORE_ADJ, "-5x"),
    (parse_oom_score_adj_spec, ANNOTATION_OOM_SCORE_ADJ_SPEC, '{"app":-2000}'),
    (parse_oom_score_adj_spec, ANNOTATION_OOM_SCORE_ADJ_SPEC, '{"app":"100"}'),
    # reservation (reservation.go)
    (parse_reservation_affinity, ANNOTATION_RESERVATION_AFFINITY,
     '{"reservationSelector":{"a":1}}'),
    (parse_reservation_affinity, ANNOTATION_RESERVATION_AFFINITY, "{name: r}"),
    (parse_reservation_allocated, ANNOTATION_RESERVATION_ALLOCATED, '{"name":["r"]}'),
    (parse_reservation_restricted_options, ANNOTATION_RESERVATION_RESTRICTED_OPTIONS,
     '{"resources":"cpu"}'),
    (parse_exact_match_reservation_spec, ANNOTATION_EXACT_MATCH_RESERVATION_SPEC, "[1]"),
    (parse_reservation_owners, ANNOTATION_RESERVATION_OWNERS, '{"object":{}}'),
    (parse_reservation_current_owner, ANNOTATION_RESERVATION_CURRENT_OWNER, '"pod-a"'),
    (parse_pre_allocatable_priority, ANNOTATION_POD_PRE_ALLOCATABLE_PRIORITY, "high"),
    # gang (coscheduling.go)
    (parse_gang_min_num, ANNOTATION_GANG_MIN_NUM, "3.0"),
    (parse_gang_min_num, ANNOTATION_GANG_MIN_NUM, "0x10"),
    (parse_gang_total_num, ANNOTATION_GANG_TOTAL_NUM, "99999999999"),
    (parse_gang_wait_time, ANNOTATION_GANG_WAIT_TIME, "30"),
    (parse_gang_groups, ANNOTATION_GANG_GROUPS, '"ns/a,ns/b"'),
    (parse_pod_network_topology_index, ANNOTATION_GANG_POD_NETWORK_TOPOLOGY_INDEX, "first"),
    (parse_network_topology_spec, ANNOTATION_GANG_NETWORK_TOPOLOGY_SPEC,
     '{"gatherStrategy":[{"layer":1}]}'),
    # devices (device_share.go)
    (parse_device_allocations, ANNOTATION_DEVICE_ALLOCATED, '{"gpu":[{"minor":"1"}]}'),
    (parse_device_allocations, ANNOTATION_DEVICE_ALLOCATED, '{"gpu":{"minor":1}}'),
    (parse_device_allocations, ANNOTATION_DEVICE_ALLOCATED, '{"gpu":[{"minor":4294967296}]}'),
    (parse_device_allocate_hints, ANNOTATION_DEVICE_ALLOCATE_HINT,
     '{"gpu":{"selector":"a=b"}}'),
    (parse_device_joint_allocate, ANNOTATION_DEVICE_JOINT_ALLOCATE, '{"deviceTypes":"gpu"}'),
    (parse_gpu_partition_spec, ANNOTATION_GPU_PARTITION_SPEC, '{"ringBusBandwidth":"fast"}'),
    (parse_gpu_partition_table, ANNOTATION_GPU_PARTITIONS, "null"),
    (parse_gpu_partition_table, ANNOTATION_GPU_PARTITIONS, '{"two":[{"minors":[0,1]}]}'),
    (parse_gpu_partition_table, ANNOTATION_GPU_PARTITIONS, '{"2":[{"minors":[0,"1"]}]}'),
    # eviction (evict.go, eviction.go)
    (parse_eviction_cost, ANNOTATION_EVICTION_COST, "+10"),
    (parse_eviction_cost, ANNOTATION_EVICTION_COST, "008"),
    (parse_eviction_cost, ANNOTATION_EVICTION_COST, ""),
    (parse_eviction_cost, ANNOTATION_EVICTION_COST, "2147483648"),
    (parse_eviction_priority, ANNOTATION_POD_EVICTION_PRIORITY, "0x10"),
    (parse_eviction_policy, ANNOTATION_POD_EVICT_POLICY, "BECPUEvict"),
    (parse_soft_eviction, ANNOTATION_SOFT_EVICTION, '{"timestamp":"yesterday"}'),
    # load-aware (load_aware.go)
    (parse_custom_usage_thresholds, ANNOTATION_CUSTOM_USAGE_THRESHOLDS,
     '{"usageThresholds":{"cpu":"70%"}}'),
    (parse_custom_usage_thresholds, ANNOTATION_CUSTOM_USAGE_THRESHOLDS,
     '{"aggregatedUsage":{"usageAggregatedDuration":"5 minutes"}}'),
    (parse_estimated_scaling_factors, ANNOTATION_CUSTOM_ESTIMATED_SCALING_FACTORS,
     '{"cpu":0.8}'),
    (parse_estimated_seconds_after_pod_scheduled,
     ANNOTATION_CUSTOM_ESTIMATED_SECONDS_AFTER_POD_SCHEDULED, "1m"),
    # hints (multi_scheduler.go)
    (parse_scheduling_hint, ANNOTATION_SCHEDULING_HINT, '{"nodeNames":"node-1"}'),
    # node (node_colocation.go, node_reservation.go, system_qos.go, ...)
    (parse_node_colocation_strategy, ANNOTATION_NODE_COLOCATION_STRATEGY, '["enable"]'),
    (parse_node_reservation, ANNOTATION_NODE_RESERVATION, '{"resources":{"cpu":"1C"}}'),
    (parse_system_qos_resource, ANNOTATION_NODE_SYSTEM_QOS_RESOURCE,
     '{"cpuset":"0-1","cpusetExclusive":"false"}'),
    (parse_network_bandwidth, ANNOTATION_NODE_NETWORK_BANDWIDTH, "10Gbps"),
    (parse_cpu_normalization_ratio, ANNOTATION_CPU_NORMALIZATION_RATIO, "0"),
    (parse_cpu_normalization_ratio, ANNOTATION_CPU_NORMALIZATION_RATIO, "1,20"),
    (parse_resource_amplification_ratios, ANNOTATION_NODE_RESOURCE_AMPLIFICATION_RATIO,
     '{"cpu":"1.22"}'),
    (parse_resource_amplification_ratios, ANNOTATION_NODE_RESOURCE_AMPLIFICATION_RATIO,
     '{"cpu":1e999}'),
    (parse_raw_allocatable, ANNOTATION_NODE_RAW_ALLOCATABLE, '{"cpu":true}'),
    (parse_origin_extended_allocatable, ANNOTATION_NODE_ORIGIN_EXTENDED_ALLOCATABLE,
     '{"resources":["kubernetes.io/batch-cpu"]}'),
    (parse_third_party_allocations, ANNOTATION_NODE_THIRD_PARTY_ALLOCATIONS,
     '{"allocations":[{"name":"yarn","priority":5500}]}'),
    (parse_kubelet_cpu_manager_policy, ANNOTATION_KUBELET_CPU_MANAGER_POLICY,
     '{"policy":"static","options":{"full-pcpus-only":true}}'),
    # 2.8 NodeResourceTopology
    (parse_cpu_topology, ANNOTATION_NODE_CPU_TOPOLOGY, '{"detail":[{"id":-2147483649}]}'),
    (parse_pod_cpu_allocs, ANNOTATION_NODE_CPU_ALLOCS, '[{"managedByKubelet":1}]'),
    (parse_cpu_shared_pools, ANNOTATION_NODE_CPU_SHARED_POOLS, '{"socket":0}'),
    (parse_cpu_basic_info, ANNOTATION_CPU_BASIC_INFO, '{"hyperThreadEnabled":"true"}'),
    # 2.9 quota
    (parse_shared_weight, ANNOTATION_SHARED_WEIGHT, '{"cpu":"-"}'),
    (lambda m: parse_quota_resource_list(m, ANNOTATION_RUNTIME), ANNOTATION_RUNTIME, "{"),
    (parse_quota_namespaces, ANNOTATION_QUOTA_NAMESPACES, '["ns", 1]'),
]


def _case_id(case: tuple[Any, str, str]) -> str:
    return f"{case[1].rsplit('/', 1)[-1]}={case[2][:24]}"


@pytest.mark.parametrize(("parse", "key", "value"), CASES, ids=[_case_id(c) for c in CASES])
def test_malformed_value_raises_malformed_value_error(parse, key, value):
    try:
        parse({key: value})
    except MalformedValueError as exc:
        assert exc.key == key
        assert key in str(exc)
        assert exc.reason
    except Exception as exc:  # noqa: BLE001 - any other type is the failure under test
        pytest.fail(f"{key}={value!r} raised {type(exc).__name__}: {exc}")
    else:
        pytest.fail(f"{key}={value!r} was accepted")


@pytest.mark.parametrize(("parse", "key"), [
    (parse_resource_spec, ANNOTATION_RESOURCE_SPEC),
    (parse_eviction_cost, ANNOTATION_EVICTION_COST),
    (parse_oom_score_adj, ANNOTATION_OOM_SCORE_ADJ),
    (parse_network_bandwidth, ANNOTATION_NODE_NETWORK_BANDWIDTH),
    (parse_cpu_normalization_enabled, LABEL_CPU_NORMALIZATION_ENABLED),
])
def test_a_value_that_is_not_a_string_is_malformed_too(parse, key):
    with pytest.raises(MalformedValueError) as info:
        parse({key: 42})
    assert info.value.key == key


def test_the_table_is_large_and_covers_many_keys():
    assert len(CASES) >= 25
    assert len({key for _, key, _ in CASES}) >= 60
