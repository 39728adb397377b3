"""Inputs shared by the batch and mid calculations (upstream
`pkg/slo-controller/noderesource/plugins/util` and `pkg/util`: GetNodeCapacity,
GetNodeReservation, GetHostAppHPUsed, GetPodMetricUsage, the degrade check).

Quantities are integers: cpu in millicores, memory in bytes (``pkg.util.podresources``).
Malformed quantities or annotations never raise: upstream ignores them (logs and counts 0), so
a single bad node or pod entry cannot stop a node's calculation. A NodeMetric whose cpu or
memory usage cannot be a measurement (``untrusted_usage``: malformed, non-finite, negative,
beyond int64) counts as degraded, as a stale one does: subtracting 1e30 or -1e30 would give 0
or absurd batch resources instead of the reset upstream applies to an abnormal NodeMetric.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from api.errors import MalformedValueError
from api.extension.node import parse_node_reservation
from api.extension.numa import ANNOTATION_RESOURCE_STATUS, parse_resource_status
from api.extension.priority import (
    PriorityClass,
    default_priority_value,
    get_pod_priority_class_with_default,
)
from api.extension.qos import get_pod_qos_class_with_default
from api.meta import parse_timestamp
from manager.slo_controller.noderesource.framework import PodInfo, Resources
from pkg.util.cpuset import parse_cpuset
from pkg.util.podresources import CPU, MEMORY, measured_quantity_int, pod_requests, quantity_int

log = logging.getLogger(__name__)

CPU_MEMORY = (CPU, MEMORY)
LOW_PRIORITY = frozenset({PriorityClass.BATCH.value, PriorityClass.FREE.value})
ACTIVE_PHASES = frozenset({"Running", "Pending"})


def zero() -> Resources:
    return {CPU: 0, MEMORY: 0}


def cpu_memory(rl: Mapping[str, Any] | None) -> Resources:
    """cpu and memory of a JSON ResourceList as integers; absent or malformed → 0."""
    out = zero()
    if not rl:
        return out
    for name in CPU_MEMORY:
        q = rl.get(name)
        if q is None:
            continue
        try:
            out[name] = quantity_int(name, q)
        except (ValueError, TypeError, ArithmeticError):
            log.warning("ignoring malformed quantity %s=%r", name, q)
    return out


def add(a: Resources, b: Resources) -> Resources:
    return {CPU: a[CPU] + b[CPU], MEMORY: a[MEMORY] + b[MEMORY]}


def sub(a: Resources, b: Resources) -> Resources:
    return {CPU: a[CPU] - b[CPU], MEMORY: a[MEMORY] - b[MEMORY]}


def rmax(a: Resources, b: Resources) -> Resources:
    return {CPU: max(a[CPU], b[CPU]), MEMORY: max(a[MEMORY], b[MEMORY])}


def clamp(a: Resources) -> Resources:
    return {CPU: max(a[CPU], 0), MEMORY: max(a[MEMORY], 0)}


def _status(node: Mapping[str, Any]) -> Mapping[str, Any]:
    return node.get("status") or {}


def node_capacity(node: Mapping[str, Any]) -> Resources:
    """``node.status.capacity`` restricted to cpu and memory."""
    return cpu_memory(_status(node).get("capacity"))


def kubelet_reserved(node: Mapping[str, Any]) -> Resources:
    """What kubelet keeps back: ``max(capacity − allocatable, 0)``."""
    status = _status(node)
    return clamp(sub(cpu_memory(status.get("capacity")), cpu_memory(status.get("allocatable"))))


def anno_reserved(node: Mapping[str, Any]) -> Resources:
    """The ``node.koordinator.sh/reservation`` annotation; ``reservedCPUs`` replaces
    ``resources.cpu`` with its CPU count. Unparsable → nothing reserved (logged)."""
    annotations = (node.get("metadata") or {}).get("annotations")
    try:
        reservation = parse_node_reservation(annotations)
        reserved = cpu_memory(reservation.resources)
        if reservation.reserved_cpus:
            reserved[CPU] = len(parse_cpuset(reservation.reserved_cpus)) * 1000
    except (MalformedValueError, ValueError) as err:
        log.warning("node %s: ignoring reservation annotation: %s",
                    (node.get("metadata") or {}).get("name"), err)
        return zero()
    return reserved


def node_reserved(node: Mapping[str, Any]) -> Resources:
    """``max(kubeletReserved, annoReserved)``."""
    return rmax(kubelet_reserved(node), anno_reserved(node))


def _resources_of(usage: Mapping[str, Any] | None) -> Resources:
    return cpu_memory((usage or {}).get("resources"))


def system_usage(status: Mapping[str, Any] | None) -> Resources:
    return _resources_of(((status or {}).get("nodeMetric") or {}).get("systemUsage"))


def node_usage(status: Mapping[str, Any] | None) -> Resources | None:
    """``nodeMetric.nodeUsage`` when it reports both cpu and memory, else None."""
    usage = (((status or {}).get("nodeMetric") or {}).get("nodeUsage") or {}).get("resources")
    if not usage or CPU not in usage or MEMORY not in usage:
        return None
    return cpu_memory(usage)


def host_app_hp_used(status: Mapping[str, Any] | None, than: PriorityClass) -> Resources:
    """Usage of host applications with a strictly higher default priority value than ``than``
    (for batch: prod and mid apps; for mid: prod apps; no priority never counts)."""
    bar = default_priority_value(than)
    total = zero()
    for app in (status or {}).get("hostApplicationMetric") or ():
        if default_priority_value(app.get("priority") or "") > bar:
            total = add(total, _resources_of(app.get("usage")))
    return total


def pods_usage(status: Mapping[str, Any] | None) -> dict[str, tuple[Resources, str]]:
    """``podsMetric`` as ``namespace/name`` → (usage, priority)."""
    out: dict[str, tuple[Resources, str]] = {}
    for entry in (status or {}).get("podsMetric") or ():
        key = f"{entry.get('namespace') or ''}/{entry.get('name') or ''}"
        out[key] = (_resources_of(entry.get("podUsage")), entry.get("priority") or "")
    return out


def prod_reclaimable(status: Mapping[str, Any] | None) -> Resources:
    return _resources_of(((status or {}).get("prodReclaimableMetric") or {}).get("resource"))


def pod_info(pod: Mapping[str, Any]) -> PodInfo:
    """The summary of a pod the calculation reads (priority and QoS with defaults, requests)."""
    meta = pod.get("metadata") or {}
    try:
        requests = pod_requests(pod)
    except (ValueError, TypeError, ArithmeticError) as err:
        log.warning("pod %s/%s: ignoring malformed requests: %s",
                    meta.get("namespace"), meta.get("name"), err)
        requests = {}
    return PodInfo(
        key=f"{meta.get('namespace') or ''}/{meta.get('name') or ''}",
        phase=(pod.get("status") or {}).get("phase") or "",
        priority_class=get_pod_priority_class_with_default(pod).value,
        qos=get_pod_qos_class_with_default(pod).value,
        requests={CPU: requests.get(CPU, 0), MEMORY: requests.get(MEMORY, 0)},
        numa_nodes=numa_nodes(pod),
    )


def numa_nodes(pod: Mapping[str, Any]) -> tuple[int, ...]:
    """The NUMA node ids of the pod's ``resource-status`` allocation; a malformed annotation
    counts as no allocation (upstream treats the pod as sharing every NUMA node)."""
    meta = pod.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    if ANNOTATION_RESOURCE_STATUS not in annotations:
        return ()
    try:
        status = parse_resource_status(annotations)
    except MalformedValueError as err:
        log.debug("pod %s/%s: %s", meta.get("namespace"), meta.get("name"), err)
        return ()
    return tuple(r.node for r in status.numa_node_resources or ())


def active(pods: Iterable[PodInfo]) -> list[PodInfo]:
    """Pods in phase Running or Pending: the only ones that hold resources."""
    return [p for p in pods if p.phase in ACTIVE_PHASES]


def _usage_lists(status: Mapping[str, Any]) -> Iterable[tuple[str, Any]]:
    """(JSON path, ResourceList) of every usage the calculations read."""
    node_metric = status.get("nodeMetric") or {}
    for key in ("nodeUsage", "systemUsage"):
        yield f"status.nodeMetric.{key}.resources", (node_metric.get(key) or {}).get("resources")
    for i, pod in enumerate(status.get("podsMetric") or ()):
        yield f"status.podsMetric[{i}].podUsage.resources", ((pod or {}).get("podUsage")
                                                             or {}).get("resources")
    for i, app in enumerate(status.get("hostApplicationMetric") or ()):
        yield (f"status.hostApplicationMetric[{i}].usage.resources",
               ((app or {}).get("usage") or {}).get("resources"))
    yield ("status.prodReclaimableMetric.resource.resources",
           ((status.get("prodReclaimableMetric") or {}).get("resource") or {}).get("resources"))


def untrusted_usage(status: Mapping[str, Any] | None) -> str | None:
    """Why the NodeMetric's cpu/memory usage cannot be trusted (field path and problem), or
    None. Upstream could not decode such an object at all, so it would have no NodeMetric."""
    for path, rl in _usage_lists(status or {}):
        for name in CPU_MEMORY:
            q = (rl or {}).get(name) if isinstance(rl, Mapping) else None
            if q is None:
                continue
            try:
                measured_quantity_int(name, q)
            except (ValueError, TypeError) as err:
                return f"{path}: {err}"
    return None


def is_degraded(status: Mapping[str, Any] | None, degrade_minutes: int, now: float) -> bool:
    """No NodeMetric, no ``updateTime``, ``now > updateTime + degradeTimeMinutes``, or an
    untrusted usage (``untrusted_usage``)."""
    if status is None or untrusted_usage(status) is not None:
        return True
    updated = parse_timestamp(status.get("updateTime"))
    return updated is None or now > updated + degrade_minutes * 60


def go_float(value: float) -> str:
    """A float as Go's ``%v`` prints it (``1``, ``0.5``, ``0.35``)."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def giga(value: int) -> int:
    """Quantity.ScaledValue(Giga): rounded up."""
    return -(-value // 10**9)


__all__ = [
    "ACTIVE_PHASES", "CPU_MEMORY", "LOW_PRIORITY", "active", "add", "anno_reserved", "clamp",
    "cpu_memory", "giga", "go_float", "host_app_hp_used", "is_degraded",
    "kubelet_reserved", "node_capacity", "node_reserved", "node_usage",
    "pod_info", "pods_usage", "prod_reclaimable", "rmax", "sub", "system_usage",
    "untrusted_usage", "zero",
]
