"""Batch resources per NUMA zone on the NodeResourceTopology (upstream ``calculateOnNUMALevel``
and ``prepareForNodeResourceTopology`` of `plugins/batchresource`, ``GetPodNUMARequestAndUsage``
and ``UpdateNRTZoneListIfNeeded`` of `plugins/util`).

NodeMetric has no per-NUMA usage, so upstream approximates: system usage, reservations and
dangling pod metrics are split evenly over the zones (``ceil(x / N)``); a pod's request and
usage go evenly to the NUMA nodes of its ``resource-status`` allocation, or to every zone when
it has none. ``batchresource`` applies its usual policy per zone to what ``zone_inputs``
returns; ``update_zone_list`` writes the results into the NRT's zones.

Memory is split in whole bytes; upstream splits the milli-value, so a zone's result can
differ from upstream's by a fraction of a byte per split term when a quantity is not a
multiple of the zone count.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from api.core import format_quantity
from api.extension.qos import QoSClass
from api.extension.resource import BATCH_CPU, BATCH_MEMORY
from manager.slo_controller.noderesource import inputs
from manager.slo_controller.noderesource.framework import NodeResource, PodInfo, Resources
from manager.slo_controller.noderesource.resourcesync import cpu_normalization_ratio, multiply_milli
from pkg.util.podresources import CPU, MEMORY, quantity_int

# An NRT takes part only when some zone reports one of these.
CHECKED_RESOURCES = (CPU, MEMORY)
ZONE_RESOURCES = (BATCH_CPU, BATCH_MEMORY)
FIELDS = ("capacity", "allocatable", "available")


@dataclass(slots=True)
class ZoneInputs:
    """One zone's terms of the batch formula (cpu in millicores, memory in bytes)."""

    name: str
    capacity: Resources
    reserved: Resources
    system_used: Resources
    hp_request: Resources
    hp_used: Resources
    hp_max_used_request: Resources


def divide(rl: Resources, n: int) -> Resources:
    return {k: math.ceil(v / n) for k, v in rl.items()} if n else dict(rl)


def zone_capacities(topology: Mapping[str, Any]) -> list[tuple[str, Resources]] | None:
    """Each zone's name and cpu/memory allocatable; None when no zone reports either.

    Raises ValueError on a malformed zone quantity."""
    zones = [z for z in topology.get("zones") or [] if isinstance(z, Mapping)]
    found = False
    out: list[tuple[str, Resources]] = []
    for zone in zones:
        capacity = inputs.zero()
        for info in zone.get("resources") or []:
            name = info.get("name") if isinstance(info, Mapping) else None
            if name in CHECKED_RESOURCES:
                found = True
                capacity[name] = quantity_int(name, info.get("allocatable", "0"))
        out.append((str(zone.get("name") or ""), capacity))
    return out if found else None


def split_pod(pod: PodInfo, request: Resources, usage: Resources, n: int
              ) -> tuple[list[Resources], list[Resources]]:
    """The pod's request and usage per zone."""
    # Ids outside the node's zones cannot be bound either: they do not count (upstream).
    allocated = [i for i in pod.numa_nodes if 0 <= i < n]
    if not allocated:
        return [divide(request, n)] * n, [divide(usage, n)] * n
    count, on = len(allocated), set(allocated)
    zero = inputs.zero()
    return ([divide(request, count) if i in on else zero for i in range(n)],
            [divide(usage, count) if i in on else zero for i in range(n)])


def zone_inputs(topology: Mapping[str, Any], node: Mapping[str, Any], pods: list[PodInfo],
                metrics: Mapping[str, Any] | None, system_used: Resources
                ) -> list[ZoneInputs] | None:
    """The formula's terms per zone; None when the NRT has no cpu/memory zones.

    Raises ValueError on a malformed zone quantity."""
    capacities = zone_capacities(topology)
    if capacities is None:
        return None
    n = len(capacities)
    reserved = inputs.node_reserved(node)
    req = [inputs.zero() for _ in range(n)]
    used = [inputs.zero() for _ in range(n)]
    max_used = [inputs.zero() for _ in range(n)]
    usages = inputs.pods_usage(metrics)
    seen: set[str] = set()
    for pod in inputs.active(pods):
        metric = usages.get(pod.key)
        if metric is not None:
            seen.add(pod.key)
        if pod.priority_class in inputs.LOW_PRIORITY:
            continue
        usage = metric[0] if metric is not None else pod.requests
        zone_req, zone_usage = split_pod(pod, pod.requests, usage, n)
        for i in range(n):
            req[i] = inputs.add(req[i], zone_req[i])
            if metric is None:
                # Unlike the node level, a pod without metric does count in HPMaxUsedReq here.
                used[i] = inputs.add(used[i], zone_req[i])
                max_used[i] = inputs.add(max_used[i], zone_req[i])
                continue
            if pod.qos == QoSClass.LSE.value:
                used[i] = inputs.add(used[i], {CPU: zone_req[i][CPU],
                                               MEMORY: zone_usage[i][MEMORY]})
            else:
                used[i] = inputs.add(used[i], zone_usage[i])
            max_used[i] = inputs.add(max_used[i], inputs.rmax(zone_usage[i], zone_req[i]))
    for key, (usage, priority) in usages.items():
        if key not in seen and priority not in inputs.LOW_PRIORITY:
            share = divide(usage, n)
            for i in range(n):
                used[i] = inputs.add(used[i], share)
                max_used[i] = inputs.add(max_used[i], share)
    reserved_share, system_share = divide(reserved, n), divide(system_used, n)
    return [ZoneInputs(name, capacity, reserved_share, system_share, req[i], used[i],
                       max_used[i]) for i, (name, capacity) in enumerate(capacities)]


def _is_zero(quantity: Any) -> bool:
    try:
        return quantity_int(CPU, quantity) == 0
    except (ValueError, TypeError, ArithmeticError):
        return False  # malformed: rewritten to zero


def _differs(old: Any, new: int, name: str, threshold: float) -> bool:
    try:
        before = quantity_int(name, old)
    except (ValueError, TypeError, ArithmeticError):
        return True
    return abs(new - before) > before * threshold


def update_zone_list(zones: list[dict[str, Any]], nr: NodeResource, threshold: float) -> bool:
    """Write the zone results into ``zones`` (the NRT's, changed in place); True when a value
    moved past ``threshold``, an entry was added, or a zone without results was zeroed."""
    ratio = cpu_normalization_ratio(nr)
    changed = False
    for zone in zones:
        resources: list[dict[str, Any]] = zone.setdefault("resources", []) or []
        zone["resources"] = resources
        results = nr.zone_resources.get(zone.get("name") or "")
        if results is None:
            # No result for this zone: zero the batch entries rather than remove them (upstream).
            for info in resources:
                if info.get("name") in ZONE_RESOURCES and not all(
                        _is_zero(info.get(k, "0")) for k in FIELDS):
                    info.update(capacity="0", allocatable="0", available="0")
                    changed = True
            continue
        for name, value in sorted(results.items()):
            if name == BATCH_CPU and ratio > 1.0:
                value = multiply_milli(value, ratio)
            text = format_quantity(value)
            entry = next((r for r in resources if r.get("name") == name), None)
            if entry is None:
                resources.append({"name": name, "capacity": text, "allocatable": text,
                                  "available": text})
                resources.sort(key=lambda r: r.get("name") or "")
                changed = True
                continue
            for key in FIELDS:
                if _differs(entry.get(key, "0"), value, name, threshold):
                    entry[key] = text
                    changed = True
    return changed


def without_batch(topology: Mapping[str, Any]) -> list[Any]:
    """The zones as koordlet reports them (our batch entries left out), to tell its reports
    from our own writes."""
    return [[z.get("name"), [r for r in z.get("resources") or []
                             if r.get("name") not in ZONE_RESOURCES]]
            for z in topology.get("zones") or [] if isinstance(z, Mapping)]


__all__ = ["CHECKED_RESOURCES", "ZONE_RESOURCES", "ZoneInputs", "divide", "split_pod",
           "update_zone_list", "without_batch", "zone_capacities", "zone_inputs"]
