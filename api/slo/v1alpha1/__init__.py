"""``slo.koordinator.sh/v1alpha1`` (upstream `apis/slo/v1alpha1`): NodeMetric and NodeSLO.

Modules: ``nodemetric`` (NodeMetric and its status types), ``nodeslo`` (NodeSLO),
``resource_qos`` (ResourceQOSStrategy and the per-class QoS types), ``strategies`` (threshold,
CPU burst and system strategies), ``host_application`` (HostApplicationSpec), ``extensions``
(ExtensionsMap) and ``defaults`` (upstream's default strategies).
"""

from api.slo.v1alpha1.defaults import (
    default_cpu_burst_config,
    default_cpu_burst_strategy,
    default_node_slo_spec,
    default_resource_qos_strategy,
    default_resource_threshold_strategy,
    default_system_strategy,
    none_resource_qos_strategy,
)
from api.slo.v1alpha1.extensions import ExtensionsMap
from api.slo.v1alpha1.host_application import (
    CgroupBaseType,
    CgroupPath,
    HostApplicationSpec,
    HostApplicationStrategy,
)
from api.slo.v1alpha1.nodemetric import (
    AggregatedUsage,
    AggregatePolicy,
    AggregationType,
    HostApplicationMetricInfo,
    MemoryCollectPolicy,
    NodeMetric,
    NodeMetricCollectPolicy,
    NodeMetricInfo,
    NodeMetricSpec,
    NodeMetricStatus,
    NUMAUsage,
    PodMetricInfo,
    ReclaimableMetric,
    ResourceMap,
)
from api.slo.v1alpha1.nodeslo import GROUP, VERSION, NodeSLO, NodeSLOSpec, NodeSLOStatus
from api.slo.v1alpha1.resource_qos import (
    CPUQOS,
    BlkIOQOS,
    BlkIOQOSCfg,
    BlockCfg,
    BlockType,
    CPUQOSCfg,
    CPUQOSPolicy,
    IOCfg,
    MemoryQOS,
    MemoryQOSCfg,
    NetQOSPolicy,
    NetworkQOS,
    NetworkQOSCfg,
    ResctrlQOS,
    ResctrlQOSCfg,
    ResourceQOS,
    ResourceQOSPolicies,
    ResourceQOSStrategy,
)
from api.slo.v1alpha1.strategies import (
    CPUBurstConfig,
    CPUBurstPolicy,
    CPUBurstStrategy,
    CPUEvictPolicy,
    CPUSuppressPolicy,
    ResourceThresholdStrategy,
    SystemStrategy,
)

__all__ = [
    "CPUQOS", "GROUP", "VERSION", "AggregatePolicy", "AggregatedUsage", "AggregationType",
    "BlkIOQOS", "BlkIOQOSCfg", "BlockCfg", "BlockType", "CPUBurstConfig", "CPUBurstPolicy",
    "CPUBurstStrategy", "CPUEvictPolicy", "CPUQOSCfg", "CPUQOSPolicy", "CPUSuppressPolicy",
    "CgroupBaseType", "CgroupPath", "ExtensionsMap", "HostApplicationMetricInfo",
    "HostApplicationSpec", "HostApplicationStrategy", "IOCfg", "MemoryCollectPolicy", "MemoryQOS",
    "MemoryQOSCfg", "NUMAUsage", "NetQOSPolicy", "NetworkQOS", "NetworkQOSCfg", "NodeMetric",
    "NodeMetricCollectPolicy", "NodeMetricInfo", "NodeMetricSpec", "NodeMetricStatus", "NodeSLO",
    "NodeSLOSpec", "NodeSLOStatus", "PodMetricInfo", "ReclaimableMetric", "ResctrlQOS",
    "ResctrlQOSCfg", "ResourceMap", "ResourceQOS", "ResourceQOSPolicies", "ResourceQOSStrategy",
    "ResourceThresholdStrategy", "SystemStrategy", "default_cpu_burst_config",
    "default_cpu_burst_strategy", "default_node_slo_spec", "default_resource_qos_strategy",
    "default_resource_threshold_strategy", "default_system_strategy",
    "none_resource_qos_strategy",
]
