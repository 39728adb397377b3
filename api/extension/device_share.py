"""Device resources, node GPU labels and the device annotations of pods and Device objects.

Corresponds to upstream `apis/extension/device_share.go`: device-allocated, device-allocate-hint,
device-joint-allocate and gpu-partition-spec on pods, gpu-partitions on Device objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Annotated, Any

from pydantic import Field, TypeAdapter

from api.base import go_json_dumps
from api.errors import MalformedValueError
from api.extension.codec import decode_json, decode_model, decode_value, parse_int, validate
from api.extension.constants import DOMAIN_PREFIX, NODE_DOMAIN_PREFIX, SCHEDULING_DOMAIN_PREFIX
from api.extension.payload import (
    ALWAYS,
    PTR,
    SORTED,
    GoInt32,
    GoInt64,
    GoLabelSelector,
    GoPayload,
    GoQuantity,
    GoResourceList,
    dump_json,
)

ANNOTATION_DEVICE_ALLOCATED = SCHEDULING_DOMAIN_PREFIX + "/device-allocated"
ANNOTATION_DEVICE_ALLOCATE_HINT = SCHEDULING_DOMAIN_PREFIX + "/device-allocate-hint"
ANNOTATION_DEVICE_JOINT_ALLOCATE = SCHEDULING_DOMAIN_PREFIX + "/device-joint-allocate"
ANNOTATION_GPU_PARTITION_SPEC = SCHEDULING_DOMAIN_PREFIX + "/gpu-partition-spec"
ANNOTATION_GPU_PARTITIONS = SCHEDULING_DOMAIN_PREFIX + "/gpu-partitions"

RESOURCE_NVIDIA_GPU = "nvidia.com/gpu"
RESOURCE_HYGON_DCU = "dcu.com/gpu"
RESOURCE_AMD_GPU = "amd.com/gpu"
RESOURCE_HUAWEI_NPU_CORE = "huawei.com/npu-core"
RESOURCE_HUAWEI_NPU_CPU = "huawei.com/npu-cpu"
RESOURCE_HUAWEI_NPU_DVPP = "huawei.com/npu-dvpp"
RESOURCE_RDMA = DOMAIN_PREFIX + "rdma"
RESOURCE_FPGA = DOMAIN_PREFIX + "fpga"
RESOURCE_GPU = DOMAIN_PREFIX + "gpu"
RESOURCE_GPU_SHARED = DOMAIN_PREFIX + "gpu.shared"
RESOURCE_GPU_CORE = DOMAIN_PREFIX + "gpu-core"
RESOURCE_GPU_MEMORY = DOMAIN_PREFIX + "gpu-memory"
RESOURCE_GPU_MEMORY_RATIO = DOMAIN_PREFIX + "gpu-memory-ratio"

LABEL_GPU_PARTITION_POLICY = NODE_DOMAIN_PREFIX + "/gpu-partition-policy"
LABEL_GPU_VENDOR = NODE_DOMAIN_PREFIX + "/gpu-vendor"
LABEL_GPU_MODEL = NODE_DOMAIN_PREFIX + "/gpu-model"
LABEL_GPU_DRIVER_VERSION = NODE_DOMAIN_PREFIX + "/gpu-driver-version"
LABEL_SECONDARY_DEVICE_WELL_PLANNED = NODE_DOMAIN_PREFIX + "/secondary-device-well-planned"
LABEL_GPU_ISOLATION_PROVIDER = DOMAIN_PREFIX + "gpu-isolation-provider"
LABEL_HAMI_VGPU_NODE = "hami.io/vgpu-node"


class GPUVendor(StrEnum):
    NVIDIA = "nvidia"
    HUAWEI = "huawei"
    CAMBRICON = "cambricon"
    METAX = "metax"
    BAIDU = "baidu"


class GPUIsolationProvider(StrEnum):
    HAMI_CORE = "HAMi-core"


class DeviceAllocateStrategy(StrEnum):
    APPLY_FOR_ALL = "ApplyForAll"
    REQUESTS_AS_COUNT = "RequestsAsCount"


class DeviceTopologyScope(StrEnum):
    DEVICE = "Device"
    PCIE = "PCIe"
    NUMA_NODE = "NUMANode"
    NODE = "Node"


# Narrower scopes have higher levels.
DEVICE_TOPOLOGY_SCOPE_LEVEL = MappingProxyType({
    DeviceTopologyScope.DEVICE: 4, DeviceTopologyScope.PCIE: 3,
    DeviceTopologyScope.NUMA_NODE: 2, DeviceTopologyScope.NODE: 1,
})


class DeviceExclusivePolicy(StrEnum):
    DEVICE_LEVEL = "DeviceLevel"
    PCIE_LEVEL = "PCIeLevel"


class DeviceJointAllocateScope(StrEnum):
    SAME_PCIE = "SamePCIe"


class GPUPartitionAllocatePolicy(StrEnum):
    RESTRICTED = "Restricted"  # only the partitions with the highest allocation score
    BEST_EFFORT = "BestEffort"


class GPULinkType(StrEnum):
    NVLINK = "NVLink"


class GPUPartitionPolicy(StrEnum):
    HONOR = "Honor"
    PREFER = "Prefer"


# --- device-allocated ------------------------------------------------------------------------


class VirtualFunction(GoPayload):
    minor: GoInt64 = 0
    bus_id: str = Field("", alias="busID")


class DeviceAllocationExtension(GoPayload):
    vfs: list[VirtualFunction] | None = None
    gpu_shared_resource_template: str = ""


class DeviceAllocation(GoPayload):
    """One allocated device: ``minor`` and ``resources`` are always written."""

    minor: Annotated[GoInt32, ALWAYS] = 0
    resources: Annotated[GoResourceList | None, ALWAYS] = None
    id: str = ""  # bus id for RDMA / VF-capable devices
    extension: DeviceAllocationExtension | None = None


# Device type (gpu, rdma, fpga, ...) → allocated devices.
DeviceAllocations = dict[str, list[DeviceAllocation]]
_ALLOCATIONS = TypeAdapter(Annotated[DeviceAllocations, SORTED])


def parse_device_allocations(annotations: Mapping[str, str] | None) -> DeviceAllocations | None:
    """None when the annotation is missing (or ``null``)."""
    raw = (annotations or {}).get(ANNOTATION_DEVICE_ALLOCATED)
    if raw is None:
        return None
    return decode_value(ANNOTATION_DEVICE_ALLOCATED, raw, _ALLOCATIONS)


def format_device_allocations(allocations: DeviceAllocations) -> str:
    """As the scheduler writes it at pre-bind (device types and resource names sorted)."""
    return dump_json(_ALLOCATIONS, allocations)


# --- device-allocate-hint --------------------------------------------------------------------


class DeviceHint(GoPayload):
    """How to select devices of one type."""

    selector: GoLabelSelector | None = None
    vf_selector: GoLabelSelector | None = None
    allocate_strategy: str = ""
    required_topology_scope: str = ""
    exclusive_policy: str = ""


DeviceAllocateHints = dict[str, DeviceHint]
_HINTS = TypeAdapter(Annotated[DeviceAllocateHints, SORTED])


def parse_device_allocate_hints(
        annotations: Mapping[str, str] | None) -> DeviceAllocateHints | None:
    raw = (annotations or {}).get(ANNOTATION_DEVICE_ALLOCATE_HINT)
    if raw is None:
        return None
    return decode_value(ANNOTATION_DEVICE_ALLOCATE_HINT, raw, _HINTS)


def format_device_allocate_hints(hints: DeviceAllocateHints) -> str:
    return dump_json(_HINTS, hints)


# --- device-joint-allocate -------------------------------------------------------------------


class DeviceJointAllocate(GoPayload):
    """Device types allocated together within ``requiredScope`` (e.g. ``SamePCIe``)."""

    device_types: list[str] | None = None
    required_scope: str = ""


def parse_device_joint_allocate(
        annotations: Mapping[str, str] | None) -> DeviceJointAllocate | None:
    raw = (annotations or {}).get(ANNOTATION_DEVICE_JOINT_ALLOCATE)
    if raw is None:
        return None
    return decode_model(ANNOTATION_DEVICE_JOINT_ALLOCATE, raw, DeviceJointAllocate)


def format_device_joint_allocate(joint: DeviceJointAllocate) -> str:
    return joint.to_go_json()


# --- GPU partitions --------------------------------------------------------------------------


class GPUPartitionSpec(GoPayload):
    """A pod's GPU partition request; an empty policy reads as ``BestEffort``."""

    allocate_policy: str = ""
    ring_bus_bandwidth: Annotated[GoQuantity | None, PTR] = None


def parse_gpu_partition_spec(annotations: Mapping[str, str] | None) -> GPUPartitionSpec | None:
    raw = (annotations or {}).get(ANNOTATION_GPU_PARTITION_SPEC)
    if raw is None:
        return None
    spec = decode_model(ANNOTATION_GPU_PARTITION_SPEC, raw, GPUPartitionSpec)
    if not spec.allocate_policy:
        spec.allocate_policy = GPUPartitionAllocatePolicy.BEST_EFFORT
    return spec


def format_gpu_partition_spec(spec: GPUPartitionSpec) -> str:
    return spec.to_go_json()


class GPUPartition(GoPayload):
    """GPUs that can be allocated together; ``minors`` is always written."""

    minors: Annotated[list[GoInt64] | None, ALWAYS] = None
    gpu_link_type: str = ""
    ring_bus_bandwidth: Annotated[GoQuantity | None, PTR] = None
    allocation_score: GoInt64 = 0


# Number of GPUs → the partitions of that size.
GPUPartitionTable = dict[int, list[GPUPartition]]
_PARTITIONS = TypeAdapter(dict[str, list[GPUPartition]])
_PARTITION_LIST = TypeAdapter(list[GPUPartition])


def parse_gpu_partition_table(annotations: Mapping[str, str] | None) -> GPUPartitionTable | None:
    """The Device's partition table; None when missing or empty. ``null`` is rejected."""
    raw = (annotations or {}).get(ANNOTATION_GPU_PARTITIONS)
    if not raw:
        return None
    data: Any = decode_json(ANNOTATION_GPU_PARTITIONS, raw)
    if data is None:
        raise MalformedValueError(ANNOTATION_GPU_PARTITIONS, "null is not a partition table")
    by_name = validate(ANNOTATION_GPU_PARTITIONS, _PARTITIONS, data)
    table: GPUPartitionTable = {}
    for key, partitions in by_name.items():
        try:
            table[parse_int(key, bits=64)] = partitions
        except ValueError as exc:
            raise MalformedValueError(ANNOTATION_GPU_PARTITIONS,
                                      f"key {key!r}: {exc}") from None
    return table


def format_gpu_partition_table(table: GPUPartitionTable) -> str:
    """The annotation value; keys are decimal strings sorted as strings, as Go writes them."""
    data = {str(count): _PARTITION_LIST.dump_python(parts, mode="json", by_alias=True,
                                                      exclude_none=True)
            for count, parts in table.items()}
    return go_json_dumps(dict(sorted(data.items())))


def get_gpu_partition_policy(labels: Mapping[str, str] | None) -> GPUPartitionPolicy:
    """Only ``Honor`` is honoured; anything else (or nothing) is ``Prefer``."""
    if (labels or {}).get(LABEL_GPU_PARTITION_POLICY) == GPUPartitionPolicy.HONOR:
        return GPUPartitionPolicy.HONOR
    return GPUPartitionPolicy.PREFER


def is_secondary_device_well_planned(labels: Mapping[str, str] | None) -> bool:
    return (labels or {}).get(LABEL_SECONDARY_DEVICE_WELL_PLANNED) == "true"


__all__ = [
    "ANNOTATION_DEVICE_ALLOCATED", "ANNOTATION_DEVICE_ALLOCATE_HINT",
    "ANNOTATION_DEVICE_JOINT_ALLOCATE", "ANNOTATION_GPU_PARTITIONS",
    "ANNOTATION_GPU_PARTITION_SPEC", "DEVICE_TOPOLOGY_SCOPE_LEVEL", "LABEL_GPU_DRIVER_VERSION",
    "LABEL_GPU_ISOLATION_PROVIDER", "LABEL_GPU_MODEL", "LABEL_GPU_PARTITION_POLICY",
    "LABEL_GPU_VENDOR", "LABEL_HAMI_VGPU_NODE", "LABEL_SECONDARY_DEVICE_WELL_PLANNED",
    "RESOURCE_AMD_GPU", "RESOURCE_FPGA", "RESOURCE_GPU", "RESOURCE_GPU_CORE",
    "RESOURCE_GPU_MEMORY", "RESOURCE_GPU_MEMORY_RATIO", "RESOURCE_GPU_SHARED",
    "RESOURCE_HUAWEI_NPU_CORE", "RESOURCE_HUAWEI_NPU_CPU", "RESOURCE_HUAWEI_NPU_DVPP",
    "RESOURCE_HYGON_DCU", "RESOURCE_NVIDIA_GPU", "RESOURCE_RDMA", "DeviceAllocateHints",
    "DeviceAllocateStrategy", "DeviceAllocation", "DeviceAllocationExtension", "DeviceAllocations",
    "DeviceExclusivePolicy", "DeviceHint", "DeviceJointAllocate", "DeviceJointAllocateScope",
    "DeviceTopologyScope", "GPUIsolationProvider", "GPULinkType", "GPUPartition",
    "GPUPartitionAllocatePolicy", "GPUPartitionPolicy", "GPUPartitionSpec", "GPUPartitionTable",
    "GPUVendor", "VirtualFunction", "format_device_allocate_hints", "format_device_allocations",
    "format_device_joint_allocate", "format_gpu_partition_spec", "format_gpu_partition_table",
    "get_gpu_partition_policy", "is_secondary_device_well_planned", "parse_device_allocate_hints",
    "parse_device_allocations", "parse_device_joint_allocate", "parse_gpu_partition_spec",
    "parse_gpu_partition_table",
]
