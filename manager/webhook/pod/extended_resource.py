"""The ``node.koordinator.sh/extended-resource-spec`` annotation and GPU request rewriting.

Corresponds to upstream ``pkg/webhook/pod/mutating/extended_resource_spec.go`` (the per
container batch resources, for consumers without the pod spec) and
``device_resource_spec.go`` (``koordinator.sh/gpu`` → ``gpu-core`` + ``gpu-memory-ratio``,
``gpu.shared`` filled in).
"""

from __future__ import annotations

from typing import Any

from api.core import quantity_value
from api.errors import MalformedValueError
from api.extension.device_share import (
    RESOURCE_GPU,
    RESOURCE_GPU_CORE,
    RESOURCE_GPU_MEMORY,
    RESOURCE_GPU_MEMORY_RATIO,
    RESOURCE_GPU_SHARED,
    RESOURCE_NVIDIA_GPU,
)
from api.extension.resource import (
    ANNOTATION_EXTENDED_RESOURCE_SPEC,
    BATCH_CPU,
    BATCH_MEMORY,
    ExtendedResourceContainerSpec,
    ExtendedResourceSpec,
    format_extended_resource_spec,
    parse_extended_resource_spec,
)

Obj = dict[str, Any]
_EXTENDED = (BATCH_CPU, BATCH_MEMORY)
_GPU_RESOURCES = (RESOURCE_NVIDIA_GPU, RESOURCE_GPU, RESOURCE_GPU_CORE, RESOURCE_GPU_MEMORY,
                  RESOURCE_GPU_MEMORY_RATIO)


def _pick(resources: Obj | None) -> dict[str, str] | None:
    picked = {k: str(v) for k, v in (resources or {}).items() if k in _EXTENDED}
    return picked or None


def set_extended_resource_spec(pod: Obj) -> None:
    """Write the annotation when it differs from what the containers request.

    Raises MalformedValueError when the current annotation cannot be parsed.
    """
    containers: dict[str, ExtendedResourceContainerSpec] = {}
    for c in (pod.get("spec") or {}).get("containers") or []:
        res = c.get("resources") or {}
        requests, limits = _pick(res.get("requests")), _pick(res.get("limits"))
        if requests or limits:
            containers[c.get("name", "")] = ExtendedResourceContainerSpec(
                requests=requests, limits=limits)
    md = pod.setdefault("metadata", {})
    annotations = md.get("annotations") or {}
    current = parse_extended_resource_spec(annotations)
    if not containers:
        return
    wanted = ExtendedResourceSpec(containers=containers)
    if format_extended_resource_spec(current) == format_extended_resource_spec(wanted):
        return
    md["annotations"] = {**annotations,
                         ANNOTATION_EXTENDED_RESOURCE_SPEC: format_extended_resource_spec(wanted)}


def _int(resource: str, value: Any) -> int:
    try:
        return int(quantity_value(value))
    except (ValueError, ArithmeticError):
        raise MalformedValueError(resource, f"not a quantity: {value!r}") from None


def set_device_resource_spec(pod: Obj) -> None:
    """Rewrite ``koordinator.sh/gpu`` requests and fill in ``koordinator.sh/gpu.shared``."""
    for c in (pod.get("spec") or {}).get("containers") or []:
        res = c.get("resources") or {}
        requests = res.get("requests")
        if not requests:
            continue
        if RESOURCE_GPU in requests:
            count = requests[RESOURCE_GPU]
            for rl in (requests, res.get("limits")):
                if rl is None:
                    continue
                rl.pop(RESOURCE_GPU, None)
                rl[RESOURCE_GPU_CORE] = str(count)
                rl[RESOURCE_GPU_MEMORY_RATIO] = str(count)
        if not any(r in requests for r in _GPU_RESOURCES) or RESOURCE_GPU_SHARED in requests:
            continue
        shared = 1
        for name in (RESOURCE_GPU_MEMORY_RATIO, RESOURCE_GPU_CORE):
            if name in requests:
                value = _int(name, requests[name])
                if value > 100 and value % 100 == 0:
                    shared = value // 100
                    break
        requests[RESOURCE_GPU_SHARED] = str(shared)
        res.setdefault("limits", {})[RESOURCE_GPU_SHARED] = str(shared)


__all__ = ["set_device_resource_spec", "set_extended_resource_spec"]
