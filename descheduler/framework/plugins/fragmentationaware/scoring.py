"""A node's imbalance: the spread of the shares of its resources its pods request.

Corresponds to koordinator ``pkg/descheduler/framework/plugins/fragmentationaware/scoring.go``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from descheduler.framework.types import Obj
from descheduler.utils.node import PODS
from pkg.util.podresources import pod_requests, resource_list


def std_dev(values: Sequence[float]) -> float:
    """The population standard deviation (0 for no values)."""
    if not values:
        return 0.0
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


@dataclass(slots=True)
class NodeImbalance:
    """Requested totals and allocatable of the tracked resources (those the node has), so the
    score without one pod is a subtraction away."""

    resources: list[str]
    requested: list[int]
    allocatable: list[int]

    @classmethod
    def of(cls, node: Obj, pods: Sequence[Obj], resources: Sequence[str]) -> NodeImbalance:
        allocatable = resource_list((node.get("status") or {}).get("allocatable"))
        totals: dict[str, int] = {}
        for pod in pods:
            for r, q in pod_requests(pod).items():
                totals[r] = totals.get(r, 0) + q
        tracked = [r for r in resources if allocatable.get(r, 0) != 0]
        return cls(tracked, [len(pods) if r == PODS else totals.get(r, 0) for r in tracked],
                   [allocatable[r] for r in tracked])

    def score(self) -> float:
        return std_dev([used / alloc for used, alloc in zip(self.requested, self.allocatable,
                                                             strict=True)])

    def score_without(self, pod: Obj) -> float:
        """The score once ``pod`` has left the node."""
        requests = pod_requests(pod)
        return std_dev([(used - (1 if r == PODS else requests.get(r, 0))) / alloc
                        for r, used, alloc in zip(self.resources, self.requested,
                                                  self.allocatable, strict=True)])
