"""The plugin's fixed resource vector and Go's rounding.

Corresponds to koordinator ``pkg/scheduler/plugins/loadaware`` (``ResourceVectorizer``,
``ResourceVector`` in ``helper.go``): every quantity the plugin handles becomes a position in
one int64 vector whose resource names are sorted; names outside it are ignored everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from pkg.util.podresources import CPU, MEMORY, measured_quantity_int

if TYPE_CHECKING:
    from scheduler.apis.config import LoadAwareSchedulingArgs

Vector = np.ndarray  # int64, one entry per vector resource

# Every entry is clipped to this (4.5e12 cores, 4 PiB), so a node's sums over thousands of pods
# never wrap int64 (Go wraps). Any value beyond a node's allocatable fails its thresholds and
# scores 0 alike, so no decision changes.
CEILING = 2**52


class ResourceVectorizer:
    """Sorted resource names and conversions into vectors over them."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names: tuple[str, ...] = tuple(sorted(set(names)))
        self.positions: dict[str, int] = {n: i for i, n in enumerate(self.names)}

    @classmethod
    def from_args(cls, args: LoadAwareSchedulingArgs) -> ResourceVectorizer:
        """cpu and memory (what koordlet reports) plus every resource the args name."""
        names = {CPU, MEMORY}
        names.update(args.usage_thresholds, args.prod_usage_thresholds, args.resource_weights,
                     args.estimated_scaling_factors, args.supported_resources)
        if args.aggregated is not None:
            names.update(args.aggregated.usage_thresholds)
        return cls(names)

    def __len__(self) -> int:
        return len(self.names)

    def empty(self) -> Vector:
        return np.zeros(len(self.names), dtype=np.int64)

    def to_vec(self, resources: Mapping[str, Any] | None) -> Vector:
        """A measured ResourceList (NodeMetric usage): cpu in millicores, others in units.

        Raises ValueError for a malformed, non-finite, negative or beyond-int64 quantity of a
        vector resource (``measured_quantity_int``); entries are clipped to ``CEILING``.
        """
        vec = self.empty()
        for name, q in (resources or {}).items():
            i = self.positions.get(name)
            if i is not None:
                vec[i] = min(measured_quantity_int(name, q), CEILING)
        return vec

    def to_factor_vec(self, values: Mapping[str, int] | None) -> Vector:
        """A map of plain integers (thresholds, weights, estimates), clipped to ``CEILING``
        (an estimate of an absurd request)."""
        vec = self.empty()
        for name, v in (values or {}).items():
            i = self.positions.get(name)
            if i is not None:
                vec[i] = max(-CEILING, min(v, CEILING))
        return vec


def round_half_away(x: float) -> int:
    """Go's ``math.Round``: halves go away from zero (Python's ``round`` goes to even)."""
    t = math.trunc(x)
    return t + (1 if x > 0 else -1) if abs(x - t) >= 0.5 else t


def round_half_away_array(x: np.ndarray) -> np.ndarray:
    """``round_half_away`` over a float array (NaN stays NaN)."""
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)
