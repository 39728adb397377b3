"""``/mutate-node-status``: node allocatable amplified by the node's amplification ratios.

Corresponds to upstream ``pkg/webhook/node/mutating`` with its one plugin,
``plugins/resourceamplification``. Only UPDATE of
``nodes/status`` is mutated. Without a ratio annotation the saved raw allocatable is removed
(the feature was turned off). Otherwise the kubelet's cpu/memory allocatable is saved in
``node.koordinator.sh/raw-allocatable`` when none is saved yet or when the kubelet changed it,
and ``allocatable[cpu|memory] = raw × ratio`` for ratios above 1, on the milli-value and
truncated as upstream's ``MultiplyMilliQuant``. A malformed annotation answers 500 naming the
node and the annotation.
"""

from __future__ import annotations

import copy
import logging
import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from api.core import format_quantity, quantity_format, quantity_value
from api.errors import MalformedValueError
from api.extension.amplification import (
    ANNOTATION_NODE_RAW_ALLOCATABLE,
    ANNOTATION_NODE_RESOURCE_AMPLIFICATION_RATIO,
    format_raw_allocatable,
    parse_raw_allocatable,
    parse_resource_amplification_ratios,
)
from api.extension.resource import RESOURCE_CPU, RESOURCE_MEMORY
from pkg.features.features import NODE_MUTATING_WEBHOOK

from ..admission import AdmissionRequest, AdmissionResponse, allowed, errored, patch_response
from ..configuration import MUTATE_NODE_STATUS
from ..framework import HandlerBuilder

log = logging.getLogger(__name__)
Obj = dict[str, Any]

# Other resources are updated by their own controllers all the time, so only the two the
# kubelet owns are saved and amplified.
SUPPORTED_RESOURCES = (RESOURCE_CPU, RESOURCE_MEMORY)


def _supported(resources: Mapping[str, Any]) -> dict[str, Decimal]:
    return {name: quantity_value(resources[name]) for name in SUPPORTED_RESOURCES
            if name in resources}


def multiply_milli(quantity: str, ratio: float) -> str:
    """``MultiplyMilliQuant``: the milli-value times ``ratio``, truncated, in the quantity's
    own format."""
    milli = math.ceil(quantity_value(quantity) * 1000)
    return format_quantity(Decimal(int(float(milli) * ratio)).scaleb(-3),
                           quantity_format(quantity))


def amplify_node_status(node: Obj, old_node: Obj | None) -> None:
    """Mutates ``node`` in place. Raises MalformedValueError for a malformed annotation."""
    md = node.setdefault("metadata", {})
    annotations = md.get("annotations") or {}
    if not annotations.get(ANNOTATION_NODE_RESOURCE_AMPLIFICATION_RATIO):
        if ANNOTATION_NODE_RAW_ALLOCATABLE in annotations:
            del annotations[ANNOTATION_NODE_RAW_ALLOCATABLE]
        return
    allocatable = (node.get("status") or {}).get("allocatable")
    if allocatable is None:
        return
    old_allocatable = ((old_node or {}).get("status") or {}).get("allocatable") or {}
    # Assumes only the kubelet rewrites cpu/memory allocatable (e.g. after a change of its
    # reserved resources); everyone else only adds fields.
    changed = old_node is not None and _supported(old_allocatable) != _supported(allocatable)
    if ANNOTATION_NODE_RAW_ALLOCATABLE not in annotations or changed:
        raw = {name: allocatable[name] for name in SUPPORTED_RESOURCES if name in allocatable}
        if raw:
            annotations[ANNOTATION_NODE_RAW_ALLOCATABLE] = format_raw_allocatable(raw)
            md["annotations"] = annotations
    else:
        saved = parse_raw_allocatable(annotations)
        if saved is None:
            raise MalformedValueError(ANNOTATION_NODE_RAW_ALLOCATABLE, "must be a ResourceList")
        raw = saved
    ratios = parse_resource_amplification_ratios(annotations) or {}
    # A ratio without a saved raw value, or a ratio of at most 1, leaves the resource alone.
    for name in SUPPORTED_RESOURCES:
        ratio = ratios.get(name)
        if ratio is None or ratio <= 1 or name not in raw:
            continue
        allocatable[name] = multiply_milli(raw[name], ratio)


class NodeStatusMutatingHandler:
    """The ``/mutate-node-status`` handler."""

    def __call__(self, req: AdmissionRequest) -> AdmissionResponse:
        if req.resource != "nodes" or req.sub_resource != "status":
            return allowed()
        if req.object is None:
            return errored(400, "node status mutating webhook: request has no object")
        if req.operation != "UPDATE":
            return allowed()
        node = copy.deepcopy(req.object)
        try:
            amplify_node_status(node, req.old_object)
        except MalformedValueError as e:
            name = (node.get("metadata") or {}).get("name", req.name)
            log.error("failed to amplify allocatable of node %s: %s", name, e)
            return errored(500, f"node {name}: {e}")
        return patch_response(req.object, node)


HANDLER_BUILDERS = (
    HandlerBuilder(MUTATE_NODE_STATUS, NODE_MUTATING_WEBHOOK,
                   lambda ctx: NodeStatusMutatingHandler()),
)

__all__ = ["HANDLER_BUILDERS", "NodeStatusMutatingHandler", "SUPPORTED_RESOURCES",
           "amplify_node_status", "multiply_milli"]
