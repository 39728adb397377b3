"""GPUDeviceResource and RDMADeviceResource: node resources and labels from the Device CR
(upstream `plugins/gpudeviceresource` and `plugins/rdmadevicereource`)."""

from __future__ import annotations

from typing import Any

import pytest

from api.configuration.slo_controller_config import parse_colocation_config
from api.extension.device_share import LABEL_GPU_DRIVER_VERSION, LABEL_GPU_MODEL
from manager.slo_controller.noderesource import calculator
from manager.slo_controller.noderesource.deviceresource import (
    GPUDeviceResourcePlugin,
    RDMADeviceResourcePlugin,
)
from manager.slo_controller.noderesource.framework import PluginInputs
from pkg.features import FeatureGate
from pkg.features.features import DEFAULT_FEATURE_GATES, ENABLE_SYNC_GPU_SHARED_RESOURCE

GPU = {"koordinator.sh/gpu-core": "100", "koordinator.sh/gpu-memory": "80Gi",
       "koordinator.sh/gpu-memory-ratio": "100"}


def device(*devices: dict[str, Any], labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "n1", "labels": labels or {}},
            "spec": {"devices": list(devices)}}


def gpu(health: bool = True) -> dict[str, Any]:
    return {"type": "gpu", "health": health, "resources": dict(GPU)}


def rdma(health: bool = True) -> dict[str, Any]:
    return {"type": "rdma", "health": health, "resources": {"koordinator.sh/rdma": "100"}}


def prepared(dev: dict[str, Any] | None, shared: bool = False,
             node: dict[str, Any] | None = None) -> dict[str, Any]:
    gates = FeatureGate(DEFAULT_FEATURE_GATES)
    gates.set_from_map({ENABLE_SYNC_GPU_SHARED_RESOURCE: shared})
    plugins = (GPUDeviceResourcePlugin(gates), RDMADeviceResourcePlugin())
    cfg = parse_colocation_config('{"enable": true}')
    node = node or {"metadata": {"name": "n1", "labels": {}},
                    "status": {"capacity": {"cpu": "8"}, "allocatable": {"cpu": "8"}}}
    nr = calculator.calculate(cfg, cfg.for_node(node), node, None, [], 0.0, plugins,
                              PluginInputs(device=dev))
    return calculator.prepare_node(node, nr, plugins)


def test_sums_healthy_gpus() -> None:
    node = prepared(device(gpu(), gpu(), gpu(health=False), rdma(), rdma(), rdma(False),
                           labels={LABEL_GPU_MODEL: "A100", LABEL_GPU_DRIVER_VERSION: "535"}))
    alloc = node["status"]["allocatable"]
    assert alloc["koordinator.sh/gpu-core"] == "200"
    assert alloc["koordinator.sh/gpu"] == "200"  # Σ gpu-core, NVIDIA or unlabelled
    assert alloc["koordinator.sh/gpu-memory"] == str(160 * 2**30)
    assert alloc["koordinator.sh/gpu-memory-ratio"] == "200"
    assert "koordinator.sh/gpu.shared" not in alloc  # gate off by default
    assert alloc["koordinator.sh/rdma"] == "200"
    assert node["status"]["capacity"]["koordinator.sh/gpu"] == "200"
    assert node["metadata"]["labels"] == {LABEL_GPU_MODEL: "A100", LABEL_GPU_DRIVER_VERSION: "535"}


def test_gpu_shared_with_gate() -> None:
    alloc = prepared(device(gpu(), gpu()), shared=True)["status"]["allocatable"]
    assert alloc["koordinator.sh/gpu.shared"] == "200"


def test_other_vendor_gets_no_koordinator_gpu() -> None:
    alloc = prepared(device(gpu(), labels={"node.koordinator.sh/gpu-vendor": "huawei"})
                     )["status"]["allocatable"]
    assert "koordinator.sh/gpu" not in alloc
    assert alloc["koordinator.sh/gpu-core"] == "100"


@pytest.mark.parametrize("dev", [None, device(gpu(False), rdma(False)), device()],
                         ids=["no Device", "none healthy", "no devices"])
def test_reset_removes_resources(dev: dict[str, Any] | None) -> None:
    node = {"metadata": {"name": "n1"}, "status": {
        "capacity": {"koordinator.sh/gpu": "100", "koordinator.sh/rdma": "100"},
        "allocatable": {"koordinator.sh/gpu": "100", "koordinator.sh/rdma": "100"}}}
    out = prepared(dev, node=node)
    assert out["status"]["allocatable"] == {} and out["status"]["capacity"] == {}


def test_malformed_quantity_skips_gpu_only() -> None:
    bad = {"type": "gpu", "health": True, "resources": {"koordinator.sh/gpu-core": "lots"}}
    alloc = prepared(device(bad, rdma()))["status"]["allocatable"]
    assert "koordinator.sh/gpu-core" not in alloc
    assert alloc["koordinator.sh/rdma"] == "100"


def test_label_change_needs_meta_patch() -> None:
    plugin = GPUDeviceResourcePlugin()
    old = {"metadata": {"labels": {LABEL_GPU_MODEL: "A100"}}}
    assert plugin.need_sync_meta(old, {"metadata": {"labels": {LABEL_GPU_MODEL: "H100"}}})[0]
    assert not plugin.need_sync_meta(old, old)[0]
