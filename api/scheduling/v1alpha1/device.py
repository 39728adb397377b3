"""Device: the GPUs, RDMA NICs and FPGAs of one node, as koordlet reports them.

Corresponds to upstream `apis/scheduling/v1alpha1/device_types.go`. One Device per node, named
like the node; no status subresource. ``DeviceInfo`` is also embedded in NodeMetric's status.
"""

from __future__ import annotations

from enum import StrEnum
from typing import ClassVar

from pydantic import Field

from api.base import CRD_REQUIRED, ApiModel, Int32, crd_default
from api.core import ResourceList
from api.meta import Condition, KubeObject

GROUP = "scheduling.koordinator.sh"
VERSION = "v1alpha1"


class DeviceType(StrEnum):
    """Values of ``DeviceInfo.type`` that Koordinator knows; the field itself takes any string."""

    GPU = "gpu"
    FPGA = "fpga"
    RDMA = "rdma"
    XPU = "xpu"


# The condition type a device's health is reported under.
DEVICE_CONDITION_HEALTHY = "Healthy"


class DeviceTopology(ApiModel):
    """Where a device sits: CPU socket, NUMA node, PCIe switch and bus address."""

    socket_id: Int32 = Field(0, alias="socketID", json_schema_extra=CRD_REQUIRED)
    node_id: Int32 = Field(0, alias="nodeID", json_schema_extra=CRD_REQUIRED)
    pcie_id: str = Field("", alias="pcieID", json_schema_extra=CRD_REQUIRED)
    bus_id: str | None = Field(None, alias="busID")


class VirtualFunction(ApiModel):
    """One SR-IOV virtual function."""

    minor: Int32 = Field(0, json_schema_extra=CRD_REQUIRED)
    bus_id: str | None = Field(None, alias="busID")


class VirtualFunctionGroup(ApiModel):
    """Virtual functions sharing the same labels."""

    labels: dict[str, str] | None = None
    vfs: list[VirtualFunction] | None = None


class DeviceInfo(ApiModel):
    """One device of a node (``spec.devices[]``; Go field ``UUID`` is JSON ``id``)."""

    type: str | None = None
    labels: dict[str, str] | None = None
    uuid: str | None = Field(None, alias="id")
    minor: Int32 | None = None
    module_id: Int32 | None = Field(None, alias="moduleID")
    health: bool = Field(False, json_schema_extra={**CRD_REQUIRED, **crd_default(False)})
    resources: ResourceList | None = None
    topology: DeviceTopology | None = None
    vf_groups: list[VirtualFunctionGroup] | None = Field(None, alias="vfGroups")
    conditions: list[Condition] | None = None


class DeviceSpec(ApiModel):
    devices: list[DeviceInfo] | None = None


class DeviceAllocationItem(ApiModel):
    """One pod's share of a device type: which minors it holds."""

    name: str | None = None
    namespace: str | None = None
    uuid: str | None = None
    minors: list[Int32] | None = None


class DeviceAllocation(ApiModel):
    type: str | None = None
    entries: list[DeviceAllocationItem] | None = None


class DeviceStatus(ApiModel):
    allocations: list[DeviceAllocation] | None = None


class Device(KubeObject):
    """Device is the Schema for the devices of a node."""

    group: ClassVar[str] = GROUP
    version: ClassVar[str] = VERSION
    plural: ClassVar[str] = "devices"
    singular: ClassVar[str] = "device"
    namespaced: ClassVar[bool] = False
    status_subresource: ClassVar[bool] = False

    spec: DeviceSpec = Field(default_factory=DeviceSpec)
    status: DeviceStatus | None = None

    def devices_of_type(self, device_type: str) -> list[DeviceInfo]:
        """The devices in ``spec.devices`` whose type is ``device_type``."""
        return [d for d in self.spec.devices or [] if d.type == device_type]


__all__ = [
    "DEVICE_CONDITION_HEALTHY", "Device", "DeviceAllocation", "DeviceAllocationItem",
    "DeviceInfo", "DeviceSpec", "DeviceStatus", "DeviceTopology", "DeviceType",
    "VirtualFunction", "VirtualFunctionGroup",
]
