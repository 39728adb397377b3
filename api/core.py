"""Kubernetes core/v1 types that Koordinator's CRDs embed.

Corresponds to k8s.io/api `core/v1` (Quantity from apimachinery `api/resource`) as far as
Koordinator's types use it: Quantity and ResourceList (kept as strings on the wire),
IntOrString, ObjectReference, Taint, Toleration, NodeSelectorTerm, DeleteOptions and the
schemaless PodTemplateSpec.
"""

from __future__ import annotations

import re
from decimal import ROUND_UP, Decimal, localcontext
from enum import StrEnum
from typing import Annotated, Any

from kubernetes.utils import parse_quantity
from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field

from api.base import ApiModel, Int64, IntOrStringMarker, QuantityMarker, Schemaless
from api.meta import Time

# The pattern upstream's CRDs put on every Quantity.
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_QUANTITY = re.compile(QUANTITY_PATTERN)


def _quantity_from_number(value: Any) -> Any:
    # JSON numbers are accepted on input and written back as strings, as Go does.
    if isinstance(value, bool):
        raise ValueError("a quantity cannot be a boolean")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format(Decimal(repr(value)).normalize(), "f")
    return value


def _check_quantity(value: str) -> str:
    if not _QUANTITY.match(value):
        raise ValueError(f"{value!r} is not a resource quantity (like '500m', '2', '16Gi')")
    return value


# resource.Quantity on the wire, kept as written; use ``quantity_value`` for arithmetic.
Quantity = Annotated[
    str, BeforeValidator(_quantity_from_number), AfterValidator(_check_quantity),
    QuantityMarker(),
]

# corev1.ResourceList: resource name → Quantity.
ResourceList = dict[str, Quantity]


def quantity_value(quantity: str | int | float) -> Decimal:
    """The numeric value of a quantity (``"1500m"`` → 1.5, ``"1Ki"`` → 1024)."""
    return parse_quantity(quantity)


class QuantityFormat(StrEnum):
    """How Go writes a quantity back: chosen by the suffix it was parsed with."""

    DECIMAL_SI = "DecimalSI"  # no suffix, or n u m k M G T P E
    BINARY_SI = "BinarySI"  # Ki Mi Gi Ti Pi Ei
    DECIMAL_EXPONENT = "DecimalExponent"  # 1e3, 2E-3


def quantity_format(quantity: str) -> QuantityFormat:
    """The format Go's ``resource.ParseQuantity`` infers from the suffix of ``quantity``."""
    match = _QUANTITY.match(quantity)
    if not match:
        raise ValueError(f"{quantity!r} is not a resource quantity (like '500m', '2', '16Gi')")
    if match.group(7):
        return QuantityFormat.BINARY_SI
    if match.group(8):
        return QuantityFormat.DECIMAL_EXPONENT
    return QuantityFormat.DECIMAL_SI


_DECIMAL_SUFFIXES = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P",
                     18: "E"}
_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


def format_quantity(quantity: str | int | Decimal,
                    fmt: QuantityFormat | None = None) -> str:
    """Go's canonical ``resource.Quantity.String()`` (``k8s.io/apimachinery/pkg/api/resource``).

    A string keeps the format its suffix implies (``"2.5"`` → ``"2500m"``, ``"1024Mi"`` →
    ``"1Gi"``, ``"1000m"`` → ``"1"``); a number is DecimalSI unless ``fmt`` says otherwise
    (``resource.NewQuantity(1500, DecimalSI)`` → ``"1500"``). Precision finer than ``1n`` is
    rounded up, as Go does when parsing.
    """
    if isinstance(quantity, bool):
        raise TypeError("a quantity cannot be a boolean")
    if isinstance(quantity, str):
        fmt = fmt or quantity_format(quantity)
        value = parse_quantity(quantity)
    else:
        fmt = fmt or QuantityFormat.DECIMAL_SI
        value = Decimal(quantity)
    if not value.is_finite():
        raise ValueError(f"{quantity!r} is not a finite quantity")
    with localcontext() as ctx:
        ctx.prec = max(64, len(value.as_tuple().digits) + 32)
        nanos = int(value.quantize(Decimal("1e-9"), rounding=ROUND_UP).scaleb(9))
        if nanos == 0:
            return "0"
        if fmt is QuantityFormat.BINARY_SI and nanos % 10**9 == 0 and abs(nanos) >= 1024 * 10**9:
            return _format_base1024(nanos // 10**9)
        return _format_base10(nanos, exponent_suffix=fmt is QuantityFormat.DECIMAL_EXPONENT)


def _format_base10(nanos: int, *, exponent_suffix: bool) -> str:
    mantissa, exponent = nanos, -9
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    # Go keeps the exponent a multiple of three (milli, kilo, ...), never losing precision.
    shift = exponent % 3
    mantissa *= 10**shift
    exponent -= shift
    if exponent_suffix:
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    if exponent > 18:
        mantissa *= 10 ** (exponent - 18)
        exponent = 18
    return f"{mantissa}{_DECIMAL_SUFFIXES[exponent]}"


def _format_base1024(value: int) -> str:
    power = 0
    while power < len(_BINARY_SUFFIXES) - 1 and value % 1024 == 0:
        value //= 1024
        power += 1
    return f"{value}{_BINARY_SUFFIXES[power]}"


def _int_or_string(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"{value!r} is neither an integer nor a string")
    return value


# intstr.IntOrString: a JSON number or a string such as "50%".
IntOrString = Annotated[int | str, BeforeValidator(_int_or_string), IntOrStringMarker()]


class ObjectReference(ApiModel):
    """corev1.ObjectReference."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-map-type": "atomic"})

    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    uid: str | None = None
    api_version: str | None = None
    resource_version: str | None = None
    field_path: str | None = None


class Taint(ApiModel):
    key: str
    value: str | None = None
    effect: str
    time_added: Time | None = None


class Toleration(ApiModel):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: Int64 | None = None


class NodeSelectorRequirement(ApiModel):
    key: str
    operator: str
    values: list[str] | None = None


class NodeSelectorTerm(ApiModel):
    """corev1.NodeSelectorTerm: expressions on labels and on fields, ANDed."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-map-type": "atomic"})

    match_expressions: list[NodeSelectorRequirement] | None = None
    match_fields: list[NodeSelectorRequirement] | None = None


class Preconditions(ApiModel):
    uid: str | None = None
    resource_version: str | None = None


class DeleteOptions(ApiModel):
    """metav1.DeleteOptions, as embedded in PodMigrationJob."""

    kind: str | None = None
    api_version: str | None = None
    grace_period_seconds: Int64 | None = None
    preconditions: Preconditions | None = None
    orphan_dependents: bool | None = None
    propagation_policy: str | None = None
    dry_run: list[str] | None = Field(
        default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )
    ignore_store_read_error_with_cluster_breaking_potential: bool | None = None


# A PodTemplateSpec or other embedded object the CRD keeps schemaless: stored verbatim.
SchemalessObject = Annotated[dict[str, Any], Schemaless()]


__all__ = [
    "QUANTITY_PATTERN", "DeleteOptions", "IntOrString", "NodeSelectorRequirement",
    "NodeSelectorTerm", "ObjectReference", "Preconditions", "Quantity", "QuantityFormat",
    "ResourceList", "SchemalessObject", "Taint", "Toleration", "format_quantity",
    "quantity_format", "quantity_value",
]
