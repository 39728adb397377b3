"""Fair sharing of a parent quota's runtime among its children.

Corresponds to upstream ``pkg/scheduler/plugins/elasticquota/core/runtime_quota_calculator.go``:
one ``RuntimeQuotaCalculator`` per parent quota (and one for the root) owns, per resource
dimension, the children's limited request, auto-scaled min, guarantee and shared weight, and
redistributes the parent's total among them (§8.3). Quantities are integers: cpu in milli,
everything else in units (bytes for memory), as ``pkg.util.podresources`` reads them.

The calculator is lazy and versioned like upstream: every change that can move a runtime bumps
``version``; a quota's runtime is recomputed only when its ``runtime_version`` is older, and then
for all its siblings at once. Unlike upstream, a write that changes nothing leaves the version
alone, so an unchanged parent total or limited request does not force a recomputation.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

ResourceInts = dict[str, int]


class CalculatorMember(Protocol):
    """What a calculator reads from a child quota (``QuotaInfo`` provides it)."""

    @property
    def name(self) -> str: ...

    @property
    def allow_lent(self) -> bool: ...

    @property
    def shared_weight(self) -> ResourceInts: ...

    @property
    def auto_scale_min(self) -> ResourceInts: ...

    @property
    def guaranteed(self) -> ResourceInts: ...

    def limited_request(self) -> ResourceInts: ...


@dataclass(slots=True)
class QuotaNode:
    """One child in one resource dimension (upstream ``quotaNode``)."""

    name: str
    request: int  # the child's limited request: min(request, max)
    shared_weight: int
    min: int  # the auto-scaled min
    guarantee: int
    allow_lent: bool
    runtime: int = 0


def hamilton_deltas(total: int, weight_sum: int, weights: list[int],
                    names: list[str]) -> list[int]:
    """Split ``total`` in proportion to ``weights`` (summing to ``weight_sum``), exactly.

    Largest remainder: each gets ⌊w·total/W⌋; the units left go one each to the largest
    remainders (w·total mod W), ties by quota name. Weight ≤ 0 gets nothing.
    """
    if weight_sum <= 0 or total <= 0 or not weights:
        return [0] * len(weights)
    products = [w * total if w > 0 else 0 for w in weights]
    deltas = [p // weight_sum for p in products]
    residual = total - sum(deltas)
    if residual > 0:
        # (−remainder, name): the first `residual` of this order get one more unit each.
        order = [(d * weight_sum - p, names[i], i)
                 for i, (p, d) in enumerate(zip(products, deltas, strict=True)) if p > 0]
        if residual * 8 < len(order):
            best = heapq.nsmallest(residual, order)
        else:
            order.sort()
            best = order[:residual]
        for _, _, i in best:
            deltas[i] += 1
    return deltas


def redistribute(total: int, nodes: Iterable[QuotaNode]) -> None:
    """Set every node's runtime from the parent's ``total`` (§8.3)."""
    remaining = total
    borrowers: list[QuotaNode] = []
    for node in nodes:
        floor = node.min if node.min >= node.guarantee else node.guarantee
        if node.request > floor:
            # Wants more than its min: starts at its min and borrows from what is left.
            borrowers.append(node)
            node.runtime = floor
        elif node.allow_lent:
            node.runtime = node.request
        else:
            # A quota that does not lend keeps its whole min even when it asks for less.
            node.runtime = floor
        remaining -= node.runtime
    if remaining <= 0 or not borrowers:
        return
    hungry = [node for node in borrowers if node.shared_weight > 0]
    if remaining >= sum(node.request - node.runtime for node in hungry):
        # Enough for every borrower with a weight: the rounds below would end the same way.
        for node in hungry:
            node.runtime = node.request
        return
    while remaining > 0 and borrowers:
        weights = [node.shared_weight for node in borrowers]
        weight_sum = sum(weights)
        if weight_sum <= 0:
            return
        deltas = hamilton_deltas(remaining, weight_sum, weights,
                                 [node.name for node in borrowers])
        still: list[QuotaNode] = []
        remaining = 0
        for node, delta in zip(borrowers, deltas, strict=True):
            runtime = node.runtime + delta
            if runtime < node.request:
                node.runtime = runtime
                still.append(node)
            else:
                # Satisfied: what it got beyond its request goes round again.
                remaining += runtime - node.request
                node.runtime = node.request
        borrowers = still


class RuntimeQuotaCalculator:
    """The runtime of the children of one parent quota (upstream ``RuntimeQuotaCalculator``)."""

    __slots__ = ("_calculated", "_members", "_trees", "resource_keys", "total", "tree_name",
                 "version")

    def __init__(self, tree_name: str) -> None:
        self.tree_name = tree_name
        self.version = 1
        self.resource_keys: frozenset[str] = frozenset()
        self.total: ResourceInts = {}
        # dimension → child name → node
        self._trees: dict[str, dict[str, QuotaNode]] = {}
        self._members: set[str] = set()
        self._calculated = 0  # the version the nodes' runtimes were computed at

    def update_resource_keys(self, keys: Iterable[str]) -> None:
        """Compute these dimensions only (the names in any quota's ``max``)."""
        keys = frozenset(keys)
        if keys == self.resource_keys:
            return
        self.resource_keys = keys
        for key in list(self._trees):
            if key not in keys:
                del self._trees[key]
        self._trees.update({key: {} for key in keys if key not in self._trees})
        self.version += 1

    def has_member(self, name: str) -> bool:
        return name in self._members

    def update_member(self, quota: CalculatorMember) -> bool:
        """Insert or refresh a child's request limit, min, guarantee, weight and lending.

        Returns whether anything changed (and so the version moved).
        """
        self._members.add(quota.name)
        request = quota.limited_request()
        changed = False
        for key, tree in self._trees.items():
            node = tree.get(quota.name)
            values = (request.get(key, 0), quota.shared_weight.get(key, 0),
                      quota.auto_scale_min.get(key, 0), quota.guaranteed.get(key, 0))
            if node is None:
                tree[quota.name] = QuotaNode(quota.name, *values, allow_lent=quota.allow_lent)
                changed = True
            elif (node.request, node.shared_weight, node.min, node.guarantee) != values or \
                    node.allow_lent != quota.allow_lent:
                node.request, node.shared_weight, node.min, node.guarantee = values
                node.allow_lent = quota.allow_lent
                changed = True
        if changed:
            self.version += 1
        return changed

    def delete_member(self, name: str) -> None:
        self._members.discard(name)
        for tree in self._trees.values():
            tree.pop(name, None)
        self.version += 1

    def set_total(self, total: Mapping[str, int]) -> None:
        """The parent's runtime (for the root: the cluster total less system and default used)."""
        if dict(total) != self.total:
            self.total = dict(total)
            self.version += 1

    def runtime_of(self, name: str) -> ResourceInts:
        """A child's runtime in every computed dimension, redistributing first if stale.

        One redistribution serves all siblings until the next change.
        """
        if self._calculated != self.version:
            for key, tree in self._trees.items():
                redistribute(self.total.get(key, 0), tree.values())
            self._calculated = self.version
        return {key: node.runtime for key, tree in self._trees.items()
                if (node := tree.get(name)) is not None}


__all__ = [
    "CalculatorMember", "QuotaNode", "ResourceInts", "RuntimeQuotaCalculator", "hamilton_deltas",
    "redistribute",
]
