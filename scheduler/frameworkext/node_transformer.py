"""Node reservation: what the scheduler sees of a node's allocatable.

Corresponds to upstream ``pkg/util/node.go`` (``GetNodeReservationResources``,
``TrimNodeAllocatableByNodeReservation``) and the scheduler's node informer transformer
(``TransformNodeWithNodeReservation``, installed on the shared Node informer with
``SetTransform``). The annotation ``node.koordinator.sh/reservation``
(``{"resources": {...}, "reservedCPUs": "0-3", "applyPolicy": ...}``) keeps resources away from
pods for work outside Kubernetes. With ``applyPolicy`` empty or ``Default`` the reserved
resources (``reservedCPUs``, when set, counts its CPUs as ``cpu``) are subtracted from
``status.allocatable`` (never below 0; a name only reserved becomes 0), except
``kubernetes.io/batch-cpu`` and ``batch-memory``, which koord-manager computes with the
reservation already taken off (they stay as the node reports them, 0 when absent).
``ReservedCPUsOnly`` leaves the allocatable alone (kubelet already accounts for the amount). A
reservation that does not parse changes nothing.

Every scheduler component reading nodes from the shared informer (NodeInfo's allocatable for
NodeResourcesFit, ElasticQuota's cluster total, ...) therefore sees the trimmed allocatable.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from api.core import format_quantity, quantity_format, quantity_value
from api.errors import MalformedValueError
from api.extension.node import NodeReservationApplyPolicy, parse_node_reservation
from api.extension.resource import BATCH_CPU, BATCH_MEMORY
from pkg.client.resources import NODES
from pkg.util.cpuset import parse_cpuset
from scheduler.frameworkext.interface import InformerFactory

log = logging.getLogger(__name__)


def node_reservation_resources(annotations: Mapping[str, str] | None) -> dict[str, str]:
    """The resources the annotation reserves (``GetNodeReservationResources``); empty when
    the annotation is absent or its policy is ``ReservedCPUsOnly``.

    Raises MalformedValueError or ValueError when the annotation or its cpuset is malformed.
    """
    reservation = parse_node_reservation(annotations)
    if reservation.apply_policy not in ("", NodeReservationApplyPolicy.DEFAULT):
        return {}
    resources = {k: str(v) for k, v in (reservation.resources or {}).items()}
    if reservation.reserved_cpus:
        resources["cpu"] = str(len(parse_cpuset(reservation.reserved_cpus)))
    return resources


def trim_node_allocatable_by_node_reservation(node: Mapping[str, Any]
                                              ) -> tuple[dict[str, Any], bool]:
    """The node's allocatable less its reservation, and whether that differs from it."""
    allocatable: dict[str, Any] = dict((node.get("status") or {}).get("allocatable") or {})
    annotations = (node.get("metadata") or {}).get("annotations")
    try:
        reserved = node_reservation_resources(annotations)
        reserved_values = {k: quantity_value(v) for k, v in reserved.items()}
    except (MalformedValueError, ValueError, ArithmeticError) as err:
        log.debug("node %s: ignoring its reservation: %s",
                  (node.get("metadata") or {}).get("name"), err)
        return allocatable, False
    if not any(reserved_values.values()):
        return allocatable, False
    trimmed: dict[str, Any] = {}
    for name, quantity in allocatable.items():
        value = quantity_value(quantity) - reserved_values.get(name, Decimal(0))
        trimmed[name] = format_quantity(value, quantity_format(str(quantity))) \
            if value > 0 else "0"
    for name in reserved_values:
        trimmed.setdefault(name, "0")
    # koord-manager took the reservation off the batch resources already.
    for name in (BATCH_CPU, BATCH_MEMORY):
        trimmed[name] = allocatable.get(name, "0")
    changed = {k: quantity_value(v) for k, v in trimmed.items()} != {
        k: quantity_value(v) for k, v in allocatable.items()}
    return trimmed, changed


def transform_node(obj: dict[str, Any]) -> dict[str, Any]:
    """The informer transform: the node with the trimmed allocatable."""
    allocatable, trimmed = trim_node_allocatable_by_node_reservation(obj)
    if not trimmed:
        return obj
    # A new node object: the informer's copy of the original is never modified in place.
    return {**obj, "status": {**(obj.get("status") or {}), "allocatable": allocatable}}


def install_node_transformer(informer_factory: InformerFactory) -> None:
    """Make the shared Node informer deliver nodes with their reservation taken off (before
    it starts)."""
    informer_factory.informer_for(NODES, typed=False).set_transform(transform_node)


__all__ = ["install_node_transformer", "node_reservation_resources",
           "transform_node", "trim_node_allocatable_by_node_reservation"]
