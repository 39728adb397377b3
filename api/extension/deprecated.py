"""Deprecated resource names and labels, and the mappers to their replacements.

Corresponds to upstream `apis/extension/deprecated.go`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from api.extension.constants import DOMAIN_PREFIX, RESOURCE_DOMAIN_PREFIX
from api.extension.device_share import (
    RESOURCE_FPGA,
    RESOURCE_GPU,
    RESOURCE_GPU_CORE,
    RESOURCE_GPU_MEMORY,
    RESOURCE_GPU_MEMORY_RATIO,
    RESOURCE_RDMA,
)
from api.extension.resource import BATCH_CPU, BATCH_MEMORY

# Deprecated because of the limits of extended resource naming.
KOORD_BATCH_CPU = DOMAIN_PREFIX + "batch-cpu"
KOORD_BATCH_MEMORY = DOMAIN_PREFIX + "batch-memory"

# Deprecated: device resources use the koordinator.sh prefix.
DEPRECATED_KOORD_RDMA = RESOURCE_DOMAIN_PREFIX + "rdma"
DEPRECATED_KOORD_FPGA = RESOURCE_DOMAIN_PREFIX + "fpga"
DEPRECATED_KOORD_GPU = RESOURCE_DOMAIN_PREFIX + "gpu"
DEPRECATED_GPU_CORE = RESOURCE_DOMAIN_PREFIX + "gpu-core"
DEPRECATED_GPU_MEMORY = RESOURCE_DOMAIN_PREFIX + "gpu-memory"
DEPRECATED_GPU_MEMORY_RATIO = RESOURCE_DOMAIN_PREFIX + "gpu-memory-ratio"

# Deprecated node labels; no mapper (the current ones are node.koordinator.sh/gpu-model and
# node.koordinator.sh/gpu-driver-version).
DEPRECATED_GPU_DRIVER = RESOURCE_DOMAIN_PREFIX + "gpu-driver"
DEPRECATED_GPU_MODEL = RESOURCE_DOMAIN_PREFIX + "gpu-model"

DEPRECATED_BATCH_RESOURCES_MAPPER: Mapping[str, str] = MappingProxyType({
    KOORD_BATCH_CPU: BATCH_CPU,
    KOORD_BATCH_MEMORY: BATCH_MEMORY,
})

DEPRECATED_DEVICE_RESOURCES_MAPPER: Mapping[str, str] = MappingProxyType({
    DEPRECATED_KOORD_RDMA: RESOURCE_RDMA,
    DEPRECATED_KOORD_FPGA: RESOURCE_FPGA,
    DEPRECATED_KOORD_GPU: RESOURCE_GPU,
    DEPRECATED_GPU_CORE: RESOURCE_GPU_CORE,
    DEPRECATED_GPU_MEMORY: RESOURCE_GPU_MEMORY,
    DEPRECATED_GPU_MEMORY_RATIO: RESOURCE_GPU_MEMORY_RATIO,
})


def translate_deprecated_resource_name(name: str) -> str:
    """The current name of a deprecated batch or device resource; other names unchanged."""
    return DEPRECATED_BATCH_RESOURCES_MAPPER.get(name) or DEPRECATED_DEVICE_RESOURCES_MAPPER.get(
        name, name)


__all__ = [
    "DEPRECATED_BATCH_RESOURCES_MAPPER", "DEPRECATED_DEVICE_RESOURCES_MAPPER",
    "DEPRECATED_GPU_CORE", "DEPRECATED_GPU_DRIVER", "DEPRECATED_GPU_MEMORY",
    "DEPRECATED_GPU_MEMORY_RATIO", "DEPRECATED_GPU_MODEL", "DEPRECATED_KOORD_FPGA",
    "DEPRECATED_KOORD_GPU", "DEPRECATED_KOORD_RDMA", "KOORD_BATCH_CPU", "KOORD_BATCH_MEMORY",
    "translate_deprecated_resource_name",
]
