"""Scoring a node by how much of each resource it would have allocated with the pod on it.

Corresponds to kubernetes ``pkg/scheduler/framework/plugins/noderesources/resource_allocation.go``
(``resourceAllocationScorer``), v1.35. For each configured resource the node's allocatable and
its requested amount *including the pod* are handed to a strategy's scorer:

* cpu and memory use the node's NonZeroRequested and the pod's non-zero request (100m / 200 MiB
  for containers that request none), unless ``use_requested`` (BalancedAllocation) asks for the
  actual requests;
* ephemeral-storage and scalar resources use actual requests; a scalar resource the pod does not
  request, and any resource the node has no allocatable of, is left out (allocatable 0), as is
  anything else (``pods``, names that are not scalar).

``score`` is the reference for one NodeInfo; ``score_nodes`` computes the same over snapshot
columns. A scorer gives both forms: ``score`` over per-resource lists and ``score_columns`` over
(resources × nodes) arrays, where allocatable 0 marks a resource to skip (whatever requested
holds there).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from pkg.util.podresources import CPU, EPHEMERAL_STORAGE, MEMORY
from scheduler.framework.plugins.noderesources.resource_names import is_scalar_resource_name
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.types import NodeInfo, PodInfo

# Rows of Snapshot.non_zero.
_NON_ZERO_ROW = {CPU: 0, MEMORY: 1}


class Scorer(Protocol):
    def score(self, requested: Sequence[int], allocatable: Sequence[int]) -> int: ...

    def score_columns(self, requested: np.ndarray, allocatable: np.ndarray,
                      rows: Sequence[int]) -> np.ndarray:
        """``rows[j]``: the index among the configured resources (their weights) of row j;
        the resources left out of every node have no row."""
        ...


def _left_out(resource: str, pod_request: int) -> bool:
    if resource in (CPU, MEMORY, EPHEMERAL_STORAGE):
        return False
    return pod_request == 0 or not is_scalar_resource_name(resource)


class ResourceAllocationScorer:
    def __init__(self, resources: Sequence[str], scorer: Scorer, *,
                 use_requested: bool = False) -> None:
        self.resources = tuple(resources)
        self.scorer = scorer
        self.use_requested = use_requested

    def pod_requests(self, pod: PodInfo) -> tuple[int, ...]:
        """The pod's request of each resource, as the node side counts it."""
        out = []
        for r in self.resources:
            if not self.use_requested and r == CPU:
                out.append(pod.non_zero_cpu)
            elif not self.use_requested and r == MEMORY:
                out.append(pod.non_zero_memory)
            else:
                out.append(pod.requests.get(r, 0))
        return tuple(out)

    def _allocatable_requested(self, node_info: NodeInfo, resource: str,
                               pod_request: int) -> tuple[int, int]:
        if _left_out(resource, pod_request):
            return 0, 0
        if not self.use_requested and resource == CPU:
            used = node_info.non_zero_cpu
        elif not self.use_requested and resource == MEMORY:
            used = node_info.non_zero_memory
        else:
            used = node_info.requested.get(resource, 0)
        return node_info.allocatable.get(resource, 0), used + pod_request

    def score(self, node_info: NodeInfo, pod_requests: Sequence[int]) -> int:
        requested, allocatable = [], []
        for resource, pod_request in zip(self.resources, pod_requests):
            alloc, req = self._allocatable_requested(node_info, resource, pod_request)
            # Resources the node has none of do not count.
            requested.append(req if alloc else 0)
            allocatable.append(alloc)
        return self.scorer.score(requested, allocatable)

    def score_nodes(self, snapshot: Snapshot, idx: np.ndarray,
                    pod_requests: Sequence[int]) -> np.ndarray:
        # Only the resources some node may count get a row, gathered straight into it, and the
        # pod is added to every row at once: each numpy call on a few hundred columns costs
        # more than its arithmetic, so fewer calls is what makes Score cheaper.
        included = []
        for i, (resource, pod_request) in enumerate(zip(self.resources, pod_requests)):
            if _left_out(resource, pod_request):
                continue
            row = snapshot.resource_row(resource)
            if row is not None:
                included.append((i, resource, row, pod_request))
        m = len(idx)
        requested = np.empty((len(included), m), dtype=np.int64)
        allocatable = np.empty((len(included), m), dtype=np.int64)
        for j, (_, resource, row, _) in enumerate(included):
            if not self.use_requested and resource in _NON_ZERO_ROW:
                np.take(snapshot.non_zero[_NON_ZERO_ROW[resource]], idx, out=requested[j])
            else:
                np.take(snapshot.requested[row], idx, out=requested[j])
            np.take(snapshot.allocatable[row], idx, out=allocatable[j])
        requested += np.array([r for *_, r in included], dtype=np.int64)[:, None]
        return self.scorer.score_columns(requested, allocatable, [i for i, *_ in included])
