"""koordlet's gates, runtime-hook gates included (they share koordlet's ``--feature-gates``).

Corresponds to upstream ``pkg/features/koordlet_features.go`` and the runtime-hook gates of
``pkg/koordlet/runtimehooks/config.go``, with their names and defaults: all Alpha and off,
except a few Beta gates that are on.
"""

from __future__ import annotations

from pkg.features.featuregate import ALPHA, BETA, FeatureSpec

BE_CPU_SUPPRESS = "BECPUSuppress"
CPU_BURST = "CPUBurst"
RDT_RESCTRL = "RdtResctrl"
NODE_TOPOLOGY_REPORT = "NodeTopologyReport"
GROUP_IDENTITY = "GroupIdentity"
CPU_SET_ALLOCATOR = "CPUSetAllocator"
BATCH_RESOURCE = "BatchResource"
ACCELERATORS = "Accelerators"
BLKIO_RECONCILE = "BlkIOReconcile"
CGROUP_RECONCILE = "CgroupReconcile"
SYSTEM_CONFIG = "SystemConfig"
AUDIT_EVENTS = "AuditEvents"
AUDIT_EVENTS_HTTP_HANDLER = "AuditEventsHTTPHandler"
CPI_COLLECTOR = "CPICollector"
PSI_COLLECTOR = "PSICollector"
NODE_METRIC_PROM_METRICS = "NodeMetricPromMetrics"
CORE_SCHED = "CoreSched"

_BETA_ON = (BE_CPU_SUPPRESS, CPU_BURST, RDT_RESCTRL, NODE_TOPOLOGY_REPORT, GROUP_IDENTITY,
            CPU_SET_ALLOCATOR, BATCH_RESOURCE)
_ALPHA_OFF = (
    AUDIT_EVENTS, AUDIT_EVENTS_HTTP_HANDLER, "BECPUManager", "BECPUEvict", "CPUEvict",
    "CPUAllocatableEvict", "BEMemoryEvict", "MemoryEvict", "MemoryAllocatableEvict",
    SYSTEM_CONFIG, CGROUP_RECONCILE, BLKIO_RECONCILE, ACCELERATORS, "RDMADevices",
    CPI_COLLECTOR, "Libpfm4", PSI_COLLECTOR, "ResctrlCollector", "ColdPageCollector",
    "HugePageReport", "PodResourcesProxy", "HamiCoreVGPUMonitor", "PerCPUMetric",
    NODE_METRIC_PROM_METRICS,
    # runtime hooks
    "GPUEnvInject", "RDMADeviceInject", "CPUNormalization", CORE_SCHED, "TerwayQoS",
    "TCNetworkQoS", "Resctrl", "OOMScoreAdj",
)

KOORDLET_FEATURE_GATES: dict[str, FeatureSpec] = {
    **{name: FeatureSpec(True, BETA) for name in _BETA_ON},
    **{name: FeatureSpec(False, ALPHA) for name in _ALPHA_OFF},
}
