"""Does a pod's request fit a node's free resources? The arithmetic of NodeResourcesFit's Filter.

Corresponds to kubernetes ``pkg/scheduler/framework/plugins/noderesources/fit.go``
(``computePodResourceRequest``, ``fitsRequest``, ``InsufficientResource``, ``Fits``), v1.35.

A node fails for every resource the pod requests more of than the node has free
(allocatable − requested), with the reason ``Insufficient <name>``, and for the pod count with
``Too many pods``; a request larger than the node's whole allocatable cannot be helped by
preemption (``unresolvable``). cpu, memory and ephemeral-storage are checked when requested,
then each scalar resource in the pod's order; an extended resource named in
``ignoredResources``, or whose prefix (before "/") is in ``ignoredResourceGroups``, is not.
``fits_mask`` does the same over every node of a Snapshot at once.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from decimal import Decimal

import numpy as np

from api.core import QuantityFormat, format_quantity
from pkg.util.podresources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from scheduler.apis.config.names import is_extended_resource_name
from scheduler.framework.plugins.noderesources.resource_names import (
    HUGEPAGES_PREFIX,
    is_scalar_resource_name,
)
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.types import NodeInfo

TOO_MANY_PODS = "Too many pods"
_FIXED = (CPU, MEMORY, EPHEMERAL_STORAGE)


@dataclass(frozen=True, slots=True)
class PodRequest:
    """The (resource, quantity) pairs Filter checks against a node's free resources, in order.

    It is NodeResourcesFit's PreFilter state; no simulation changes it, so clone is identity.
    """

    checks: tuple[tuple[str, int], ...]

    def clone(self) -> PodRequest:
        return self


def compute_pod_request(requests: Mapping[str, int], ignored_resources: Collection[str] = (),
                        ignored_resource_groups: Collection[str] = ()) -> PodRequest:
    checks = [(name, requests[name]) for name in _FIXED if requests.get(name, 0) > 0]
    for name, quantity in requests.items():
        if name in _FIXED or quantity == 0 or not is_scalar_resource_name(name):
            continue
        if is_extended_resource_name(name) and (
                name in ignored_resources
                or name.split("/", 1)[0] in ignored_resource_groups):
            continue
        checks.append((name, quantity))
    return PodRequest(tuple(checks))


@dataclass(frozen=True, slots=True)
class InsufficientResource:
    resource_name: str
    reason: str
    requested: int
    used: int
    capacity: int
    # Even an empty node is too small: preemption cannot help.
    unresolvable: bool = False


def insufficient_resources(request: PodRequest, node_info: NodeInfo) -> list[InsufficientResource]:
    """Every resource ``node_info`` lacks for the pod (empty = the pod fits)."""
    out = []
    allowed = node_info.allowed_pod_number
    count = len(node_info.pods)
    if count + 1 > allowed:
        out.append(InsufficientResource(PODS, TOO_MANY_PODS, 1, count, allowed))
    allocatable, requested = node_info.allocatable, node_info.requested
    for name, quantity in request.checks:
        capacity, used = allocatable.get(name, 0), requested.get(name, 0)
        if quantity > capacity - used:
            out.append(InsufficientResource(name, f"Insufficient {name}", quantity, used,
                                            capacity, quantity > capacity))
    return out


def fits_mask(request: PodRequest, snapshot: Snapshot) -> np.ndarray:
    """``insufficient_resources(...) == []`` for every node of ``snapshot``, as a bool array."""
    pods = snapshot.rows[PODS]
    mask = snapshot.requested[pods] < snapshot.allocatable[pods]
    for name, quantity in request.checks:
        row = snapshot.resource_row(name)
        if row is None:
            # No node has any of it: allocatable 0 everywhere.
            mask[:] = False
            break
        mask &= snapshot.allocatable[row] - snapshot.requested[row] >= quantity
    return mask


def _quantity(resource: str, value: int) -> str:
    if resource == CPU:
        return format_quantity(Decimal(value) / 1000)
    binary = resource in (MEMORY, EPHEMERAL_STORAGE) or resource.startswith(HUGEPAGES_PREFIX)
    return format_quantity(value, QuantityFormat.BINARY_SI if binary else None)


def describe(missing: list[InsufficientResource]) -> str | None:
    """How far a node is from fitting: ``cpu: requests 4, free 3500m; pods: 110 of 110 used``."""
    parts = []
    for r in missing:
        if r.resource_name == PODS:
            parts.append(f"pods: {r.used} of {r.capacity} used")
        else:
            name = r.resource_name
            parts.append(f"{name}: requests {_quantity(name, r.requested)}, "
                         f"free {_quantity(name, r.capacity - r.used)}")
    return "; ".join(parts) or None
