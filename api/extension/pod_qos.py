"""Pod-level QoS overrides read by koordlet: CPU burst, CPU/memory/blkio/network QoS, OOM score
and Linux core scheduling.

Corresponds to upstream `apis/slo/v1alpha1/pod.go` and the ``networkQOS``/``oom-score-adj``
keys of `apis/extension/constants.go`. The payloads share their shapes
with NodeSLO strategy types (``api.slo.v1alpha1``) but are kept here, small and separate, since
they are annotation payloads (case-insensitive keys, Go output). A missing annotation is None.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated

from pydantic import Field, TypeAdapter

from api.errors import MalformedValueError
from api.extension.codec import decode_model, decode_value, parse_int_value
from api.extension.constants import DOMAIN_PREFIX
from api.extension.objects import KubeDict, labels_of
from api.extension.payload import (
    ALWAYS,
    SORTED,
    GoInt64,
    GoPayload,
    GoQuantity,
    OptBool,
    OptInt64,
    dump_json,
)

ANNOTATION_POD_CPU_BURST = DOMAIN_PREFIX + "cpuBurst"
ANNOTATION_POD_CPU_QOS = DOMAIN_PREFIX + "cpuQOS"
ANNOTATION_POD_MEMORY_QOS = DOMAIN_PREFIX + "memoryQOS"
ANNOTATION_POD_BLKIO_QOS = DOMAIN_PREFIX + "blkioQOS"
ANNOTATION_NETWORK_QOS = DOMAIN_PREFIX + "networkQOS"
ANNOTATION_OOM_SCORE_ADJ = DOMAIN_PREFIX + "oom-score-adj"
ANNOTATION_OOM_SCORE_ADJ_SPEC = DOMAIN_PREFIX + "oom-score-adj-spec"
LABEL_CORE_SCHED_GROUP_ID = DOMAIN_PREFIX + "core-sched-group-id"
LABEL_CORE_SCHED_POLICY = DOMAIN_PREFIX + "core-sched-policy"

OOM_SCORE_ADJ_MIN, OOM_SCORE_ADJ_MAX = -1000, 1000
GROUP_IDENTITY_MIN, GROUP_IDENTITY_MAX = -1, 2


def _raw(annotations: Mapping[str, str] | None, key: str) -> str | None:
    return (annotations or {}).get(key)


# --- koordinator.sh/cpuBurst -----------------------------------------------------------------


class CPUBurstPolicy(StrEnum):
    NONE = "none"
    CPU_BURST_ONLY = "cpuBurstOnly"
    CFS_QUOTA_BURST_ONLY = "cfsQuotaBurstOnly"
    AUTO = "auto"


class PodCPUBurstConfig(GoPayload):
    """CPUBurstConfig: which burst mechanisms are on and their limits."""

    policy: str = ""
    cpu_burst_percent: OptInt64 = Field(None, alias="cpuBurstPercent")
    cfs_quota_burst_percent: OptInt64 = Field(None, alias="cfsQuotaBurstPercent")
    cfs_quota_burst_period_seconds: OptInt64 = Field(None, alias="cfsQuotaBurstPeriodSeconds")


def parse_pod_cpu_burst(annotations: Mapping[str, str] | None) -> PodCPUBurstConfig | None:
    raw = _raw(annotations, ANNOTATION_POD_CPU_BURST)
    return None if raw is None else decode_model(ANNOTATION_POD_CPU_BURST, raw, PodCPUBurstConfig)


# --- koordinator.sh/cpuQOS -------------------------------------------------------------------


class PodCPUQOSConfig(GoPayload):
    """CPUQOSCfg: ``enable`` plus the CPUQOS fields."""

    enable: OptBool = None
    group_identity: OptInt64 = None
    sched_idle: OptInt64 = None
    core_expeller: OptBool = None


def parse_pod_cpu_qos(annotations: Mapping[str, str] | None) -> PodCPUQOSConfig | None:
    """The pod's CPU QoS; ``groupIdentity`` outside -1..2 raises MalformedValueError."""
    raw = _raw(annotations, ANNOTATION_POD_CPU_QOS)
    if raw is None:
        return None
    config = decode_model(ANNOTATION_POD_CPU_QOS, raw, PodCPUQOSConfig)
    bvt = config.group_identity
    if bvt is not None and not GROUP_IDENTITY_MIN <= bvt <= GROUP_IDENTITY_MAX:
        raise MalformedValueError(ANNOTATION_POD_CPU_QOS,
                                  f"groupIdentity: {bvt} is outside -1..2")
    return config


# --- koordinator.sh/memoryQOS ----------------------------------------------------------------


class PodMemoryQOSPolicy(StrEnum):
    DEFAULT = "default"  # inherit the node-level config
    NONE = "none"  # memory QoS off for the pod
    AUTO = "auto"  # the recommended config


class PodMemoryQOSConfig(GoPayload):
    """``policy`` plus the MemoryQOS fields."""

    policy: str = ""
    min_limit_percent: OptInt64 = None
    low_limit_percent: OptInt64 = None
    throttling_percent: OptInt64 = None
    wmark_ratio: OptInt64 = None
    wmark_scale_permill: OptInt64 = None
    wmark_min_adj: OptInt64 = None
    priority_enable: OptInt64 = None
    priority: OptInt64 = None
    oom_kill_group: OptInt64 = None
    page_cache_enable: OptBool = None
    page_cache_limit_percent: OptInt64 = None
    page_cache_limit_size: OptInt64 = None
    page_cache_reclaim_sync: OptBool = None


def parse_pod_memory_qos(annotations: Mapping[str, str] | None) -> PodMemoryQOSConfig | None:
    raw = _raw(annotations, ANNOTATION_POD_MEMORY_QOS)
    return None if raw is None else decode_model(
        ANNOTATION_POD_MEMORY_QOS, raw, PodMemoryQOSConfig)


# --- koordinator.sh/blkioQOS -----------------------------------------------------------------


class BlockType(StrEnum):
    DEVICE = "device"  # e.g. /dev/sdb; only under cgroupRoot
    VOLUME_GROUP = "volumegroup"  # LVM volume group
    POD_VOLUME = "podvolume"


class IOConfig(GoPayload):
    """IOCfg: throttles, weight and the blk-iocost model (all optional)."""

    read_iops: OptInt64 = Field(None, alias="readIOPS")
    write_iops: OptInt64 = Field(None, alias="writeIOPS")
    read_bps: OptInt64 = Field(None, alias="readBPS")
    write_bps: OptInt64 = Field(None, alias="writeBPS")
    io_weight_percent: OptInt64 = Field(None, alias="ioWeightPercent")
    read_latency: OptInt64 = None
    write_latency: OptInt64 = None
    read_latency_percent: OptInt64 = None
    write_latency_percent: OptInt64 = None
    enable_user_model: OptBool = None
    model_read_bps: OptInt64 = Field(None, alias="modelReadBPS")
    model_write_bps: OptInt64 = Field(None, alias="modelWriteBPS")
    model_read_seq_iops: OptInt64 = Field(None, alias="modelReadSeqIOPS")
    model_write_seq_iops: OptInt64 = Field(None, alias="modelWriteSeqIOPS")
    model_read_rand_iops: OptInt64 = Field(None, alias="modelReadRandIOPS")
    model_write_rand_iops: OptInt64 = Field(None, alias="modelWriteRandIOPS")


class BlockConfig(GoPayload):
    """BlockCfg: one block device, volume group or pod volume (``ioCfg`` always written)."""

    name: str = ""
    type: str = ""
    io_cfg: IOConfig = Field(default_factory=IOConfig, alias="ioCfg")


class PodBlkIOQOS(GoPayload):
    blocks: list[BlockConfig] | None = None


def parse_pod_blkio_qos(annotations: Mapping[str, str] | None) -> PodBlkIOQOS | None:
    raw = _raw(annotations, ANNOTATION_POD_BLKIO_QOS)
    return None if raw is None else decode_model(ANNOTATION_POD_BLKIO_QOS, raw, PodBlkIOQOS)


# --- koordinator.sh/networkQOS ---------------------------------------------------------------


class PodNetworkQOS(GoPayload):
    """Pod bandwidth limits in bits/s (``"10M"`` = 10 Mbit/s); both always written."""

    ingress_limit: Annotated[GoQuantity, ALWAYS] = "0"
    egress_limit: Annotated[GoQuantity, ALWAYS] = "0"


def parse_pod_network_qos(annotations: Mapping[str, str] | None) -> PodNetworkQOS | None:
    """None when missing or empty."""
    raw = _raw(annotations, ANNOTATION_NETWORK_QOS)
    return decode_model(ANNOTATION_NETWORK_QOS, raw, PodNetworkQOS) if raw else None


# --- koordinator.sh/oom-score-adj(-spec) -----------------------------------------------------

_OOM_SPEC = TypeAdapter(Annotated[dict[str, GoInt64], SORTED])


def _check_oom_score_adj(key: str, value: int, where: str = "") -> int:
    if not OOM_SCORE_ADJ_MIN <= value <= OOM_SCORE_ADJ_MAX:
        raise MalformedValueError(key, f"{where}{value} is outside [-1000, 1000]")
    return value


def parse_oom_score_adj(annotations: Mapping[str, str] | None) -> int | None:
    """The pod's default ``oom_score_adj`` (int64 in [-1000, 1000]); None when missing."""
    raw = _raw(annotations, ANNOTATION_OOM_SCORE_ADJ)
    if raw is None:
        return None
    value = parse_int_value(ANNOTATION_OOM_SCORE_ADJ, raw)
    return _check_oom_score_adj(ANNOTATION_OOM_SCORE_ADJ, value)


def parse_oom_score_adj_spec(annotations: Mapping[str, str] | None) -> dict[str, int] | None:
    """Container name → ``oom_score_adj`` (each in [-1000, 1000]); None when missing."""
    raw = _raw(annotations, ANNOTATION_OOM_SCORE_ADJ_SPEC)
    if raw is None:
        return None
    spec = decode_value(ANNOTATION_OOM_SCORE_ADJ_SPEC, raw, _OOM_SPEC) or {}
    for container, value in spec.items():
        _check_oom_score_adj(ANNOTATION_OOM_SCORE_ADJ_SPEC, value, f"{container}: ")
    return spec


def format_oom_score_adj_spec(spec: Mapping[str, int]) -> str:
    return dump_json(_OOM_SPEC, dict(spec))


# --- Linux core scheduling -------------------------------------------------------------------


class CoreSchedPolicy(StrEnum):
    DEFAULT = ""  # group by the group-id label when the node enables core sched
    NONE = "none"  # core sched disabled for the pod
    EXCLUSIVE = "exclusive"  # the pod's UID is its group


def get_core_sched_group_id(pod: KubeDict | None) -> str:
    """The pod's core-sched group id label (``""`` when absent: group ``""``)."""
    return labels_of(pod).get(LABEL_CORE_SCHED_GROUP_ID, "")


def get_core_sched_policy(pod: KubeDict | None) -> CoreSchedPolicy:
    """``none`` or ``exclusive`` from the label; anything else is the default policy."""
    value = labels_of(pod).get(LABEL_CORE_SCHED_POLICY)
    if value == CoreSchedPolicy.NONE:
        return CoreSchedPolicy.NONE
    if value == CoreSchedPolicy.EXCLUSIVE:
        return CoreSchedPolicy.EXCLUSIVE
    return CoreSchedPolicy.DEFAULT


def format_pod_qos(config: PodCPUBurstConfig | PodCPUQOSConfig | PodMemoryQOSConfig
                   | PodBlkIOQOS | PodNetworkQOS) -> str:
    """The annotation value of any of the pod QoS payloads."""
    return config.to_go_json()


__all__ = [
    "ANNOTATION_NETWORK_QOS", "ANNOTATION_OOM_SCORE_ADJ", "ANNOTATION_OOM_SCORE_ADJ_SPEC",
    "ANNOTATION_POD_BLKIO_QOS", "ANNOTATION_POD_CPU_BURST", "ANNOTATION_POD_CPU_QOS",
    "ANNOTATION_POD_MEMORY_QOS", "GROUP_IDENTITY_MAX", "GROUP_IDENTITY_MIN",
    "LABEL_CORE_SCHED_GROUP_ID", "LABEL_CORE_SCHED_POLICY", "OOM_SCORE_ADJ_MAX",
    "OOM_SCORE_ADJ_MIN", "BlockConfig", "BlockType", "CPUBurstPolicy", "CoreSchedPolicy",
    "IOConfig", "PodBlkIOQOS", "PodCPUBurstConfig", "PodCPUQOSConfig", "PodMemoryQOSConfig",
    "PodMemoryQOSPolicy", "PodNetworkQOS", "format_oom_score_adj_spec", "format_pod_qos",
    "get_core_sched_group_id", "get_core_sched_policy", "parse_oom_score_adj",
    "parse_oom_score_adj_spec", "parse_pod_blkio_qos", "parse_pod_cpu_burst", "parse_pod_cpu_qos",
    "parse_pod_memory_qos", "parse_pod_network_qos",
]
