"""Node annotations about reserved and third-party resources.

Corresponds to upstream `apis/extension/node_reservation.go`, `system_qos.go` and the node keys
of `apis/slo/v1alpha1/node.go`: ``node.koordinator.sh/reservation``,
``system-qos-resource``, ``network-bandwidth``, ``originExtendedAllocatable`` and
``thirdPartyAllocations``.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping
from decimal import Decimal
from enum import StrEnum
from typing import Annotated

from pydantic import Field

from api.core import QUANTITY_PATTERN, format_quantity, quantity_format, quantity_value
from api.errors import MalformedValueError
from api.extension.codec import decode_model, require_str
from api.extension.constants import NODE_DOMAIN_PREFIX
from api.extension.payload import ALWAYS, GoPayload, GoResourceList, OptBool

_log = logging.getLogger(__name__)

ANNOTATION_NODE_RESERVATION = NODE_DOMAIN_PREFIX + "/reservation"
ANNOTATION_NODE_SYSTEM_QOS_RESOURCE = NODE_DOMAIN_PREFIX + "/system-qos-resource"
ANNOTATION_NODE_NETWORK_BANDWIDTH = NODE_DOMAIN_PREFIX + "/network-bandwidth"
ANNOTATION_NODE_ORIGIN_EXTENDED_ALLOCATABLE = NODE_DOMAIN_PREFIX + "/originExtendedAllocatable"
ANNOTATION_NODE_THIRD_PARTY_ALLOCATIONS = NODE_DOMAIN_PREFIX + "/thirdPartyAllocations"


# --- node.koordinator.sh/reservation ---------------------------------------------------------


class NodeReservationApplyPolicy(StrEnum):
    # Subtract from the schedulable allocatable and keep the CPUs away from pods.
    DEFAULT = "Default"
    # Only keep the CPUs out of CPU allocation; kubelet already accounts for the amount.
    RESERVED_CPUS_ONLY = "ReservedCPUsOnly"


class NodeReservation(GoPayload):
    """Resources and CPUs a node keeps away from pods."""

    resources: GoResourceList | None = None
    reserved_cpus: str = Field("", alias="reservedCPUs")
    apply_policy: str = ""


def parse_node_reservation(annotations: Mapping[str, str] | None) -> NodeReservation:
    """The node's reservation; missing or empty annotation → empty reservation."""
    raw = (annotations or {}).get(ANNOTATION_NODE_RESERVATION)
    if not raw:
        return NodeReservation()
    return decode_model(ANNOTATION_NODE_RESERVATION, raw, NodeReservation)


def format_node_reservation(reservation: NodeReservation) -> str:
    return reservation.to_go_json()


def get_reserved_cpus(annotations: Mapping[str, str] | None) -> tuple[str, int]:
    """(reserved CPU list, number of CPUs to reserve) as upstream ``GetReservedCPUs``.

    A non-empty ``reservedCPUs`` wins with count 0; else the count is ``ceil(milli cpu / 1000)``
    when positive. An invalid annotation is logged and gives ``("", 0)``.
    """
    try:
        reservation = parse_node_reservation(annotations)
    except MalformedValueError as exc:
        _log.warning("ignoring node reservation: %s", exc)
        return "", 0
    if reservation.reserved_cpus:
        return reservation.reserved_cpus, 0
    cpu = (reservation.resources or {}).get("cpu")
    milli = math.ceil(quantity_value(cpu) * 1000) if cpu is not None else 0
    return "", math.ceil(milli / 1000) if milli > 0 else 0


# --- node.koordinator.sh/system-qos-resource -------------------------------------------------


class SystemQOSResource(GoPayload):
    """CPUs dedicated to SYSTEM pods; exclusive unless ``cpusetExclusive`` is false."""

    cpuset: str = ""
    cpuset_exclusive: OptBool = None

    @property
    def is_cpuset_exclusive(self) -> bool:
        return self.cpuset_exclusive is None or self.cpuset_exclusive


def parse_system_qos_resource(annotations: Mapping[str, str] | None) -> SystemQOSResource | None:
    """None without annotations at all; missing key → empty resource."""
    if annotations is None:
        return None
    raw = annotations.get(ANNOTATION_NODE_SYSTEM_QOS_RESOURCE)
    if raw is None:
        return SystemQOSResource()
    return decode_model(ANNOTATION_NODE_SYSTEM_QOS_RESOURCE, raw, SystemQOSResource)


def format_system_qos_resource(resource: SystemQOSResource) -> str:
    return resource.to_go_json()


# --- node.koordinator.sh/network-bandwidth ---------------------------------------------------

_QUANTITY = re.compile(QUANTITY_PATTERN)


def parse_network_bandwidth(annotations: Mapping[str, str] | None) -> str | None:
    """The NIC bandwidth in bits/s as a quantity (``"10M"``, ``"25G"``); None when missing."""
    raw = (annotations or {}).get(ANNOTATION_NODE_NETWORK_BANDWIDTH)
    if raw is None:
        return None
    if not _QUANTITY.match(require_str(ANNOTATION_NODE_NETWORK_BANDWIDTH, raw)):
        raise MalformedValueError(ANNOTATION_NODE_NETWORK_BANDWIDTH,
                                  f"{raw!r} is not a resource quantity (like '10M', '25G')")
    return raw


# --- originExtendedAllocatable / thirdPartyAllocations (apis/slo/v1alpha1/node.go) -----------


class OriginAllocatable(GoPayload):
    """Batch allocatable before subtracting what third-party schedulers use."""

    resources: GoResourceList | None = None


class ThirdPartyAllocation(GoPayload):
    """Resources another scheduler (such as YARN) holds at a priority class."""

    name: Annotated[str, ALWAYS] = ""
    priority: Annotated[str, ALWAYS] = ""
    resources: GoResourceList | None = None


class ThirdPartyAllocations(GoPayload):
    allocations: list[ThirdPartyAllocation] | None = None


def parse_origin_extended_allocatable(
        annotations: Mapping[str, str] | None) -> OriginAllocatable | None:
    raw = (annotations or {}).get(ANNOTATION_NODE_ORIGIN_EXTENDED_ALLOCATABLE)
    if raw is None:
        return None
    return decode_model(ANNOTATION_NODE_ORIGIN_EXTENDED_ALLOCATABLE, raw, OriginAllocatable)


def format_origin_extended_allocatable(origin: OriginAllocatable) -> str:
    return origin.to_go_json()


def parse_third_party_allocations(
        annotations: Mapping[str, str] | None) -> ThirdPartyAllocations | None:
    raw = (annotations or {}).get(ANNOTATION_NODE_THIRD_PARTY_ALLOCATIONS)
    if raw is None:
        return None
    return decode_model(ANNOTATION_NODE_THIRD_PARTY_ALLOCATIONS, raw, ThirdPartyAllocations)


def format_third_party_allocations(allocations: ThirdPartyAllocations) -> str:
    return allocations.to_go_json()


def third_party_allocated_by_priority(annotations: Mapping[str, str] | None,
                                      priority: str) -> dict[str, str] | None:
    """Sum of the third-party allocations at ``priority``; None when the annotation is missing.

    Each sum is written in the format of the first quantity added, as Go's ``Quantity.Add``.
    """
    allocations = parse_third_party_allocations(annotations)
    if allocations is None:
        return None
    totals: dict[str, tuple[Decimal, str]] = {}
    for allocation in allocations.allocations or ():
        if allocation.priority != priority:
            continue
        for name, quantity in (allocation.resources or {}).items():
            value, first = totals.get(name, (Decimal(0), quantity))
            totals[name] = (value + quantity_value(quantity), first)
    return {name: format_quantity(value, quantity_format(first))
            for name, (value, first) in totals.items()}


__all__ = [
    "ANNOTATION_NODE_NETWORK_BANDWIDTH", "ANNOTATION_NODE_ORIGIN_EXTENDED_ALLOCATABLE",
    "ANNOTATION_NODE_RESERVATION", "ANNOTATION_NODE_SYSTEM_QOS_RESOURCE",
    "ANNOTATION_NODE_THIRD_PARTY_ALLOCATIONS", "NodeReservation", "NodeReservationApplyPolicy",
    "OriginAllocatable", "SystemQOSResource", "ThirdPartyAllocation", "ThirdPartyAllocations",
    "format_node_reservation", "format_origin_extended_allocatable", "format_system_qos_resource",
    "format_third_party_allocations", "get_reserved_cpus", "parse_network_bandwidth",
    "parse_node_reservation", "parse_origin_extended_allocatable", "parse_system_qos_resource",
    "parse_third_party_allocations", "third_party_allocated_by_priority",
]
