"""The BatchResource plugin: ``kubernetes.io/batch-cpu`` and ``kubernetes.io/batch-memory``
(upstream `pkg/slo-controller/noderesource/plugins/batchresource` and
``CalculateBatchResourceByPolicy`` of `plugins/util`).

Batch gets what high-priority (HP: neither koord-batch nor koord-free) pods and the system
leave, minus a safety margin::

    byUsage           = max(capacity − margin − max(systemUsed, nodeReserved) − HPUsed, 0)
    byRequest         = max(capacity − margin − nodeReserved − HPRequest, 0)
    byMaxUsageRequest = max(capacity − margin − max(systemUsed, nodeReserved) − HPMaxUsedReq, 0)

then an optional cap at ``batch*ThresholdPercent`` of capacity. The messages are upstream's,
character for character (upstream's tests assert them). When the node has a
NodeResourceTopology with cpu/memory zones, the same formula runs per zone (``numazone``) and
the items carry the zone results, which the controller writes to the NRT (PreUpdate).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from api.configuration import CalculatePolicy, ColocationStrategy
from api.core import format_quantity
from api.errors import MalformedValueError
from api.extension.codec import decode_json
from api.extension.node import (
    ANNOTATION_NODE_ORIGIN_EXTENDED_ALLOCATABLE,
    third_party_allocated_by_priority,
)
from api.extension.priority import PriorityClass
from api.extension.qos import QoSClass
from api.extension.resource import BATCH_CPU, BATCH_MEMORY
from manager.slo_controller.noderesource import inputs, numazone
from manager.slo_controller.noderesource.extendedresource import ExtendedResourcePlugin
from manager.slo_controller.noderesource.framework import (
    NodeResource,
    PluginInputs,
    PodInfo,
    ResourceItem,
    ResourceMetrics,
    Resources,
)
from pkg.util.podresources import CPU, MEMORY, quantity_int

log = logging.getLogger(__name__)

PLUGIN_NAME = "BatchResource"
DEGRADE_MESSAGE = ("degrade node resource because of abnormal nodeMetric, "
                   "reason: degradedByBatchResource")


def reserve_ratio(reclaim_percent: int) -> float:
    return float(100 - reclaim_percent) / 100.0


def safety_margin(strategy: ColocationStrategy, capacity: Resources) -> Resources:
    """The share of the node batch must never take (``100 − *ReclaimThresholdPercent``)."""
    return {
        CPU: int(float(capacity[CPU]) * reserve_ratio(strategy.cpu_reclaim_threshold_percent or 0)),
        MEMORY: int(float(capacity[MEMORY])
                    * reserve_ratio(strategy.memory_reclaim_threshold_percent or 0)),
    }


def hp_accumulate(pods: list[PodInfo], metrics: Mapping[str, Any] | None
                  ) -> tuple[Resources, Resources, Resources]:
    """(HPRequest, HPUsed, HPMaxUsedReq) over the active pods and the dangling metrics."""
    usages = inputs.pods_usage(metrics)
    req, used, max_used_req = inputs.zero(), inputs.zero(), inputs.zero()
    seen: set[str] = set()
    for pod in inputs.active(pods):
        seen.add(pod.key)
        if pod.priority_class in inputs.LOW_PRIORITY:
            continue
        req = inputs.add(req, pod.requests)
        metric = usages.get(pod.key)
        if metric is None:
            # Upstream quirk: request counts as used, but not in HPMaxUsedReq.
            used = inputs.add(used, pod.requests)
            continue
        usage = metric[0]
        if pod.qos == QoSClass.LSE.value:
            # LSE cpus are bound exclusively: the whole request is taken whatever the usage.
            used = inputs.add(used, {CPU: pod.requests[CPU], MEMORY: usage[MEMORY]})
        else:
            used = inputs.add(used, usage)
        max_used_req = inputs.add(max_used_req, inputs.rmax(pod.requests, usage))
    # Metrics of pods no longer (or not yet) in the list still occupy the node.
    for key, (usage, priority) in usages.items():
        if key not in seen and priority not in inputs.LOW_PRIORITY:
            used = inputs.add(used, usage)
            max_used_req = inputs.add(max_used_req, usage)
    return req, used, max_used_req


def _capped(value: int, capacity: int, percent: int | None) -> tuple[int, str | None]:
    if percent is None:
        return value, None
    ratio = float(percent) / 100
    return min(value, int(float(capacity) * ratio)), inputs.go_float(ratio)


def _wrap(ratio: str | None, cap: int, body: str) -> str:
    return body if ratio is None else f"min(nodeCapacity:{cap} * thresholdRatio:{ratio}, {body})"


def calculate_batch(strategy: ColocationStrategy, node: Mapping[str, Any], pods: list[PodInfo],
                    metrics: Mapping[str, Any] | None) -> list[ResourceItem]:
    """batch-cpu (millicores) and batch-memory (bytes) by the strategy's policies."""
    capacity = inputs.node_capacity(node)
    hp_req, hp_used, hp_max = hp_accumulate(pods, metrics)
    return by_policy(strategy, capacity, safety_margin(strategy, capacity),
                     inputs.node_reserved(node), system_used(metrics), hp_req, hp_used, hp_max)


def system_used(metrics: Mapping[str, Any] | None) -> Resources:
    """System usage plus the usage of host applications above batch priority."""
    return inputs.add(inputs.system_usage(metrics),
                      inputs.host_app_hp_used(metrics, PriorityClass.BATCH))


def by_policy(strategy: ColocationStrategy, capacity: Resources, margin: Resources,
              reserved: Resources, system_used: Resources, hp_req: Resources,
              hp_used: Resources, hp_max: Resources) -> list[ResourceItem]:
    """Upstream ``CalculateBatchResourceByPolicy``: the node's or one NUMA zone's batch items."""
    sys_or_reserved = inputs.rmax(system_used, reserved)
    base = inputs.sub(capacity, margin)
    by_usage = inputs.clamp(inputs.sub(inputs.sub(base, sys_or_reserved), hp_used))
    by_request = inputs.clamp(inputs.sub(inputs.sub(base, reserved), hp_req))
    by_max = inputs.clamp(inputs.sub(inputs.sub(base, sys_or_reserved), hp_max))

    cap_c, cap_m = capacity[CPU], capacity[MEMORY]
    if strategy.cpu_calculate_policy == CalculatePolicy.MAX_USAGE_REQUEST:
        cpu, hp_label, hp_cpu = by_max[CPU], "podHPMaxUsedRequest", hp_max[CPU]
    else:
        cpu, hp_label, hp_cpu = by_usage[CPU], "podHPUsed", hp_used[CPU]
    cpu, ratio = _capped(cpu, cap_c, strategy.batch_cpu_threshold_percent)
    cpu_msg = f"batchAllocatable[CPU(Milli-Core)]:{cpu} = " + _wrap(
        ratio, cap_c, f"nodeCapacity:{cap_c} - nodeSafetyMargin:{margin[CPU]} - "
        f"systemUsageOrNodeReserved:{sys_or_reserved[CPU]} - {hp_label}:{hp_cpu}")

    g = inputs.giga
    policy = strategy.memory_calculate_policy
    if policy == CalculatePolicy.REQUEST:
        memory = by_request[MEMORY]
        tail = f"nodeReserved:{g(reserved[MEMORY])} - podHPRequest:{g(hp_req[MEMORY])}"
    elif policy == CalculatePolicy.MAX_USAGE_REQUEST:
        memory = by_max[MEMORY]
        tail = (f"systemUsage:{g(sys_or_reserved[MEMORY])} - "
                f"podHPMaxUsedRequest:{g(hp_max[MEMORY])}")
    else:
        memory = by_usage[MEMORY]
        tail = f"systemUsage:{g(sys_or_reserved[MEMORY])} - podHPUsed:{g(hp_used[MEMORY])}"
    memory, mratio = _capped(memory, cap_m, strategy.batch_memory_threshold_percent)
    if mratio is not None and policy not in (CalculatePolicy.REQUEST,
                                             CalculatePolicy.MAX_USAGE_REQUEST):
        # Upstream quirk: the capped usage message names HPMaxUsedReq.
        tail = (f"systemUsage:{g(sys_or_reserved[MEMORY])} - "
                f"podHPMaxUsedRequest:{g(hp_max[MEMORY])}")
    mem_msg = f"batchAllocatable[Mem(GB)]:{g(memory)} = " + _wrap(
        mratio, g(cap_m),
        f"nodeCapacity:{g(cap_m)} - nodeSafetyMargin:{g(margin[MEMORY])} - {tail}")
    return [ResourceItem(BATCH_CPU, cpu, cpu_msg), ResourceItem(BATCH_MEMORY, memory, mem_msg)]


def _origin_annotation(node: dict[str, Any], nr: NodeResource) -> None:
    """Record batch allocatable before third-party allocations, merged into the annotation."""
    annotations = (node.get("metadata") or {}).get("annotations")
    if annotations is None:
        return  # upstream quirk: no annotations map, nothing written
    try:
        origin = decode_json(ANNOTATION_NODE_ORIGIN_EXTENDED_ALLOCATABLE,
                             annotations.get(ANNOTATION_NODE_ORIGIN_EXTENDED_ALLOCATABLE) or "{}")
        if not isinstance(origin, dict):
            origin = {}
    except MalformedValueError:  # also JSON nested too deep to decode: rewritten afresh
        origin = {}
    found = origin.get("resources")
    resources: dict[str, Any] = found if isinstance(found, dict) else {}
    for name in (BATCH_CPU, BATCH_MEMORY):
        resources[name] = format_quantity(max(nr.resources.get(name) or 0, 0))
    origin["resources"] = resources
    annotations[ANNOTATION_NODE_ORIGIN_EXTENDED_ALLOCATABLE] = json.dumps(
        origin, separators=(",", ":"), sort_keys=True)


def _subtract_third_party(node: dict[str, Any]) -> None:
    annotations = (node.get("metadata") or {}).get("annotations")
    try:
        allocated = third_party_allocated_by_priority(annotations, PriorityClass.BATCH.value)
    except MalformedValueError:
        return
    if not allocated:
        return
    status = node["status"]
    for name in (BATCH_CPU, BATCH_MEMORY):
        if name not in status.get("allocatable", {}):
            continue
        origin = quantity_int(name, status["allocatable"][name])
        used = quantity_int(name, allocated.get(name, "0"))
        value = format_quantity(max(origin - used, 0))
        status["capacity"][name] = value
        status["allocatable"][name] = value


class BatchResourcePlugin(ExtendedResourcePlugin):
    """Calculate, Reset, NodePrepare and NodeStatusCheck for batch-cpu / batch-memory."""

    name = PLUGIN_NAME
    resource_names = (BATCH_CPU, BATCH_MEMORY)
    degrade_message = DEGRADE_MESSAGE

    def compute(self, strategy: ColocationStrategy, node: Mapping[str, Any],
                pods: list[PodInfo], metrics: ResourceMetrics,
                extra: PluginInputs) -> list[ResourceItem]:
        items = calculate_batch(strategy, node, pods, metrics.status)
        if extra.topology is not None:
            for item, zones in zip(items, self.zones(strategy, node, pods, metrics.status,
                                                     extra.topology), strict=False):
                item.zones = zones
        return items

    def zones(self, strategy: ColocationStrategy, node: Mapping[str, Any], pods: list[PodInfo],
              metrics: Mapping[str, Any] | None, topology: Mapping[str, Any]
              ) -> list[dict[str, int]]:
        """[batch-cpu by zone, batch-memory by zone]; empty when the NRT has no cpu/memory
        zones or a malformed one (logged: the node-level result still stands)."""
        try:
            zones = numazone.zone_inputs(topology, node, pods, metrics, system_used(metrics))
        except (ValueError, TypeError, ArithmeticError) as err:
            log.warning("NodeResourceTopology %s: malformed zone resources: %s",
                        (topology.get("metadata") or {}).get("name"), err)
            return []
        if zones is None:
            return []
        cpu: dict[str, int] = {}
        memory: dict[str, int] = {}
        for z in zones:
            values = by_policy(strategy, z.capacity, safety_margin(strategy, z.capacity),
                               z.reserved, z.system_used, z.hp_request, z.hp_used,
                               z.hp_max_used_request)
            cpu[z.name], memory[z.name] = values[0].quantity or 0, values[1].quantity or 0
        return [cpu, memory]

    def prepare(self, node: dict[str, Any], nr: NodeResource) -> None:
        super().prepare(node, nr)
        _origin_annotation(node, nr)
        if not any(nr.resets.get(name) for name in self.resource_names):
            _subtract_third_party(node)


__all__ = ["BatchResourcePlugin", "DEGRADE_MESSAGE", "PLUGIN_NAME", "by_policy",
           "calculate_batch", "hp_accumulate", "safety_margin", "system_used"]
