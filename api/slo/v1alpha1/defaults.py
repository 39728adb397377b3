"""Upstream's default strategies for NodeSLO, as koordlet and koord-manager apply them.

Corresponds to upstream `pkg/util/sloconfig/nodeslo_config.go` (DefaultResourceQOSStrategy,
NoneResourceQOSStrategy, DefaultResourceThresholdStrategy, DefaultCPUBurstStrategy,
DefaultSystemStrategy, DefaultNodeSLOSpecConfig). They live next to the types rather than in
``pkg`` because both the manager (``api.configuration`` defaults for missing ConfigMap keys)
and koordlet (merging a NodeSLO onto its defaults) need them, and they are pure data.

Every call returns a fresh object, so callers may change it.
"""

from __future__ import annotations

from collections.abc import Mapping

from api.slo.v1alpha1.extensions import ExtensionsMap
from api.slo.v1alpha1.nodeslo import NodeSLOSpec
from api.slo.v1alpha1.resource_qos import (
    CPUQOS,
    BlkIOQOSCfg,
    CPUQOSPolicy,
    MemoryQOS,
    NetQOSPolicy,
    ResctrlQOS,
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

# QoS classes that have their own ResourceQOS in ResourceQOSStrategy.
QOS_CLASSES = ("LSR", "LS", "BE", "SYSTEM")

# Koordlet's per-class fallback values: upstream's DefaultCPUQOS, DefaultMemoryQOS, ... of
# nodeslo_config.go, per QoS class.
_DEFAULT_CPU_QOS = {
    "LSR": {"groupIdentity": 2, "schedIdle": 0, "coreExpeller": True},
    "LS": {"groupIdentity": 2, "schedIdle": 0, "coreExpeller": True},
    "BE": {"groupIdentity": -1, "schedIdle": 0, "coreExpeller": False},
    "SYSTEM": {"groupIdentity": 0, "schedIdle": 0, "coreExpeller": False},
}
_MEMORY_QOS_COMMON = {"minLimitPercent": 0, "lowLimitPercent": 0, "throttlingPercent": 0}
_MEMORY_QOS_TAIL = {"priorityEnable": 0, "priority": 0, "oomKillGroup": 0}
_DEFAULT_MEMORY_QOS = {
    "LSR": {**_MEMORY_QOS_COMMON, "wmarkRatio": 95, "wmarkScalePermill": 20, "wmarkMinAdj": -25,
            **_MEMORY_QOS_TAIL},
    "LS": {**_MEMORY_QOS_COMMON, "wmarkRatio": 95, "wmarkScalePermill": 20, "wmarkMinAdj": -25,
           **_MEMORY_QOS_TAIL},
    "BE": {**_MEMORY_QOS_COMMON, "wmarkRatio": 95, "wmarkScalePermill": 20, "wmarkMinAdj": 50,
           **_MEMORY_QOS_TAIL},
    "SYSTEM": {**_MEMORY_QOS_COMMON, "wmarkRatio": 0, "wmarkScalePermill": 50, "wmarkMinAdj": 0,
               **_MEMORY_QOS_TAIL},
}
_DEFAULT_RESCTRL_QOS = {
    "LSR": {"catRangeStartPercent": 0, "catRangeEndPercent": 100, "mbaPercent": 100},
    "LS": {"catRangeStartPercent": 0, "catRangeEndPercent": 100, "mbaPercent": 100},
    "BE": {"catRangeStartPercent": 0, "catRangeEndPercent": 30, "mbaPercent": 100},
    "SYSTEM": {"catRangeStartPercent": 0, "catRangeEndPercent": 100, "mbaPercent": 100},
}

# The "none" (disabled) values.
_NONE_CPU_QOS = {"groupIdentity": 0, "schedIdle": 0, "coreExpeller": False}
_NONE_MEMORY_QOS = {**_MEMORY_QOS_COMMON, "wmarkRatio": 0, "wmarkScalePermill": 50,
                    "wmarkMinAdj": 0, **_MEMORY_QOS_TAIL}
_NONE_RESCTRL_QOS = {"catRangeStartPercent": 0, "catRangeEndPercent": 100, "mbaPercent": 100}
_NONE_NETWORK_QOS = {"ingressRequest": 0, "ingressLimit": 0, "egressRequest": 0,
                     "egressLimit": 0}


def _check_class(qos_class: str) -> str:
    if qos_class not in QOS_CLASSES:
        raise ValueError(f"no default QoS settings for class {qos_class!r}; "
                         f"known: {', '.join(QOS_CLASSES)}")
    return qos_class


def default_cpu_qos(qos_class: str) -> CPUQOS:
    """Recommended CPU QoS of ``LSR``, ``LS``, ``BE`` or ``SYSTEM``."""
    return CPUQOS.model_validate(_DEFAULT_CPU_QOS[_check_class(qos_class)])


def default_memory_qos(qos_class: str) -> MemoryQOS:
    """Recommended memory QoS: memcg protection off, async reclaim and wmark grading on."""
    return MemoryQOS.model_validate(_DEFAULT_MEMORY_QOS[_check_class(qos_class)])


def default_resctrl_qos(qos_class: str) -> ResctrlQOS:
    """Recommended LLC/MBA split: BE gets the lower 30% of the LLC ways."""
    return ResctrlQOS.model_validate(_DEFAULT_RESCTRL_QOS[_check_class(qos_class)])


def default_resource_qos_policies() -> ResourceQOSPolicies:
    return ResourceQOSPolicies(cpu_policy=CPUQOSPolicy.GROUP_IDENTITY.value,
                               net_qos_policy=NetQOSPolicy.TC.value)


def _class_qos(cpu: Mapping[str, object], memory: Mapping[str, object],
               resctrl: Mapping[str, object]) -> ResourceQOS:
    return ResourceQOS.model_validate({
        "cpuQOS": {"enable": False, **cpu},
        "memoryQOS": {"enable": False, **memory},
        "blkioQOS": {"enable": False},
        "resctrlQOS": {"enable": False, **resctrl},
        "networkQOS": {"enable": False, **_NONE_NETWORK_QOS},
    })


def _cgroup_root_qos() -> ResourceQOS:
    # The root cgroup only takes blkio settings.
    return ResourceQOS(blkio_qos=BlkIOQOSCfg(enable=False))


def default_resource_qos(qos_class: str) -> ResourceQOS:
    """Koordlet's fallback settings of one class, every mechanism disabled (``enable: false``)."""
    name = _check_class(qos_class)
    return _class_qos(_DEFAULT_CPU_QOS[name], _DEFAULT_MEMORY_QOS[name],
                      _DEFAULT_RESCTRL_QOS[name])


def default_resource_qos_strategy() -> ResourceQOSStrategy:
    """Koordlet's fallback ResourceQOSStrategy, onto which the NodeSLO's strategy is merged.

    Note that koord-manager does not fill these into NodeSLO: its default for
    resource-qos-config is an empty strategy.
    """
    return ResourceQOSStrategy(
        policies=default_resource_qos_policies(),
        lsr_class=default_resource_qos("LSR"),
        ls_class=default_resource_qos("LS"),
        be_class=default_resource_qos("BE"),
        system_class=default_resource_qos("SYSTEM"),
        cgroup_root=_cgroup_root_qos(),
    )


def none_memory_qos() -> MemoryQOS:
    """The memory QoS of a disabled class or a pod with policy ``none`` (upstream
    ``NoneMemoryQOS``): no protection, no throttling, no async reclaim."""
    return MemoryQOS.model_validate(_NONE_MEMORY_QOS)


def none_resource_qos(qos_class: str) -> ResourceQOS:
    """The all-disabled settings of a class; ``""`` (no class) gives the cgroup-root form."""
    if qos_class == "":
        return _cgroup_root_qos()
    _check_class(qos_class)
    return _class_qos(_NONE_CPU_QOS, _NONE_MEMORY_QOS, _NONE_RESCTRL_QOS)


def none_resource_qos_strategy() -> ResourceQOSStrategy:
    """A ResourceQOSStrategy with every mechanism of every class disabled and reset."""
    return ResourceQOSStrategy(
        policies=default_resource_qos_policies(),
        lsr_class=none_resource_qos("LSR"),
        ls_class=none_resource_qos("LS"),
        be_class=none_resource_qos("BE"),
        system_class=none_resource_qos("SYSTEM"),
        cgroup_root=none_resource_qos(""),
    )


def default_resource_threshold_strategy() -> ResourceThresholdStrategy:
    """Thresholds off; suppress at 65% CPU (cpuset), evict BE at 70% memory."""
    return ResourceThresholdStrategy(
        enable=False,
        cpu_suppress_threshold_percent=65,
        cpu_suppress_policy=CPUSuppressPolicy.CPUSET.value,
        memory_evict_threshold_percent=70,
        cpu_evict_policy=CPUEvictPolicy.EVICT_BY_REAL_LIMIT.value,
    )


def default_cpu_burst_config() -> CPUBurstConfig:
    return CPUBurstConfig(
        policy=CPUBurstPolicy.NONE.value,
        cpu_burst_percent=1000,
        cfs_quota_burst_percent=300,
        cfs_quota_burst_period_seconds=-1,
    )


def default_cpu_burst_strategy() -> CPUBurstStrategy:
    """Burst off (policy ``none``), 1000% burst, 300% quota ceiling for unlimited time, 50%."""
    return CPUBurstStrategy(
        policy=CPUBurstPolicy.NONE.value,
        cpu_burst_percent=1000,
        cfs_quota_burst_percent=300,
        cfs_quota_burst_period_seconds=-1,
        share_pool_threshold_percent=50,
    )


def default_system_strategy() -> SystemStrategy:
    """No kernel knobs set; total network bandwidth ``"0"`` (unknown)."""
    return SystemStrategy(total_network_bandwidth="0")


def default_node_slo_spec(extensions: ExtensionsMap | None = None) -> NodeSLOSpec:
    """Koordlet's default NodeSLO spec: every default strategy, plus registered extensions."""
    return NodeSLOSpec(
        resource_used_threshold_with_be=default_resource_threshold_strategy(),
        resource_qos_strategy=default_resource_qos_strategy(),
        cpu_burst_strategy=default_cpu_burst_strategy(),
        system_strategy=default_system_strategy(),
        extensions=extensions.model_copy(deep=True) if extensions is not None
        else ExtensionsMap(),
    )


__all__ = [
    "QOS_CLASSES", "default_cpu_burst_config", "default_cpu_burst_strategy", "default_cpu_qos",
    "default_memory_qos", "default_node_slo_spec", "default_resctrl_qos", "default_resource_qos",
    "default_resource_qos_policies", "default_resource_qos_strategy",
    "default_resource_threshold_strategy", "default_system_strategy", "none_resource_qos",
    "none_resource_qos_strategy",
]
