"""Node-level overrides of the colocation strategy: an annotation and four ratio labels.

Corresponds to upstream `apis/extension/node_colocation.go`, and the
node-level end of `GetNodeColocationStrategy` (`pkg/util/sloconfig/colocation_config.go`).
The ``node.koordinator.sh/colocation-strategy`` annotation holds a ColocationStrategy whose
model lives in ``api.configuration``; here it passes through as a raw JSON object so the
merge onto the cluster strategy stays JSON-level.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

from api.errors import MalformedValueError
from api.extension.codec import decode_json, parse_float_value
from api.extension.constants import NODE_DOMAIN_PREFIX

_log = logging.getLogger(__name__)

ANNOTATION_NODE_COLOCATION_STRATEGY = NODE_DOMAIN_PREFIX + "/colocation-strategy"
LABEL_CPU_RECLAIM_RATIO = NODE_DOMAIN_PREFIX + "/cpu-reclaim-ratio"
LABEL_MEMORY_RECLAIM_RATIO = NODE_DOMAIN_PREFIX + "/memory-reclaim-ratio"
LABEL_MID_STATIC_CPU_RESERVED_RATIO = NODE_DOMAIN_PREFIX + "/mid-static-cpu-reserved-ratio"
LABEL_MID_STATIC_MEMORY_RESERVED_RATIO = NODE_DOMAIN_PREFIX + "/mid-static-memory-reserved-ratio"

# Ratio label → the ColocationStrategy field it overrides (as int(ratio × 100)).
RATIO_LABEL_FIELDS = {
    LABEL_CPU_RECLAIM_RATIO: "cpuReclaimThresholdPercent",
    LABEL_MEMORY_RECLAIM_RATIO: "memoryReclaimThresholdPercent",
    LABEL_MID_STATIC_CPU_RESERVED_RATIO: "midStaticCPUReservedPercent",
    LABEL_MID_STATIC_MEMORY_RESERVED_RATIO: "midStaticMemoryReservedPercent",
}


def parse_node_colocation_strategy(
        annotations: Mapping[str, str] | None) -> dict[str, Any] | None:
    """The annotation as a raw JSON object; None when missing. Not a JSON object raises
    MalformedValueError (callers ignore such a value, as upstream does)."""
    raw = (annotations or {}).get(ANNOTATION_NODE_COLOCATION_STRATEGY)
    if raw is None:
        return None
    data = decode_json(ANNOTATION_NODE_COLOCATION_STRATEGY, raw)
    if data is None:
        return None
    if not isinstance(data, dict):
        raise MalformedValueError(ANNOTATION_NODE_COLOCATION_STRATEGY,
                                  f"expected a JSON object, got {type(data).__name__}")
    return data


def get_node_colocation_strategy(annotations: Mapping[str, str] | None) -> dict[str, Any] | None:
    """:func:`parse_node_colocation_strategy` with an unparsable value ignored (logged)."""
    try:
        return parse_node_colocation_strategy(annotations)
    except MalformedValueError as exc:
        _log.warning("ignoring node colocation strategy: %s", exc)
        return None


def parse_ratio_label(labels: Mapping[str, str] | None, key: str) -> float | None:
    """A ratio label as a float; None when absent. Unparsable or negative raises."""
    raw = (labels or {}).get(key)
    if raw is None:
        return None
    ratio = parse_float_value(key, raw)
    if math.isnan(ratio) or ratio < 0:
        raise MalformedValueError(key, f"ratio must be a number >= 0, got {raw!r}")
    return ratio


def get_ratio_label_percent(labels: Mapping[str, str] | None, key: str) -> int | None:
    """The percent a ratio label sets (``"0.6"`` → 60, truncated); None when the label is
    absent, negative or invalid (ignored, as upstream does)."""
    try:
        ratio = parse_ratio_label(labels, key)
    except MalformedValueError as exc:
        _log.warning("ignoring node label: %s", exc)
        return None
    if ratio is None or math.isinf(ratio):
        return None
    return int(ratio * 100)


__all__ = [
    "ANNOTATION_NODE_COLOCATION_STRATEGY", "LABEL_CPU_RECLAIM_RATIO", "LABEL_MEMORY_RECLAIM_RATIO",
    "LABEL_MID_STATIC_CPU_RESERVED_RATIO", "LABEL_MID_STATIC_MEMORY_RESERVED_RATIO",
    "RATIO_LABEL_FIELDS", "get_node_colocation_strategy", "get_ratio_label_percent",
    "parse_node_colocation_strategy", "parse_ratio_label",
]
