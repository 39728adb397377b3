"""Device: JSON names that are not plain camelCase, the always-written ``health``."""

from __future__ import annotations

from api.scheduling.v1alpha1.device import Device, DeviceInfo, DeviceType

DEVICE = {
    "apiVersion": "scheduling.koordinator.sh/v1alpha1",
    "kind": "Device",
    "metadata": {"name": "node-1"},
    "spec": {"devices": [
        {"type": "gpu", "id": "GPU-8c25ea37", "minor": 0, "moduleID": 3, "health": True,
         "resources": {"koordinator.sh/gpu-core": "100", "koordinator.sh/gpu-memory": "16Gi",
                       "koordinator.sh/gpu-memory-ratio": "100"},
         "topology": {"socketID": 0, "nodeID": 1, "pcieID": "pcie-0", "busID": "0000:3b:00.0"},
         "labels": {"type": "A100"},
         "conditions": [{"type": "Healthy", "status": "True", "reason": "DeviceHealthy",
                         "message": "ok", "lastTransitionTime": "2024-03-05T08:00:00Z"}]},
        {"type": "rdma", "id": "0000:5f:00.0", "health": False,
         "vfGroups": [{"labels": {"type": "general"},
                       "vfs": [{"minor": 0, "busID": "0000:5f:00.2"}, {"minor": 1}]}]},
    ]},
    "status": {"allocations": [{"type": "gpu", "entries": [
        {"namespace": "default", "name": "train-0", "uuid": "u1", "minors": [0, 1]}]}]},
}


def test_device_round_trips() -> None:
    device = Device.model_validate(DEVICE)
    assert device.to_dict() == DEVICE
    gpu = device.spec.devices[0] if device.spec.devices else None
    assert gpu is not None and gpu.uuid == "GPU-8c25ea37" and gpu.module_id == 3
    assert gpu.topology is not None and gpu.topology.pcie_id == "pcie-0"


def test_health_is_always_written_and_false_by_default() -> None:
    assert DeviceInfo().to_dict() == {"health": False}
    assert DeviceInfo.model_validate({"type": "gpu"}).health is False


def test_devices_of_type() -> None:
    device = Device.model_validate(DEVICE)
    assert [d.uuid for d in device.devices_of_type(DeviceType.RDMA)] == ["0000:5f:00.0"]
    assert device.devices_of_type("fpga") == []


def test_no_status_subresource() -> None:
    assert Device.status_subresource is False
    assert Device.crd_name() == "devices.scheduling.koordinator.sh"
