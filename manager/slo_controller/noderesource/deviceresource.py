"""The GPUDeviceResource and RDMADeviceResource plugins (upstream
`pkg/slo-controller/noderesource/plugins/gpudeviceresource` and its RDMA sibling): device
resources of a node from the ``Device`` CR koordlet reports under the node's name.

GPU: the resources of every healthy GPU summed; ``koordinator.sh/gpu`` = Σ ``gpu-core`` for
NVIDIA (or unlabelled) devices; ``koordinator.sh/gpu.shared`` = 100 × healthy GPUs when the
``EnableSyncGPUSharedResource`` gate is on; the vendor, model and driver labels of the Device
copied to the node. RDMA: ``koordinator.sh/rdma`` = 100 × healthy RDMA devices. No Device or
no healthy device removes the resources; colocation being off leaves them alone (they are
not co-location resources).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from api.configuration import ColocationStrategy
from api.core import format_quantity
from api.extension.device_share import (
    LABEL_GPU_DRIVER_VERSION,
    LABEL_GPU_MODEL,
    LABEL_GPU_VENDOR,
    RESOURCE_GPU,
    RESOURCE_GPU_CORE,
    RESOURCE_GPU_MEMORY,
    RESOURCE_GPU_MEMORY_RATIO,
    RESOURCE_GPU_SHARED,
    RESOURCE_HUAWEI_NPU_CORE,
    RESOURCE_HUAWEI_NPU_CPU,
    RESOURCE_HUAWEI_NPU_DVPP,
    RESOURCE_RDMA,
    GPUVendor,
)
from api.scheduling.v1alpha1.device import DeviceType
from manager.slo_controller.noderesource.framework import (
    CalculateError,
    CalculatePlugin,
    MetaCheckPlugin,
    NodeResource,
    PluginInputs,
    PodInfo,
    PreparePlugin,
    ResourceItem,
    ResourceMetrics,
    StatusCheckPlugin,
)
from manager.slo_controller.noderesource.resourcesync import is_resource_diff
from pkg.features import FeatureGate, default_feature_gate
from pkg.features.features import ENABLE_SYNC_GPU_SHARED_RESOURCE
from pkg.util.podresources import quantity_int

GPU_PLUGIN_NAME = "GPUDeviceResource"
RDMA_PLUGIN_NAME = "RDMADeviceResource"
GPU_RESOURCE_NAMES = (RESOURCE_GPU, RESOURCE_GPU_CORE, RESOURCE_HUAWEI_NPU_CORE,
                      RESOURCE_HUAWEI_NPU_CPU, RESOURCE_HUAWEI_NPU_DVPP, RESOURCE_GPU_MEMORY,
                      RESOURCE_GPU_MEMORY_RATIO, RESOURCE_GPU_SHARED)
GPU_LABELS = (LABEL_GPU_VENDOR, LABEL_GPU_MODEL, LABEL_GPU_DRIVER_VERSION)
RESET_MESSAGE = "reset node gpu resources"
UPDATE_MESSAGE = "node gpu resources from device"
RDMA_RESET_MESSAGE = "reset node rdma resources"
RDMA_UPDATE_MESSAGE = "node rdma resources from device"


def healthy_devices(device: Mapping[str, Any], device_type: str) -> list[Mapping[str, Any]]:
    devices = (device.get("spec") or {}).get("devices") or []
    return [d for d in devices if isinstance(d, Mapping) and d.get("type") == device_type
            and d.get("health") is True]


def _reset(names: tuple[str, ...], message: str) -> list[ResourceItem]:
    return [ResourceItem(name, None, message, reset=True) for name in names]


def calculate_gpu(device: Mapping[str, Any] | None, shared: bool) -> list[ResourceItem]:
    """The GPU items of a node's Device; CalculateError on a malformed device quantity."""
    gpus = healthy_devices(device, DeviceType.GPU) if device is not None else []
    if not gpus:
        return _reset(GPU_RESOURCE_NAMES, RESET_MESSAGE)
    totals: dict[str, int] = {}
    for gpu in gpus:
        for name, quantity in (gpu.get("resources") or {}).items():
            try:
                totals[name] = totals.get(name, 0) + quantity_int(name, quantity)
            except (ValueError, TypeError, ArithmeticError):
                raise CalculateError(
                    f"Device {((device or {}).get('metadata') or {}).get('name')}: "
                    f"resource {name} has a malformed quantity {quantity!r}") from None
    labels = ((device or {}).get("metadata") or {}).get("labels") or {}
    if labels.get(LABEL_GPU_VENDOR, "") in ("", GPUVendor.NVIDIA):
        totals[RESOURCE_GPU] = totals.get(RESOURCE_GPU_CORE, 0)
    if shared:
        totals[RESOURCE_GPU_SHARED] = 100 * len(gpus)
    items = [ResourceItem(name, value, UPDATE_MESSAGE) for name, value in sorted(totals.items())]
    copied = {key: labels[key] for key in GPU_LABELS if key in labels}
    if copied:
        items.append(ResourceItem(GPU_PLUGIN_NAME, labels=copied,
                                  message="node gpu labels from device"))
    return items


def _write(node: dict[str, Any], nr: NodeResource, names: tuple[str, ...]) -> None:
    """Reset names are removed; names without a result are left as they are (upstream)."""
    status = node.setdefault("status", {})
    capacity = status.setdefault("capacity", {})
    allocatable = status.setdefault("allocatable", {})
    for name in names:
        if nr.resets.get(name):
            capacity.pop(name, None)
            allocatable.pop(name, None)
        elif nr.resources.get(name) is not None:
            capacity[name] = allocatable[name] = format_quantity(int(nr.resources[name] or 0))


class GPUDeviceResourcePlugin(CalculatePlugin, PreparePlugin, StatusCheckPlugin,
                              MetaCheckPlugin):
    """Calculate, NodePrepare, NodeStatusCheck and NodeMetaCheck for GPU resources and labels."""

    name = GPU_PLUGIN_NAME

    def __init__(self, gates: FeatureGate = default_feature_gate) -> None:
        self.gates = gates

    def calculate(self, strategy: ColocationStrategy, node: Mapping[str, Any],
                  pods: list[PodInfo], metrics: ResourceMetrics, now: float,
                  extra: PluginInputs) -> list[ResourceItem]:
        return calculate_gpu(extra.device, self.gates.enabled(ENABLE_SYNC_GPU_SHARED_RESOURCE))

    def reset(self, node: Mapping[str, Any], message: str) -> list[ResourceItem]:
        return []

    def prepare(self, node: dict[str, Any], nr: NodeResource) -> None:
        _write(node, nr, GPU_RESOURCE_NAMES)
        copied = {key: nr.labels[key] for key in GPU_LABELS if key in nr.labels}
        if copied:
            meta = node.setdefault("metadata", {})
            meta["labels"] = {**(meta.get("labels") or {}), **copied}

    def need_sync(self, strategy: ColocationStrategy, old: Mapping[str, Any],
                  new: Mapping[str, Any]) -> tuple[bool, str]:
        return is_resource_diff(old, new, GPU_RESOURCE_NAMES,
                                strategy.resource_diff_threshold or 0.0)

    def need_sync_meta(self, old: Mapping[str, Any], new: Mapping[str, Any]
                       ) -> tuple[bool, str]:
        old_labels = (old.get("metadata") or {}).get("labels") or {}
        new_labels = (new.get("metadata") or {}).get("labels") or {}
        for key in GPU_LABELS:
            if old_labels.get(key, "") != new_labels.get(key, ""):
                return True, f"gpu device label {key} changed"
        return False, ""


class RDMADeviceResourcePlugin(CalculatePlugin, PreparePlugin, StatusCheckPlugin):
    """Calculate, NodePrepare and NodeStatusCheck for ``koordinator.sh/rdma``."""

    name = RDMA_PLUGIN_NAME
    resource_names = (RESOURCE_RDMA,)

    def calculate(self, strategy: ColocationStrategy, node: Mapping[str, Any],
                  pods: list[PodInfo], metrics: ResourceMetrics, now: float,
                  extra: PluginInputs) -> list[ResourceItem]:
        count = len(healthy_devices(extra.device, DeviceType.RDMA)) if extra.device else 0
        if count == 0:
            return _reset(self.resource_names, RDMA_RESET_MESSAGE)
        return [ResourceItem(RESOURCE_RDMA, 100 * count, RDMA_UPDATE_MESSAGE)]

    def reset(self, node: Mapping[str, Any], message: str) -> list[ResourceItem]:
        return []

    def prepare(self, node: dict[str, Any], nr: NodeResource) -> None:
        _write(node, nr, self.resource_names)

    def need_sync(self, strategy: ColocationStrategy, old: Mapping[str, Any],
                  new: Mapping[str, Any]) -> tuple[bool, str]:
        return is_resource_diff(old, new, self.resource_names,
                                strategy.resource_diff_threshold or 0.0)


__all__ = ["GPUDeviceResourcePlugin", "GPU_LABELS", "GPU_PLUGIN_NAME", "GPU_RESOURCE_NAMES",
           "RDMADeviceResourcePlugin", "RDMA_PLUGIN_NAME", "calculate_gpu", "healthy_devices"]
