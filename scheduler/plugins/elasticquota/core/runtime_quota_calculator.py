"""Fair sharing of a parent quota's runtime among its children.

Corresponds to upstream ``pkg/scheduler/plugins/elasticquota/core/runtime_quota_calculator.go``:
one ``RuntimeQuotaCalculator`` per parent quota (and one for the root) owns, per resource
dimension, the children's limited request, auto-scaled min, guarantee and shared weight, and
redistributes the parent's total among them (§8.3). Quantities are integers: cpu in milli,
everything else in units (bytes for memory), as ``pkg.util.podresources`` reads them.

The calculator is lazy and versioned like upstream: every change that can move a runtime bumps
``version``; a quota's runtime is recomputed only when its ``runtime_version`` is older, and then
for all its siblings at once, in the dimensions whose inputs moved. Unlike upstream, a write that
changes nothing leaves the version alone, so an unchanged parent total or limited request does
not force a recomputation.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np

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


@dataclass(frozen=True, slots=True)
class QuotaNode:
    """One child in one resource dimension (upstream ``quotaNode``): what redistribution reads."""

    name: str
    request: int  # the child's limited request: min(request, max)
    shared_weight: int
    min: int  # the auto-scaled min
    guarantee: int
    allow_lent: bool


def hamilton_deltas(total: int, weight_sum: int, shares: np.ndarray) -> np.ndarray:
    """Split ``total`` in proportion to ``shares`` (weights ≥ 0, summing to ``weight_sum``),
    exactly.

    Largest remainder: each gets ⌊w·total/W⌋; the units left go one each to the largest
    remainders (w·total mod W), ties to the earlier share (callers list them in name order).
    ``shares`` is int64 where every product w·total fits, else Python integers (dtype object).
    """
    if weight_sum <= 0 or total <= 0 or not shares.size:
        return np.zeros_like(shares)
    products = shares * total
    deltas: np.ndarray = products // weight_sum
    residual = total - int(deltas.sum())
    if residual > 0:
        # Descending remainders, equal ones by position (a stable sort of their negation).
        deltas[np.argsort(-(products % weight_sum), kind="stable")[:residual]] += 1
    return deltas


class Dimension:
    """One resource dimension of a calculator's children (§8.3), as parallel integer lists.

    The lists are kept in name order, so the largest-remainder split breaks ties by name with a
    stable sort, and each child's runtime before borrowing is kept from its last change. A
    redistribution among many children runs on numpy columns of the borrowers (int64 where
    nothing can overflow, else exact Python integers) instead of a Python loop over 1,000
    children per round; among a few, in Python.
    """

    __slots__ = ("_base", "_borrows", "_index", "_nodes", "_request", "_weight", "dirty",
                 "names", "runtime")

    def __init__(self) -> None:
        self.names: list[str] = []
        self._index: dict[str, int] = {}
        self._nodes: list[QuotaNode] = []
        self._request: list[int] = []
        self._weight: list[int] = []
        # The runtime before borrowing, and whether the child wants more than its floor.
        self._base: list[int] = []
        self._borrows: list[bool] = []
        self.runtime: list[int] = []
        self.dirty = True  # the runtimes are stale

    def set(self, node: QuotaNode) -> bool:
        """Insert or replace a child; returns whether anything changed."""
        floor = node.min if node.min >= node.guarantee else node.guarantee
        borrows = node.request > floor
        # A quota that does not lend keeps its whole min even when it asks for less.
        base = floor if borrows or not node.allow_lent else node.request
        i = self._index.get(node.name)
        if i is None:
            i = bisect.bisect_left(self.names, node.name)
            self.names.insert(i, node.name)
            self._nodes.insert(i, node)
            self._request.insert(i, node.request)
            self._weight.insert(i, node.shared_weight)
            self._base.insert(i, base)
            self._borrows.insert(i, borrows)
            self._reindex(i)
        elif self._nodes[i] == node:
            return False
        else:
            self._nodes[i] = node
            self._request[i], self._weight[i] = node.request, node.shared_weight
            self._base[i], self._borrows[i] = base, borrows
        self.dirty = True
        return True

    def delete(self, name: str) -> None:
        i = self._index.pop(name, None)
        if i is None:
            return
        for column in (self.names, self._nodes, self._request, self._weight, self._base,
                       self._borrows):
            del column[i]
        self._reindex(i)
        self.dirty = True

    def _reindex(self, start: int) -> None:
        for i in range(start, len(self.names)):
            self._index[self.names[i]] = i

    def runtime_of(self, name: str) -> int | None:
        i = self._index.get(name)
        return None if i is None else self.runtime[i]

    def redistribute(self, total: int) -> None:
        """Set every child's runtime from the parent's ``total`` (§8.3)."""
        self.dirty = False
        base, borrows = self._base, self._borrows
        remaining = total - sum(base)
        if remaining <= 0 or not any(borrows):
            self.runtime = base.copy()
            return
        if len(base) < _NUMPY_FROM:
            self.runtime = _split_in_python(remaining, base, borrows, self._request, self._weight)
            return
        # The borrowers' columns, in name order: they start at their floor and share the rest.
        index = np.flatnonzero(np.array(borrows, dtype=bool))
        runtime, want, weight = _columns(total, index, base, self._request, self._weight)
        got, want = runtime[index], want[index]
        hungry = weight > 0
        if remaining >= int((want[hungry] - got[hungry]).sum()):
            # Enough for every borrower with a weight: the rounds below would end the same way.
            runtime[index[hungry]] = want[hungry]
            self.runtime = runtime.tolist()
            return
        while remaining > 0 and index.size:
            weight_sum = int(weight.sum())
            if weight_sum <= 0:
                break
            got = got + hamilton_deltas(remaining, weight_sum, np.where(hungry, weight, 0))
            short = got < want
            if short.all():
                break  # nothing handed back: nothing left to share
            # The satisfied keep their request; what they got beyond it goes round again.
            over = ~short
            remaining = int((got[over] - want[over]).sum())
            runtime[index[over]] = want[over]
            index, got, want, weight, hungry = (
                index[short], got[short], want[short], weight[short], hungry[short])
        runtime[index] = got
        self.runtime = runtime.tolist()


def _split_in_python(remaining: int, base: list[int], borrows: list[bool], request: list[int],
                     weight: list[int]) -> list[int]:
    """``Dimension.redistribute`` for a few children, where numpy's fixed cost per call
    outweighs a Python loop: the same rounds and the same largest-remainder split."""
    runtime = base.copy()
    index = [i for i, b in enumerate(borrows) if b]
    hungry = [i for i in index if weight[i] > 0]
    if remaining >= sum(request[i] - runtime[i] for i in hungry):
        for i in hungry:
            runtime[i] = request[i]
        return runtime
    while remaining > 0 and index:
        weight_sum = sum(weight[i] for i in index)
        if weight_sum <= 0:
            break
        products = [weight[i] * remaining if weight[i] > 0 else 0 for i in index]
        deltas = [p // weight_sum for p in products]
        residual = remaining - sum(deltas)
        if residual > 0:
            # Descending remainders, equal ones by position (a stable sort).
            for j in sorted(range(len(products)), key=lambda j: products[j] % weight_sum,
                            reverse=True)[:residual]:
                deltas[j] += 1
        remaining, still = 0, []
        for i, delta in zip(index, deltas, strict=True):
            got = runtime[i] + delta
            if got < request[i]:
                runtime[i] = got
                still.append(i)
            else:
                # Satisfied: what it got beyond its request goes round again.
                remaining += got - request[i]
                runtime[i] = request[i]
        index = still
    return runtime


def _columns(total: int, index: np.ndarray, base: list[int], request: list[int],
             weight: list[int], *, exact: bool = False
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The children's base and request, and the borrowers' (``index``) weights divided by
    their greatest common divisor: int64 when no sum of a column, and no product of a weight
    and what is left to share, can leave it; else (or ``exact``) Python integers, exact at any
    size.

    Dividing the weights keeps every quotient and the order of the remainders of a split; it
    lets byte-sized memory weights fit int64. Without negative values what is left to share
    never exceeds ``total`` and a split never hands out more than it.
    """
    n = len(base) + 1
    fits = False
    if not exact:
        try:
            columns = [np.array(c, dtype=np.int64) for c in (base, request, weight)]
            fits = total * n < _INT64 and all(
                c.min() >= 0 and int(c.max()) * n < _INT64 for c in columns)
        except OverflowError:
            pass
    if not fits:
        columns = [np.array(c, dtype=object) for c in (base, request, weight)]
    borrowers = columns[2][index]
    borrowers //= np.gcd.reduce(borrowers) or 1
    if fits and int(borrowers.max()) * total >= _INT64:
        return _columns(total, index, base, request, weight, exact=True)
    return columns[0], columns[1], borrowers


_INT64 = 2**63
# From this many children on, a redistribution runs on numpy columns (measured: 5 children
# 16 µs in Python, 90 µs with numpy; even at about 60; 1,000 children 6× faster with numpy).
_NUMPY_FROM = 64


class RuntimeQuotaCalculator:
    """The runtime of the children of one parent quota (upstream ``RuntimeQuotaCalculator``)."""

    __slots__ = ("_dimensions", "_members", "resource_keys", "total", "tree_name", "version")

    def __init__(self, tree_name: str) -> None:
        self.tree_name = tree_name
        self.version = 1
        self.resource_keys: frozenset[str] = frozenset()
        self.total: ResourceInts = {}
        self._dimensions: dict[str, Dimension] = {}
        self._members: set[str] = set()

    def update_resource_keys(self, keys: Iterable[str]) -> None:
        """Compute these dimensions only (the names in any quota's ``max``)."""
        keys = frozenset(keys)
        if keys == self.resource_keys:
            return
        self.resource_keys = keys
        for key in list(self._dimensions):
            if key not in keys:
                del self._dimensions[key]
        self._dimensions.update({key: Dimension() for key in keys
                                 if key not in self._dimensions})
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
        for key, dimension in self._dimensions.items():
            node = QuotaNode(quota.name, request.get(key, 0), quota.shared_weight.get(key, 0),
                             quota.auto_scale_min.get(key, 0), quota.guaranteed.get(key, 0),
                             quota.allow_lent)
            changed = dimension.set(node) or changed
        if changed:
            self.version += 1
        return changed

    def delete_member(self, name: str) -> None:
        self._members.discard(name)
        for dimension in self._dimensions.values():
            dimension.delete(name)
        self.version += 1

    def set_total(self, total: Mapping[str, int]) -> None:
        """The parent's runtime (for the root: the cluster total less system and default used)."""
        if dict(total) == self.total:
            return
        for key, dimension in self._dimensions.items():
            if total.get(key, 0) != self.total.get(key, 0):
                dimension.dirty = True
        self.total = dict(total)
        self.version += 1

    def runtime_of(self, name: str) -> ResourceInts:
        """A child's runtime in every computed dimension, redistributing the stale ones first.

        One redistribution serves all siblings until the next change of that dimension.
        """
        out: ResourceInts = {}
        for key, dimension in self._dimensions.items():
            if dimension.dirty:
                dimension.redistribute(self.total.get(key, 0))
            runtime = dimension.runtime_of(name)
            if runtime is not None:
                out[key] = runtime
        return out


__all__ = [
    "CalculatorMember", "Dimension", "QuotaNode", "ResourceInts", "RuntimeQuotaCalculator",
    "hamilton_deltas",
]
