"""Writing extended resources onto a node and deciding whether the change is worth a write
(upstream ``PrepareNodeForResource`` in `plugins/util` and ``IsResourceDiff`` in `pkg/util`).

batch-cpu is written multiplied by the node's CPU normalization ratio when that is above 1:
the ratio says how much faster this node's cores are than the reference core, and batch pods
ask for reference cores.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from api.core import format_quantity
from api.extension.cpu_normalization import ANNOTATION_CPU_NORMALIZATION_RATIO
from api.extension.resource import BATCH_CPU
from manager.slo_controller.noderesource.framework import NodeResource
from pkg.util.podresources import quantity_int


def cpu_normalization_ratio(nr: NodeResource) -> float:
    """The ratio CPUNormalization calculated for the node; -1 when absent or unparsable."""
    try:
        return float(nr.annotations.get(ANNOTATION_CPU_NORMALIZATION_RATIO, "-1"))
    except ValueError:
        return -1.0


def multiply_milli(value: int, ratio: float) -> int:
    """Upstream ``MultiplyMilliQuant`` on a whole-number quantity, rounded up to a whole number
    again (extended resources must be integers): ``ceil(int64(float64(value·1000)·ratio)/1000)``."""
    milli = int(float(value * 1000) * ratio)
    return -(-milli // 1000)


def write_resource(node: dict[str, Any], nr: NodeResource, name: str) -> None:
    """Set ``name`` in both ``status.capacity`` and ``status.allocatable`` (the same integer:
    extended resources must be whole numbers), or delete it when the result is absent or reset.
    batch-cpu is multiplied by the CPU normalization ratio when that is above 1."""
    status = node.setdefault("status", {})
    capacity = status.setdefault("capacity", {})
    allocatable = status.setdefault("allocatable", {})
    value = nr.resources.get(name)
    if value is None or nr.resets.get(name):
        capacity.pop(name, None)
        allocatable.pop(name, None)
        return
    if name == BATCH_CPU:
        ratio = cpu_normalization_ratio(nr)
        if ratio > 1.0:
            value = multiply_milli(int(value), ratio)
    text = format_quantity(int(value))
    capacity[name] = text
    allocatable[name] = text


def _allocatable(node: Mapping[str, Any]) -> Mapping[str, Any]:
    return (node.get("status") or {}).get("allocatable") or {}


def _milli(name: str, quantity: Any) -> int:
    # Quantity.MilliValue of an extended resource; batch-cpu's integer is already millicores,
    # so this is the integer × 1000 for every name.
    return quantity_int("cpu", quantity)


def is_resource_diff(old: Mapping[str, Any], new: Mapping[str, Any], names: Iterable[str],
                     threshold: float) -> tuple[bool, str]:
    """Whether any of ``names`` in allocatable changed: presence differs, or
    ``|new − old| > old × threshold`` (strictly; an old 0 differs from any non-zero new)."""
    old_alloc, new_alloc = _allocatable(old), _allocatable(new)
    for name in names:
        if (name in old_alloc) != (name in new_alloc):
            return True, f"{name} added or removed"
        if name not in old_alloc:
            continue
        try:
            o, n = _milli(name, old_alloc[name]), _milli(name, new_alloc[name])
        except (ValueError, TypeError, ArithmeticError):
            return True, f"{name} unparsable on the node"
        if abs(n - o) > o * threshold:
            return True, f"{name} changed from {old_alloc[name]} to {new_alloc[name]}"
    return False, ""


__all__ = ["cpu_normalization_ratio", "is_resource_diff", "multiply_milli", "write_resource"]
