"""Node resource amplification: the ratio annotation, the raw allocatable, and the arithmetic.

Corresponds to upstream `apis/extension/node_resource_amplification.go`. Ratios are written as JSON
numbers with exactly two decimals (``{"cpu":1.22}``); only ratios above 1 change a quantity, to
``ceil(original × ratio)`` on the milli-value for cpu and on the value for everything else.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from decimal import Decimal

from pydantic import TypeAdapter

from api.base import go_json_dumps
from api.core import QuantityFormat, format_quantity, quantity_value
from api.extension.codec import decode_value
from api.extension.constants import NODE_DOMAIN_PREFIX
from api.extension.payload import GoFloat, GoResourceList, dump_json
from api.extension.resource import RESOURCE_CPU, RESOURCE_EPHEMERAL_STORAGE, RESOURCE_MEMORY

ANNOTATION_NODE_RESOURCE_AMPLIFICATION_RATIO = NODE_DOMAIN_PREFIX + "/resource-amplification-ratio"
ANNOTATION_NODE_RAW_ALLOCATABLE = NODE_DOMAIN_PREFIX + "/raw-allocatable"

_RATIOS = TypeAdapter(dict[str, GoFloat])
_RESOURCE_LIST = TypeAdapter(GoResourceList)


def format_ratio(ratio: float) -> str:
    """A ratio with exactly two decimals, rounding like Go's ``FormatFloat(x, 'f', 2, 64)``
    (``1.2`` → ``"1.20"``, ``1.125`` → ``"1.12"``)."""
    if not math.isfinite(ratio):
        raise ValueError(f"ratio {ratio!r} is not a finite number")
    return format(ratio, ".2f")


def parse_resource_amplification_ratios(
        annotations: Mapping[str, str] | None) -> dict[str, float] | None:
    """Resource → ratio from the node annotation; None when it is missing."""
    raw = (annotations or {}).get(ANNOTATION_NODE_RESOURCE_AMPLIFICATION_RATIO)
    if raw is None:
        return None
    return decode_value(ANNOTATION_NODE_RESOURCE_AMPLIFICATION_RATIO, raw, _RATIOS)


def get_resource_amplification_ratio(annotations: Mapping[str, str] | None,
                                     resource_name: str) -> float:
    """The ratio of one resource; -1 when the annotation or the resource is absent."""
    ratios = parse_resource_amplification_ratios(annotations) or {}
    return ratios.get(resource_name, -1.0)


def format_resource_amplification_ratios(ratios: Mapping[str, float]) -> str:
    """The annotation value: keys sorted, each ratio a JSON number with two decimals."""
    items = (f"{go_json_dumps(name)}:{format_ratio(ratio)}" for name, ratio in sorted(
        ratios.items()))
    return "{" + ",".join(items) + "}"


def parse_raw_allocatable(annotations: Mapping[str, str] | None) -> dict[str, str] | None:
    """The node's allocatable before amplification; None when the annotation is missing."""
    raw = (annotations or {}).get(ANNOTATION_NODE_RAW_ALLOCATABLE)
    if raw is None:
        return None
    return decode_value(ANNOTATION_NODE_RAW_ALLOCATABLE, raw, _RESOURCE_LIST)


def format_raw_allocatable(allocatable: Mapping[str, str]) -> str:
    """The annotation value (names sorted, quantities canonical)."""
    return dump_json(_RESOURCE_LIST, dict(allocatable))


def amplify(origin: int, ratio: float) -> int:
    """``ceil(origin × ratio)`` when ``ratio`` > 1, else ``origin`` (float64 arithmetic)."""
    if ratio <= 1:
        return origin
    return math.ceil(float(origin) * ratio)


def amplify_quantity(resource_name: str, quantity: str | int, ratio: float) -> str:
    """One amplified quantity, written as Go writes it.

    cpu is amplified on its milli-value (DecimalSI milli quantity); memory and
    ephemeral-storage on their value (BinarySI); anything else on its value (DecimalSI).
    A ratio of at most 1, or a zero quantity, leaves the quantity as it is.
    """
    value = quantity_value(quantity)
    if ratio <= 1 or value == 0:
        return quantity if isinstance(quantity, str) else format_quantity(quantity)
    if resource_name == RESOURCE_CPU:
        milli = amplify(math.ceil(value * 1000), ratio)
        return format_quantity(Decimal(milli).scaleb(-3), QuantityFormat.DECIMAL_SI)
    amplified = amplify(math.ceil(value), ratio)
    if resource_name in (RESOURCE_MEMORY, RESOURCE_EPHEMERAL_STORAGE):
        return format_quantity(amplified, QuantityFormat.BINARY_SI)
    return format_quantity(amplified, QuantityFormat.DECIMAL_SI)


def amplify_resource_list(resources: Mapping[str, str], ratios: Mapping[str, float],
                          resource_names: Iterable[str] = ()) -> dict[str, str]:
    """A copy of ``resources`` with the named resources (all, when none are named) amplified.

    Upstream ``AmplifyResourceList`` changes its argument in place; this returns a new dict.
    Names that are absent from ``resources`` stay absent.
    """
    result = dict(resources)
    for name in list(resource_names) or list(result):
        if name in result:
            result[name] = amplify_quantity(name, result[name], ratios.get(name, 0.0))
    return result


__all__ = [
    "ANNOTATION_NODE_RAW_ALLOCATABLE", "ANNOTATION_NODE_RESOURCE_AMPLIFICATION_RATIO", "amplify",
    "amplify_quantity", "amplify_resource_list", "format_ratio", "format_raw_allocatable",
    "format_resource_amplification_ratios", "get_resource_amplification_ratio",
    "parse_raw_allocatable", "parse_resource_amplification_ratios",
]
