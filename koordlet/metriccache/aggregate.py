"""Aggregations over the points of one query (upstream ``pkg/koordlet/metriccache/util.go``).

Type strings are upstream's: ``avg``, ``p99``, ``P95``, ``P90``, ``p50``, ``last``, ``count``
(``P95``/``P90`` upper case in the cache API; the NodeMetric API spells them lower case).
"""

from __future__ import annotations

import numpy as np

AVG = "avg"
P99 = "p99"
P95 = "P95"
P90 = "P90"
P50 = "p50"
LAST = "last"
COUNT = "count"

_PERCENTILES = {P99: 0.99, P95: 0.95, P90: 0.90, P50: 0.50}


class EmptyResultError(ValueError):
    """Raised for avg/percentile/last over no points, as upstream returns an error."""


def percentile(values: np.ndarray, p: float) -> float:
    """``sorted[int(float32(n) × float32(p)) − 1]``, floor 0, no interpolation (upstream)."""
    n = len(values)
    if n == 0:
        raise EmptyResultError("empty points for percentile")
    idx = max(int(np.float32(n) * np.float32(p)) - 1, 0)
    return float(np.partition(values, idx)[idx])


def aggregate(kind: str, timestamps: np.ndarray, values: np.ndarray) -> float:
    if kind == COUNT:
        return float(len(values))
    if len(values) == 0:
        raise EmptyResultError(f"empty points for {kind}")
    if kind == AVG:
        return float(values.mean())
    if kind == LAST:
        return float(values[int(np.argmax(timestamps))])
    p = _PERCENTILES.get(kind)
    if p is None:
        raise ValueError(f"unknown aggregation {kind!r}")
    return percentile(values, p)
