"""The MidResource plugin: ``kubernetes.io/mid-cpu`` and ``kubernetes.io/mid-memory``
(upstream `pkg/slo-controller/noderesource/plugins/midresource`).

Mid gets what prod pods were given but do not use (``prodReclaimableMetric`` reported by
koordlet, bounded by what the node leaves unused), plus ``midUnallocatedPercent`` of what no
prod pod requested, capped at ``mid*ThresholdPercent`` of capacity. ``midReclaimMode: static``
instead reserves a fixed share of capacity.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from api.configuration import ColocationStrategy, default_colocation_strategy
from api.configuration.colocation import MID_RECLAIM_MODE_STATIC
from api.extension.priority import PriorityClass
from api.extension.resource import MID_CPU, MID_MEMORY
from manager.slo_controller.noderesource import inputs
from manager.slo_controller.noderesource.extendedresource import ExtendedResourcePlugin
from manager.slo_controller.noderesource.framework import (
    PluginInputs,
    PodInfo,
    ResourceItem,
    ResourceMetrics,
    Resources,
)
from pkg.util.podresources import CPU, MEMORY

PLUGIN_NAME = "MidResource"
DEGRADE_MESSAGE = ("degrade node Mid resource because of abnormal nodeMetric, "
                   "reason: degradedByMidResource")
NOT_PROD = frozenset({PriorityClass.MID.value, PriorityClass.BATCH.value,
                      PriorityClass.FREE.value})
_DEFAULTS = default_colocation_strategy()


def _percent(strategy: ColocationStrategy, field: str) -> int:
    value = getattr(strategy, field)
    return value if value is not None else getattr(_DEFAULTS, field)


def _scaled(value: int, percent: int) -> int:
    return int(float(value) * float(percent) / 100)


def prod_allocated(pods: list[PodInfo]) -> Resources:
    total = inputs.zero()
    for pod in inputs.active(pods):
        if pod.priority_class not in NOT_PROD:
            total = inputs.add(total, pod.requests)
    return total


def calculate_mid(strategy: ColocationStrategy, node: Mapping[str, Any], pods: list[PodInfo],
                  metrics: Mapping[str, Any] | None) -> list[ResourceItem]:
    capacity = inputs.node_capacity(node)
    cpu_t = _percent(strategy, "mid_cpu_threshold_percent")
    mem_t = _percent(strategy, "mid_memory_threshold_percent")
    limit = {CPU: _scaled(capacity[CPU], cpu_t), MEMORY: _scaled(capacity[MEMORY], mem_t)}
    g = inputs.giga
    if strategy.mid_reclaim_mode == MID_RECLAIM_MODE_STATIC:
        reserved = {CPU: _percent(strategy, "mid_static_cpu_reserved_percent"),
                    MEMORY: _percent(strategy, "mid_static_memory_reserved_percent")}
        value = {name: min(_scaled(capacity[name], reserved[name]), limit[name])
                 for name in (CPU, MEMORY)}
        cpu_msg = (f"midAllocatable[CPU(milli-core)]:{value[CPU]} = min(nodeCapacity:"
                   f"{capacity[CPU]} * staticReservedPercent:{reserved[CPU]}, nodeCapacity:"
                   f"{capacity[CPU]} * thresholdRatio:{inputs.go_float(cpu_t / 100)})")
        mem_msg = (f"midAllocatable[Memory(GB)]:{g(value[MEMORY])} = min(nodeCapacity:"
                   f"{g(capacity[MEMORY])} * staticReservedPercent:{reserved[MEMORY]}, "
                   f"nodeCapacity:{g(capacity[MEMORY])} * thresholdRatio:"
                   f"{inputs.go_float(mem_t / 100)})")
        return [ResourceItem(MID_CPU, value[CPU], cpu_msg),
                ResourceItem(MID_MEMORY, value[MEMORY], mem_msg)]

    reclaimable = inputs.prod_reclaimable(metrics)
    system_used = inputs.add(inputs.system_usage(metrics),
                             inputs.host_app_hp_used(metrics, PriorityClass.MID))
    reserved_m = inputs.rmax(inputs.node_reserved(node), system_used)
    unallocated = inputs.clamp(inputs.sub(inputs.sub(capacity, reserved_m),
                                          prod_allocated(pods)))
    usage = inputs.node_usage(metrics)
    unused = inputs.sub(capacity, usage) if usage is not None else inputs.zero()
    unalloc_p = _percent(strategy, "mid_unallocated_percent")
    value = {}
    for name in (CPU, MEMORY):
        v = min(reclaimable[name], unused[name])
        v = max(v, 0) + _scaled(unallocated[name], unalloc_p)
        value[name] = min(v, limit[name])
    ratio = inputs.go_float(unalloc_p / 100)
    cpu_msg = (f"midAllocatable[CPU(milli-core)]:{value[CPU]} = min(min(ProdReclaimable:"
               f"{reclaimable[CPU]}, NodeUnused:{unused[CPU]}) + Unallocated:{unallocated[CPU]}"
               f" * midUnallocatedRatio:{ratio}, NodeCapacity:{capacity[CPU]} * thresholdRatio:"
               f"{inputs.go_float(cpu_t / 100)})")
    mem_msg = (f"midAllocatable[Memory(GB)]:{g(value[MEMORY])} = min(min(ProdReclaimable:"
               f"{g(reclaimable[MEMORY])}, NodeUnused:{g(unused[MEMORY])}) + Unallocated:"
               f"{g(unallocated[MEMORY])} * midUnallocatedRatio:{ratio}, NodeCapacity:"
               f"{g(capacity[MEMORY])} * thresholdRatio:{inputs.go_float(mem_t / 100)})")
    return [ResourceItem(MID_CPU, value[CPU], cpu_msg),
            ResourceItem(MID_MEMORY, value[MEMORY], mem_msg)]


class MidResourcePlugin(ExtendedResourcePlugin):
    """Calculate, Reset, NodePrepare and NodeStatusCheck for mid-cpu / mid-memory."""

    name = PLUGIN_NAME
    resource_names = (MID_CPU, MID_MEMORY)
    degrade_message = DEGRADE_MESSAGE

    def compute(self, strategy: ColocationStrategy, node: Mapping[str, Any],
                pods: list[PodInfo], metrics: ResourceMetrics,
                extra: PluginInputs) -> list[ResourceItem]:
        return calculate_mid(strategy, node, pods, metrics.status)


__all__ = ["DEGRADE_MESSAGE", "MidResourcePlugin", "PLUGIN_NAME", "calculate_mid",
           "prod_allocated"]
