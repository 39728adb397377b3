"""Metric kinds and their property schemas (upstream ``pkg/koordlet/metriccache/metric_types.go``).

A sample must carry exactly the property set of its kind (missing or extra → ``ValueError``),
so a typo in a collector fails loudly instead of creating a series no consumer queries.
"""

from __future__ import annotations

from collections.abc import Mapping

# Property names (upstream MetricProperty*).
POD_UID = "pod_uid"
CONTAINER_ID = "container_id"
NUMA_NODE_ID = "numa_node_id"
PSI_RESOURCE = "psi_resource"
PSI_PRECISION = "psi_precision"
PSI_DEGREE = "psi_degree"
BE_RESOURCE = "be_resource"
BE_ALLOCATION = "be_allocation"
HOST_APP_NAME = "host_app_name"

_NONE: frozenset[str] = frozenset()
_POD = frozenset({POD_UID})
_CONTAINER = frozenset({CONTAINER_ID})
_PSI = frozenset({POD_UID, PSI_RESOURCE, PSI_PRECISION, PSI_DEGREE})

NODE_CPU_USAGE = "node_cpu_usage"
NODE_MEMORY_USAGE = "node_memory_usage"
NODE_MEMORY_USAGE_WITH_PAGE_CACHE = "node_memory_usage_with_page_cache"
NODE_NUMA_CPU_USAGE = "node_numa_cpu_usage"
NODE_NUMA_MEMORY_USAGE = "node_numa_memory_usage"
SYS_CPU_USAGE = "sys_cpu_usage"
SYS_MEMORY_USAGE = "sys_memory_usage"
NODE_BE = "node_be"
POD_CPU_USAGE = "pod_cpu_usage"
POD_MEMORY_USAGE = "pod_memory_usage"
POD_MEMORY_USAGE_WITH_PAGE_CACHE = "pod_memory_usage_with_page_cache"
POD_CPU_THROTTLED = "pod_cpu_throttled"
CONTAINER_CPU_USAGE = "container_cpu_usage"
CONTAINER_MEMORY_USAGE = "container_memory_usage"
CONTAINER_MEMORY_USAGE_WITH_PAGE_CACHE = "container_memory_usage_with_page_cache"
CONTAINER_CPU_THROTTLED = "container_cpu_throttled"
POD_PSI = "pod_psi"
CONTAINER_PSI = "container_psi"
POD_PSI_CPU_FULL_SUPPORTED = "pod_psi_cpu_full_supported"
CONTAINER_PSI_CPU_FULL_SUPPORTED = "container_psi_cpu_full_supported"
HOST_APPLICATION_CPU_USAGE = "host_application_cpu_usage"
HOST_APPLICATION_MEMORY_USAGE = "host_application_memory_usage"
HOST_APPLICATION_MEMORY_USAGE_WITH_PAGE_CACHE = "host_application_memory_usage_with_page_cache"

SCHEMAS: Mapping[str, frozenset[str]] = {
    NODE_CPU_USAGE: _NONE,
    NODE_MEMORY_USAGE: _NONE,
    NODE_MEMORY_USAGE_WITH_PAGE_CACHE: _NONE,
    NODE_NUMA_CPU_USAGE: frozenset({NUMA_NODE_ID}),
    NODE_NUMA_MEMORY_USAGE: frozenset({NUMA_NODE_ID}),
    SYS_CPU_USAGE: _NONE,
    SYS_MEMORY_USAGE: _NONE,
    NODE_BE: frozenset({BE_RESOURCE, BE_ALLOCATION}),
    POD_CPU_USAGE: _POD,
    POD_MEMORY_USAGE: _POD,
    POD_MEMORY_USAGE_WITH_PAGE_CACHE: _POD,
    POD_CPU_THROTTLED: _POD,
    POD_PSI_CPU_FULL_SUPPORTED: _POD,
    CONTAINER_CPU_USAGE: _CONTAINER,
    CONTAINER_MEMORY_USAGE: _CONTAINER,
    CONTAINER_MEMORY_USAGE_WITH_PAGE_CACHE: _CONTAINER,
    CONTAINER_CPU_THROTTLED: _CONTAINER,
    POD_PSI: _PSI,
    CONTAINER_PSI: _PSI | {CONTAINER_ID},
    CONTAINER_PSI_CPU_FULL_SUPPORTED: frozenset({POD_UID, CONTAINER_ID}),
    HOST_APPLICATION_CPU_USAGE: frozenset({HOST_APP_NAME}),
    HOST_APPLICATION_MEMORY_USAGE: frozenset({HOST_APP_NAME}),
    HOST_APPLICATION_MEMORY_USAGE_WITH_PAGE_CACHE: frozenset({HOST_APP_NAME}),
}

# KV keys (upstream NodeCPUInfoKey, NodeNUMAInfoKey).
NODE_CPU_INFO_KEY = "node_cpu_info"
NODE_NUMA_INFO_KEY = "node_numa_info"


def validate(kind: str, properties: Mapping[str, str]) -> None:
    schema = SCHEMAS.get(kind)
    if schema is None:
        raise ValueError(f"unknown metric kind {kind!r}")
    if schema != properties.keys():
        raise ValueError(
            f"metric {kind!r} needs properties {sorted(schema)}, got {sorted(properties)}"
        )
