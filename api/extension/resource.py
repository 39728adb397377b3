"""Batch and mid extended resources, their mapping from priority classes, and the pod
annotations that carry resource requirements.

Corresponds to upstream `apis/extension/resource.go`.
``kubernetes.io/batch-cpu`` and ``kubernetes.io/mid-cpu`` count milli-cores as an integer
quantity (``"1000"`` is one core); the memory ones are ordinary byte quantities.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated

from api.core import QuantityFormat, format_quantity, quantity_value
from api.extension.codec import decode_model
from api.extension.constants import NODE_DOMAIN_PREFIX, POD_DOMAIN_PREFIX, RESOURCE_DOMAIN_PREFIX
from api.extension.payload import SORTED, GoPayload, GoResourceList
from api.extension.priority import PriorityClass

RESOURCE_CPU = "cpu"
RESOURCE_MEMORY = "memory"
RESOURCE_EPHEMERAL_STORAGE = "ephemeral-storage"

BATCH_CPU = RESOURCE_DOMAIN_PREFIX + "batch-cpu"
BATCH_MEMORY = RESOURCE_DOMAIN_PREFIX + "batch-memory"
MID_CPU = RESOURCE_DOMAIN_PREFIX + "mid-cpu"
MID_MEMORY = RESOURCE_DOMAIN_PREFIX + "mid-memory"

ANNOTATION_EXTENDED_RESOURCE_SPEC = NODE_DOMAIN_PREFIX + "/extended-resource-spec"
ANNOTATION_POD_REPLACE_RESOURCES = POD_DOMAIN_PREFIX + "/replace-resources"

# Priority class → (native resource → extended resource); upstream ResourceNameMap.
RESOURCE_NAME_MAP: Mapping[str, Mapping[str, str]] = MappingProxyType({
    PriorityClass.BATCH: MappingProxyType({RESOURCE_CPU: BATCH_CPU, RESOURCE_MEMORY: BATCH_MEMORY}),
    PriorityClass.MID: MappingProxyType({RESOURCE_CPU: MID_CPU, RESOURCE_MEMORY: MID_MEMORY}),
})

# Extended resources counted in milli-cores, written as integers.
MILLI_CPU_RESOURCES = frozenset({BATCH_CPU, MID_CPU})


def translate_resource_name_by_priority_class(priority_class: PriorityClass | str,
                                              resource_name: str) -> str:
    """The extended resource standing for ``resource_name`` in ``priority_class``.

    prod and none keep the name; batch and mid map cpu/memory to their extended resources;
    anything without a mapping (koord-free, or another resource) gives ``""``.
    """
    if priority_class in (PriorityClass.PROD, PriorityClass.NONE):
        return resource_name
    return RESOURCE_NAME_MAP.get(priority_class, {}).get(resource_name, "")


def translate_resource_quantity(extended_name: str, quantity: str | int) -> str:
    """The quantity of a native resource written for its extended resource.

    For batch-cpu/mid-cpu the milli-value of the cpu quantity as an integer (``"1.5"`` →
    ``"1500"``); for others the same quantity in Go's canonical form.
    """
    if extended_name in MILLI_CPU_RESOURCES:
        milli = math.ceil(quantity_value(quantity) * 1000)
        return format_quantity(milli, QuantityFormat.DECIMAL_SI)
    return format_quantity(quantity)


# --- node.koordinator.sh/extended-resource-spec -----------------------------------------------


class ExtendedResourceContainerSpec(GoPayload):
    """Requests and limits of one container's extended resources."""

    limits: GoResourceList | None = None
    requests: GoResourceList | None = None


class ExtendedResourceSpec(GoPayload):
    """Per-container extended resources, for consumers without the pod spec (CRI requests)."""

    containers: Annotated[dict[str, ExtendedResourceContainerSpec], SORTED] | None = None


def parse_extended_resource_spec(annotations: Mapping[str, str] | None) -> ExtendedResourceSpec:
    """The pod's ExtendedResourceSpec; missing annotation → empty spec."""
    raw = (annotations or {}).get(ANNOTATION_EXTENDED_RESOURCE_SPEC)
    if raw is None:
        return ExtendedResourceSpec()
    return decode_model(ANNOTATION_EXTENDED_RESOURCE_SPEC, raw, ExtendedResourceSpec)


def format_extended_resource_spec(spec: ExtendedResourceSpec) -> str:
    """The annotation value (container names and resource names sorted, as Go writes maps)."""
    return spec.to_go_json()


# --- pod.koordinator.sh/replace-resources -----------------------------------------------------


def parse_replace_resources(
        annotations: Mapping[str, str] | None) -> tuple[list[str], dict[str, str]]:
    """``"from:to,from2:to2,erase:"`` → (names to erase, renames).

    Whitespace around names is trimmed; a pair that is not exactly ``a:b`` is skipped, as
    upstream does (this annotation never fails).
    """
    erase: list[str] = []
    replace: dict[str, str] = {}
    value = (annotations or {}).get(ANNOTATION_POD_REPLACE_RESOURCES)
    if not value or not isinstance(value, str):
        return erase, replace
    for mapping in value.split(","):
        parts = mapping.split(":")
        if len(parts) != 2:
            continue
        source, target = parts[0].strip(), parts[1].strip()
        if target:
            replace[source] = target
        else:
            erase.append(source)
    return erase, replace


def format_replace_resources(erase: list[str] | tuple[str, ...] = (),
                             replace: Mapping[str, str] | None = None) -> str:
    """The annotation value: renames first (``a:b``), then erasures (``c:``)."""
    pairs = [f"{source}:{target}" for source, target in (replace or {}).items()]
    pairs += [f"{name}:" for name in erase]
    return ",".join(pairs)


__all__ = [
    "ANNOTATION_EXTENDED_RESOURCE_SPEC", "ANNOTATION_POD_REPLACE_RESOURCES", "BATCH_CPU",
    "BATCH_MEMORY", "MID_CPU", "MID_MEMORY", "MILLI_CPU_RESOURCES", "RESOURCE_CPU",
    "RESOURCE_EPHEMERAL_STORAGE", "RESOURCE_MEMORY", "RESOURCE_NAME_MAP",
    "ExtendedResourceContainerSpec", "ExtendedResourceSpec", "format_extended_resource_spec",
    "format_replace_resources", "parse_extended_resource_spec", "parse_replace_resources",
    "translate_resource_name_by_priority_class", "translate_resource_quantity",
]
