"""NodeResourcesBalancedAllocation: prefer nodes whose resources would be used evenly.

Corresponds to kubernetes
``pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go``, v1.35. Over
``args.resources`` (cpu and memory by default) each node gets the fractions
requested / allocatable (actual requests with the pod, not the non-zero ones; capped at 1;
resources the node has none of, or scalar ones the pod does not request, left out) and scores
``(1 − std) × 100`` truncated, where std is |f1 − f2| / 2 for two fractions, the population
standard deviation for more, 0 for fewer. PreScore skips a pod that requests none of the
resources (best-effort), so that such pods do not all pile onto one node.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from scheduler.apis.config import NodeResourcesBalancedAllocationArgs
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import MAX_NODE_SCORE, PreScorePlugin, ScorePlugin
from scheduler.framework.plugins.noderesources.resource_allocation import (
    ResourceAllocationScorer,
)
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.interface import ExtendedHandle

NAME = "NodeResourcesBalancedAllocation"
PRE_SCORE_STATE_KEY = "PreScore" + NAME


class BalancedScorer:
    """``balancedResourceScorer`` in Go's float64 arithmetic, per node and per column."""

    def score(self, requested: Sequence[int], allocatable: Sequence[int]) -> int:
        fractions = [min(float(req) / float(alloc), 1.0)
                     for req, alloc in zip(requested, allocatable) if alloc != 0]
        std = 0.0
        if len(fractions) == 2:
            std = abs((fractions[0] - fractions[1]) / 2)
        elif len(fractions) > 2:
            total = 0.0
            for f in fractions:
                total += f
            mean = total / len(fractions)
            squares = 0.0
            for f in fractions:
                squares += (f - mean) * (f - mean)
            std = math.sqrt(squares / len(fractions))
        return int((1 - std) * MAX_NODE_SCORE)

    def score_columns(self, requested: np.ndarray, allocatable: np.ndarray,
                      rows: Sequence[int]) -> np.ndarray:
        m = requested.shape[1]
        counted = allocatable != 0
        fractions = np.minimum(
            requested.astype(np.float64) / np.where(counted, allocatable, 1).astype(np.float64),
            1.0)
        if len(fractions) <= 2:
            # The default cpu and memory: std is |f1 − f2| / 2 where both count, else 0, in a
            # handful of numpy calls instead of the general loop's forty.
            std = (np.where(counted[0] & counted[1], np.abs((fractions[0] - fractions[1]) / 2),
                            0.0) if len(fractions) == 2 else np.zeros(m))
            return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)
        n = counted.sum(axis=0)
        total = np.zeros(m)
        first = np.zeros(m)
        second = np.zeros(m)
        seen = np.zeros(m, dtype=np.int64)
        for f, c in zip(fractions, counted):
            # Adding 0.0 for a skipped resource keeps the sum bit-identical to Go's.
            total += np.where(c, f, 0.0)
            first = np.where(c & (seen == 0), f, first)
            second = np.where(c & (seen == 1), f, second)
            seen += c
        std = np.where(n == 2, np.abs((first - second) / 2), 0.0)
        many = n > 2
        if many.any():
            count = np.where(many, n, 1)
            mean = total / count
            squares = np.zeros(m)
            for f, c in zip(fractions, counted):
                d = f - mean
                squares += np.where(c, d * d, 0.0)
            std = np.where(many, np.sqrt(squares / count), std)
        return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)


class BalancedAllocation(PreScorePlugin, ScorePlugin):
    name = NAME

    def __init__(self, args: NodeResourcesBalancedAllocationArgs | None,
                 handle: ExtendedHandle) -> None:
        args = args if args is not None else NodeResourcesBalancedAllocationArgs()
        super().__init__(args, handle)
        self.scorer = ResourceAllocationScorer([r.name for r in args.resources],
                                               BalancedScorer(), use_requested=True)

    def _pod_requests(self, pod: PodInfo) -> tuple[int, ...]:
        memo = pod.memo.get(self.name)
        if memo is None:
            memo = pod.memo[self.name] = self.scorer.pod_requests(pod)
        return memo

    def pre_score(self, state: CycleState, pod: PodInfo,
                  nodes: Sequence[NodeInfo]) -> Status | None:
        requests = self._pod_requests(pod)
        if not any(requests):
            return Status(Code.SKIP)
        state.write(PRE_SCORE_STATE_KEY, requests)
        return None

    def score(self, state: CycleState, pod: PodInfo,
              node_info: NodeInfo) -> tuple[int, Status | None]:
        requests = state.get(PRE_SCORE_STATE_KEY) or self._pod_requests(pod)
        if not any(requests):
            return 0, None
        return self.scorer.score(node_info, requests), None

    def score_nodes(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
                    idx: np.ndarray) -> tuple[np.ndarray, Status | None]:
        requests = state.get(PRE_SCORE_STATE_KEY) or self._pod_requests(pod)
        if not any(requests):
            return np.zeros(len(idx), dtype=np.int64), None
        return self.scorer.score_nodes(snapshot, idx, requests), None
