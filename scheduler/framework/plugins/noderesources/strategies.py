"""NodeResourcesFit's scoring strategies: LeastAllocated, MostAllocated, RequestedToCapacityRatio.

Corresponds to kubernetes ``pkg/scheduler/framework/plugins/noderesources``
``least_allocated.go``, ``most_allocated.go``, ``requested_to_capacity_ratio.go`` and
``plugins/helper/shape_score.go`` (``BuildBrokenLinearFunction``), v1.35. Each resource gets a
0..100 score from (requested with the pod, allocatable); a resource with allocatable 0 is
skipped; the node's score is the weighted mean, in Go's integer arithmetic:

* LeastAllocated: ``(allocatable − requested) × 100 / allocatable`` (0 when over), floor mean;
* MostAllocated: ``min(requested, allocatable) × 100 / allocatable``, floor mean;
* RequestedToCapacityRatio: the piecewise-linear shape at utilization
  ``requested × 100 / allocatable`` (100 when over), shape scores 0..10 scaled by 10; only
  resources scoring above 0 enter the mean, which is rounded half away from zero.

Every scorer has ``score`` over per-resource lists (the reference) and ``score_columns`` over
(resources × nodes) int64 arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from scheduler.apis.config.kube_args import (
    LEAST_ALLOCATED,
    MAX_CUSTOM_PRIORITY_SCORE,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
)
from scheduler.framework.interface import MAX_NODE_SCORE
from scheduler.framework.plugins.noderesources.resource_allocation import Scorer

MAX_UTILIZATION = 100


def _trunc_div(a: int, b: int) -> int:
    """Go's integer division (rounds toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _trunc_div_columns(a: np.ndarray, b: int) -> np.ndarray:
    return np.where(a < 0, -((-a) // b), a // b)


class _WeightedFloorMean:
    """The strategies whose node score is the floor of the weighted mean of all resources."""

    def __init__(self, weights: Sequence[int]) -> None:
        self.weights = tuple(weights)

    def resource_score(self, requested: int, capacity: int) -> int:
        raise NotImplementedError

    def resource_score_columns(self, requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
        """Per-node scores; ``capacity`` has no zeros."""
        raise NotImplementedError

    def score(self, requested: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for req, alloc, weight in zip(requested, allocatable, self.weights):
            if alloc == 0:
                continue
            node_score += self.resource_score(req, alloc) * weight
            weight_sum += weight
        return node_score // weight_sum if weight_sum else 0

    def score_columns(self, requested: np.ndarray, allocatable: np.ndarray,
                      rows: Sequence[int]) -> np.ndarray:
        # Every resource row at once (numpy calls, not arithmetic, are the cost); as zip, a
        # resource beyond the weights is not scored.
        n = sum(1 for r in rows if r < len(self.weights))
        requested, allocatable = requested[:n], allocatable[:n]
        weights = np.array([self.weights[r] for r in rows[:n]], dtype=np.int64)[:, None]
        counted = allocatable != 0
        total_weight = int(weights.sum())
        if total_weight > 0 and counted.all():
            # Every node has every resource (the usual case): a plain weighted floor mean.
            scores = self.resource_score_columns(requested, allocatable)
            return (scores * weights).sum(axis=0) // total_weight
        scores = self.resource_score_columns(requested, np.where(counted, allocatable, 1))
        node_score = (np.where(counted, scores, 0) * weights).sum(axis=0)
        weight_sum = (counted * weights).sum(axis=0)
        return np.where(weight_sum > 0, node_score // np.maximum(weight_sum, 1), 0)


class LeastAllocated(_WeightedFloorMean):
    def resource_score(self, requested: int, capacity: int) -> int:
        if requested > capacity:
            return 0
        return (capacity - requested) * MAX_NODE_SCORE // capacity

    def resource_score_columns(self, requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
        return np.where(requested > capacity, 0,
                        (capacity - requested) * MAX_NODE_SCORE // capacity)


class MostAllocated(_WeightedFloorMean):
    def resource_score(self, requested: int, capacity: int) -> int:
        # Non-zero defaults can push requested past capacity.
        return min(requested, capacity) * MAX_NODE_SCORE // capacity

    def resource_score_columns(self, requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
        return np.minimum(requested, capacity) * MAX_NODE_SCORE // capacity


class RequestedToCapacityRatio:
    def __init__(self, weights: Sequence[int], shape: Sequence[tuple[int, int]]) -> None:
        """``shape``: (utilization 0..100, score 0..MAX_CUSTOM_PRIORITY_SCORE), ascending."""
        self.weights = tuple(weights)
        scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
        self.shape = tuple((u, s * scale) for u, s in shape)

    def _raw(self, p: int) -> int:
        shape = self.shape
        for i, (u, s) in enumerate(shape):
            if p <= u:
                if i == 0:
                    return s
                u0, s0 = shape[i - 1]
                return s0 + _trunc_div((s - s0) * (p - u0), u - u0)
        return shape[-1][1]

    def _raw_columns(self, p: np.ndarray) -> np.ndarray:
        shape = self.shape
        out = np.full(len(p), shape[-1][1], dtype=np.int64)
        # From the last segment back, so the first segment containing p wins.
        for i in range(len(shape) - 1, -1, -1):
            u, s = shape[i]
            if i == 0:
                value = np.full(len(p), s, dtype=np.int64)
            else:
                u0, s0 = shape[i - 1]
                value = s0 + _trunc_div_columns((s - s0) * (p - u0), u - u0)
            out = np.where(p <= u, value, out)
        return out

    def score(self, requested: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for req, alloc, weight in zip(requested, allocatable, self.weights):
            if alloc == 0:
                continue
            utilization = MAX_UTILIZATION if req > alloc else req * MAX_UTILIZATION // alloc
            resource_score = self._raw(utilization)
            if resource_score > 0:
                node_score += resource_score * weight
                weight_sum += weight
        if weight_sum == 0:
            return 0
        # math.Round of the mean: half away from zero (both are non-negative here).
        return (2 * node_score + weight_sum) // (2 * weight_sum)

    def score_columns(self, requested: np.ndarray, allocatable: np.ndarray,
                      rows: Sequence[int]) -> np.ndarray:
        node_score = np.zeros(requested.shape[1], dtype=np.int64)
        weight_sum = np.zeros(requested.shape[1], dtype=np.int64)
        weights = [self.weights[r] for r in rows if r < len(self.weights)]
        for req, alloc, weight in zip(requested, allocatable, weights):
            safe = np.where(alloc != 0, alloc, 1)
            utilization = np.where(req > alloc, MAX_UTILIZATION, req * MAX_UTILIZATION // safe)
            scores = self._raw_columns(utilization)
            counted = (alloc != 0) & (scores > 0)
            node_score += np.where(counted, scores * weight, 0)
            weight_sum += counted * weight
        return np.where(weight_sum > 0,
                        (2 * node_score + weight_sum) // np.maximum(2 * weight_sum, 1), 0)


def strategy_scorer(strategy: Any) -> Scorer:
    """The scorer of a ``ScoringStrategy`` (its type, resource weights and shape)."""
    weights = [r.weight for r in strategy.resources]
    if strategy.type == LEAST_ALLOCATED:
        return LeastAllocated(weights)
    if strategy.type == MOST_ALLOCATED:
        return MostAllocated(weights)
    if strategy.type == REQUESTED_TO_CAPACITY_RATIO:
        shape = strategy.requested_to_capacity_ratio.shape
        return RequestedToCapacityRatio(weights, [(p.utilization, p.score) for p in shape])
    raise ValueError(f"scoring strategy {strategy.type} is not supported")
