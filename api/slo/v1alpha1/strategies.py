"""Node strategies of NodeSLO other than resource QoS: thresholds, CPU burst, system knobs.

Corresponds to ResourceThresholdStrategy, CPUBurstConfig, CPUBurstStrategy and SystemStrategy
in upstream `apis/slo/v1alpha1/nodeslo_types.go`. They are also the ``clusterStrategy`` shapes
of slo-controller-config (and CPUBurstConfig the body of the pod annotation
``koordinator.sh/cpuBurst``), so they decode like Go does: keys match case-insensitively and
unknown keys are ignored. Ranges are those of the CRD; the stricter rules of upstream's
validating webhook are not model constraints.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from annotated_types import Ge, Le
from pydantic import Field

from api.base import GoJSONModel, Int32, Int64
from api.core import Quantity

Percent = Annotated[Int64, Ge(0), Le(100)]
NonNegative = Annotated[Int64, Ge(0)]


class CPUSuppressPolicy(StrEnum):
    """How BE pods are squeezed when the node is busy."""

    CPUSET = "cpuset"
    CFS_QUOTA = "cfsQuota"


class CPUEvictPolicy(StrEnum):
    """How BE CPU satisfaction is computed for CPU eviction."""

    EVICT_BY_REAL_LIMIT = "evictByRealLimit"
    EVICT_BY_ALLOCATABLE = "evictByAllocatable"


class CPUBurstPolicy(StrEnum):
    """Which CPU burst mechanisms are on."""

    NONE = "none"
    CPU_BURST_ONLY = "cpuBurstOnly"  # cpu.cfs_burst_us / cpu.max.burst
    CFS_QUOTA_BURST_ONLY = "cfsQuotaBurstOnly"  # scale cfs quota up while throttled
    AUTO = "auto"  # both


class ResourceThresholdStrategy(GoJSONModel):
    """Suppression and eviction thresholds (``NodeSLO.spec.resourceUsedThresholdWithBE``)."""

    enable: bool | None = None
    # Node CPU usage ceiling (%) used to squeeze BE pods, and the floor of the BE share.
    cpu_suppress_threshold_percent: Percent | None = None
    cpu_suppress_min_percent: Percent | None = None
    cpu_suppress_policy: str | None = None
    # Node memory usage (%) that starts BE eviction and the level where it stops.
    memory_evict_threshold_percent: Percent | None = None
    memory_evict_lower_percent: Percent | None = None
    # Request-based memory eviction, in % of allocatable requested.
    memory_allocatable_evict_threshold_percent: NonNegative | None = None
    memory_allocatable_evict_lower_percent: NonNegative | None = None
    # BE CPU satisfaction (real limit / request) bounds and usage for BE CPU eviction.
    cpu_evict_be_satisfaction_upper_percent: Int64 | None = Field(
        None, alias="cpuEvictBESatisfactionUpperPercent"
    )
    cpu_evict_be_satisfaction_lower_percent: Int64 | None = Field(
        None, alias="cpuEvictBESatisfactionLowerPercent"
    )
    cpu_evict_be_usage_threshold_percent: Int64 | None = Field(
        None, alias="cpuEvictBEUsageThresholdPercent"
    )
    cpu_evict_time_window_seconds: Int64 | None = None
    # Node CPU usage (%) that starts and stops CPUEvict.
    cpu_evict_threshold_percent: Percent | None = None
    cpu_evict_lower_percent: Percent | None = None
    # Request-based CPU eviction, in % of allocatable requested.
    cpu_allocatable_evict_threshold_percent: NonNegative | None = None
    cpu_allocatable_evict_lower_percent: NonNegative | None = None
    cpu_evict_policy: str | None = None
    # Only pods whose priority value is at most this are eviction candidates.
    evict_enabled_priority_threshold: Int32 | None = None
    allocatable_evict_priority_threshold: Int32 | None = None


class CPUBurstConfig(GoJSONModel):
    """CPU burst settings (also the body of pod annotation ``koordinator.sh/cpuBurst``)."""

    policy: str | None = None
    # cpu.cfs_burst_us as % of the CPU limit.
    cpu_burst_percent: Annotated[Int64, Ge(0), Le(10000)] | None = None
    # Ceiling (%) for scaling cfs quota up while throttled, and for how long (-1: unlimited).
    cfs_quota_burst_percent: Int64 | None = None
    cfs_quota_burst_period_seconds: Int64 | None = None


class CPUBurstStrategy(CPUBurstConfig):
    """Node CPU burst strategy: CPUBurstConfig plus the share-pool threshold."""

    # Node CPU usage (%) above which scaled-up quotas are scaled back down.
    share_pool_threshold_percent: Int64 | None = None


class SystemStrategy(GoJSONModel):
    """Node kernel knobs (``NodeSLO.spec.systemStrategy``)."""

    # vm.min_free_kbytes = factor × total memory / 10000.
    min_free_kbytes_factor: Int64 | None = None
    # vm.watermark_scale_factor.
    watermark_scale_factor: Int64 | None = None
    # /sys/kernel/mm/memcg_reaper/reap_background.
    memcg_reap_back_ground: Int64 | None = None
    # /sys/kernel/sched_group_identity_enabled.
    sched_group_identity_enabled: Int64 | None = None
    # /proc/sys/kernel/sched_idle_saver_wmark (ns).
    sched_idle_saver_wmark: Int64 | None = None
    # /sys/kernel/sched_features entries.
    sched_features: dict[str, bool] | None = None
    # /sys/kernel/mm/pagecache_limit/enabled.
    page_cache_limit_enabled: Int64 | None = None
    # Node NIC bandwidth in bits/s. A struct in Go, so always written ("0" when unset);
    # the node annotation node.koordinator.sh/network-bandwidth overrides it.
    total_network_bandwidth: Quantity = "0"


__all__ = [
    "CPUBurstConfig", "CPUBurstPolicy", "CPUBurstStrategy", "CPUEvictPolicy", "CPUSuppressPolicy",
    "ResourceThresholdStrategy", "SystemStrategy",
]
