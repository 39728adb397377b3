"""ResourceQOSStrategy: per-QoS-class cgroup, resctrl, blkio and network settings of a node.

Corresponds to the QoS types of upstream `apis/slo/v1alpha1/nodeslo_types.go` (CPUQOS,
MemoryQOS, ResctrlQOS, BlkIOQOS, NetworkQOS, their ``*Cfg`` wrappers, ResourceQOS,
ResourceQOSPolicies, ResourceQOSStrategy). Upstream embeds each strategy type in its ``*Cfg``
type next to ``enable``; here the ``*Cfg`` class inherits from the strategy class, so the JSON
is the same flat object and a ``CPUQOSCfg`` is a ``CPUQOS``.

These types are also ConfigMap and pod-annotation payloads, so they decode like Go does:
keys match case-insensitively and unknown keys are ignored. Ranges are those of the CRD.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, ClassVar

from annotated_types import Ge, Le
from pydantic import Field

from api.base import GoJSONModel, Int64, crd_default
from api.core import IntOrString


class CPUQOSPolicy(StrEnum):
    """``policies.cpuPolicy``: how CPU QoS is enforced (default ``groupIdentity``)."""

    GROUP_IDENTITY = "groupIdentity"  # Alibaba Cloud Linux group identity (bvt)
    CORE_SCHED = "coreSched"  # Linux core scheduling plus cgroup idle


class NetQOSPolicy(StrEnum):
    """``policies.netQOSPolicy``: how network QoS is enforced (default ``tc``)."""

    TC = "tc"
    TERWAY_QOS = "terway-qos"


class BlockType(StrEnum):
    """``blocks[].type``."""

    DEVICE = "device"  # a block device such as /dev/sdb; only meaningful under cgroupRoot
    VOLUME_GROUP = "volumegroup"  # an LVM volume group
    POD_VOLUME = "podvolume"  # a pod volume


Percent = Annotated[Int64, Ge(0), Le(100)]
NonNegative = Annotated[Int64, Ge(0)]
Positive = Annotated[Int64, Ge(1)]


class _Switch(GoJSONModel):
    """The ``enable`` flag that every ``*Cfg`` type carries before its strategy fields."""

    enable: bool | None = None


class CPUQOS(GoJSONModel):
    """CPU QoS of a class: group identity (``groupIdentity`` policy) or core scheduling."""

    # Group identity (bvt) value, -1..2; used with cpuPolicy=groupIdentity.
    group_identity: Int64 | None = None
    # cgroup ``cpu.idle`` (1 = SCHED_IDLE), 0..1; used with cpuPolicy=coreSched.
    sched_idle: Int64 | None = None
    # Whether the class expels idle pods at SMT level; used with cpuPolicy=coreSched.
    core_expeller: bool | None = None


class CPUQOSCfg(CPUQOS, _Switch):
    """Node-level CPU QoS of a class: ``enable`` plus the CPUQOS fields."""


class MemoryQOS(GoJSONModel):
    """Memory cgroup QoS of a class (also the body of pod annotation ``koordinator.sh/memoryQOS``).

    ``memory.min``/``memory.low`` are request × min/low percent; ``memory.high`` sits at
    throttling percent between request and limit; the wmark fields drive async reclaim and the
    global min watermark (Anolis OS).
    """

    min_limit_percent: NonNegative | None = None
    low_limit_percent: NonNegative | None = None
    throttling_percent: NonNegative | None = None
    wmark_ratio: Percent | None = None
    wmark_scale_permill: Annotated[Int64, Ge(1), Le(1000)] | None = None
    wmark_min_adj: Annotated[Int64, Ge(-25), Le(50)] | None = None
    priority_enable: Int64 | None = None
    priority: Int64 | None = None
    oom_kill_group: Int64 | None = None
    # Page-cache limit of the memcg (Anolis OS); the size in bytes wins over the percent.
    page_cache_enable: bool | None = None
    page_cache_limit_percent: Percent | None = None
    page_cache_limit_size: Int64 | None = None
    page_cache_reclaim_sync: bool | None = None


class MemoryQOSCfg(MemoryQOS, _Switch):
    """Node-level memory QoS of a class: ``enable`` plus the MemoryQOS fields."""


class ResctrlQOS(GoJSONModel):
    """LLC ways (CAT) and memory bandwidth (MBA) of a class, in percent."""

    cat_range_start_percent: Percent | None = None
    cat_range_end_percent: Percent | None = None
    mba_percent: Percent | None = None


class ResctrlQOSCfg(ResctrlQOS, _Switch):
    """Node-level resctrl QoS of a class: ``enable`` plus the ResctrlQOS fields."""


class IOCfg(GoJSONModel):
    """Throttling, weight and blk-iocost settings of one block device or volume."""

    # IOPS and bytes/s throttles; 0 disables.
    read_iops: NonNegative | None = Field(None, alias="readIOPS")
    write_iops: NonNegative | None = Field(None, alias="writeIOPS")
    read_bps: NonNegative | None = Field(None, alias="readBPS")
    write_bps: NonNegative | None = Field(None, alias="writeBPS")
    # Relative weight, 1..100 (100 when unset).
    io_weight_percent: Annotated[Int64, Ge(1), Le(100)] | None = Field(
        None, alias="ioWeightPercent"
    )
    # blk-iocost latency targets (microseconds) and percentiles; root cgroup only.
    read_latency: Int64 | None = None
    write_latency: Int64 | None = None
    read_latency_percent: Percent | None = None
    write_latency_percent: Percent | None = None
    # Manual blk-iocost cost model.
    enable_user_model: bool | None = None
    model_read_bps: Positive | None = Field(None, alias="modelReadBPS")
    model_write_bps: Positive | None = Field(None, alias="modelWriteBPS")
    model_read_seq_iops: Positive | None = Field(None, alias="modelReadSeqIOPS")
    model_write_seq_iops: Positive | None = Field(None, alias="modelWriteSeqIOPS")
    model_read_rand_iops: Positive | None = Field(None, alias="modelReadRandIOPS")
    model_write_rand_iops: Positive | None = Field(None, alias="modelWriteRandIOPS")


class BlockCfg(GoJSONModel):
    """One block device, volume group or pod volume and its IO settings."""

    name: str | None = None
    block_type: str | None = Field(None, alias="type")
    # A struct in Go, so always written (``{}`` when empty).
    io_cfg: IOCfg = Field(default_factory=IOCfg, alias="ioCfg")


class BlkIOQOS(GoJSONModel):
    """Block IO QoS of a class (also the body of pod annotation ``koordinator.sh/blkioQOS``)."""

    blocks: list[BlockCfg] | None = None


class BlkIOQOSCfg(BlkIOQOS, _Switch):
    """Node-level block IO QoS of a class: ``enable`` plus the BlkIOQOS fields."""


class NetworkQOS(GoJSONModel):
    """Guaranteed and maximum bandwidth of a class per direction.

    A number is a percentage (0..100) of the node's total bandwidth; a string is a rate such
    as ``"50M"``.
    """

    ingress_request: IntOrString | None = Field(None, json_schema_extra=crd_default(0))
    ingress_limit: IntOrString | None = Field(None, json_schema_extra=crd_default(100))
    egress_request: IntOrString | None = Field(None, json_schema_extra=crd_default(0))
    egress_limit: IntOrString | None = Field(None, json_schema_extra=crd_default(100))


class NetworkQOSCfg(NetworkQOS, _Switch):
    """Node-level network QoS of a class: ``enable`` plus the NetworkQOS fields."""


class ResourceQOS(GoJSONModel):
    """All QoS settings of one class."""

    cpu_qos: CPUQOSCfg | None = Field(None, alias="cpuQOS")
    memory_qos: MemoryQOSCfg | None = Field(None, alias="memoryQOS")
    blkio_qos: BlkIOQOSCfg | None = Field(None, alias="blkioQOS")
    resctrl_qos: ResctrlQOSCfg | None = Field(None, alias="resctrlQOS")
    network_qos: NetworkQOSCfg | None = Field(None, alias="networkQOS")


class ResourceQOSPolicies(GoJSONModel):
    """Which mechanism implements CPU and network QoS."""

    # Pointers in Go: an explicit "" is written (and overwrites when configs are merged).
    go_pointer_strings: ClassVar[frozenset[str]] = frozenset({"cpu_policy", "net_qos_policy"})

    cpu_policy: str | None = None
    net_qos_policy: str | None = Field(None, alias="netQOSPolicy")


class ResourceQOSStrategy(GoJSONModel):
    """Per-class QoS settings of a node (``NodeSLO.spec.resourceQOSStrategy``)."""

    policies: ResourceQOSPolicies | None = None
    # LSR settings; LSE pods use them too.
    lsr_class: ResourceQOS | None = Field(None, alias="lsrClass")
    ls_class: ResourceQOS | None = Field(None, alias="lsClass")
    be_class: ResourceQOS | None = Field(None, alias="beClass")
    system_class: ResourceQOS | None = Field(None, alias="systemClass")
    # The root cgroup; only blkio settings apply there.
    cgroup_root: ResourceQOS | None = None

    def for_qos_class(self, qos_class: str) -> ResourceQOS | None:
        """The settings that apply to pods of a QoS class (``LSE`` uses ``lsrClass``)."""
        match qos_class:
            case "LSE" | "LSR":
                return self.lsr_class
            case "LS":
                return self.ls_class
            case "BE":
                return self.be_class
            case "SYSTEM":
                return self.system_class
        return None


__all__ = [
    "CPUQOS", "BlkIOQOS", "BlkIOQOSCfg", "BlockCfg", "BlockType", "CPUQOSCfg", "CPUQOSPolicy",
    "IOCfg", "MemoryQOS", "MemoryQOSCfg", "NetQOSPolicy", "NetworkQOS", "NetworkQOSCfg",
    "ResctrlQOS", "ResctrlQOSCfg", "ResourceQOS", "ResourceQOSPolicies", "ResourceQOSStrategy",
]
