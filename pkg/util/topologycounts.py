"""Pods counted per node and per topology domain, kept up to date from one cycle to the next.

Corresponds to the counting in kube-scheduler's ``plugins/interpodaffinity``
(``topologyToMatchedTermCount``, the PreScore ``scoreMap``) and ``plugins/podtopologyspread``
(``TpValueToMatchNum``, ``countPodsMatchSelector``). Upstream walks every pod of every node in
each PreFilter; in Python that walk would cost more than the rest of the cycle, so:

* ``PodCounter`` keeps, per question ("pods of namespace N matching selector S"), the number of
  matching pods on each node of the snapshot, and recounts only the nodes whose NodeInfo object
  changed since it last looked. That relies on the snapshot *replacing* a NodeInfo whenever its
  pods change, as ``Cache.update_snapshot`` does (NodeInfos compare equal only to themselves).
* ``DomainCounts`` sums per-node numbers into the domains of one topology key, given the key's
  label column (per node, the code of its value or -1 without the label, and value → code),
  and is read and updated by value, as upstream's maps are, by the Filter of a single node and
  by PreFilterExtensions' AddPod/RemovePod.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

# Nodes compared per block when looking for the replaced ones: comparing list slices runs in C.
_BLOCK = 128


class LabelColumn(Protocol):
    # Read-only members: a frozen dataclass (or any object with these attributes) fits.
    @property
    def codes(self) -> np.ndarray:
        """Per node: the code of its value of the key, -1 without the label."""
        ...

    @property
    def index(self) -> Mapping[str, int]:
        """Value → code."""
        ...


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _changed(seen: list[Any], now: Sequence[Any]) -> list[int]:
    out: list[int] = []
    n = len(now)
    for start in range(0, n, _BLOCK):
        end = min(start + _BLOCK, n)
        if seen[start:end] != now[start:end]:
            out.extend(i for i in range(start, end) if seen[i] is not now[i])
    return out


class _Entry:
    __slots__ = ("seen", "counts")

    def __init__(self, seen: list[Any], counts: np.ndarray) -> None:
        self.seen = seen
        self.counts = counts


class PodCounter:
    """Per node, how many of its pods a predicate accepts; one entry per question, the
    ``capacity`` most recently asked kept."""

    def __init__(self, capacity: int = 128) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()

    def counts(self, node_infos: Sequence[Any], key: Hashable,
               match: Callable[[Any], bool]) -> np.ndarray:
        """Read-only int64 array over ``node_infos``: pods on each node that ``match`` accepts.

        ``key`` names the question: two calls with the same key must pass equivalent
        predicates. The array is never changed afterwards (a later call returns a new one).
        """
        entry = self._entries.get(key)
        if entry is None or len(entry.seen) != len(node_infos):
            counts = np.fromiter((sum(map(match, ni.pods.values())) for ni in node_infos),
                                 dtype=np.int64, count=len(node_infos))
            entry = self._entries[key] = _Entry(list(node_infos), _read_only(counts))
            if len(self._entries) > self._capacity:
                self._entries.popitem(last=False)
            return entry.counts
        self._entries.move_to_end(key)
        changed = _changed(entry.seen, node_infos)
        if changed:
            counts = entry.counts.copy()
            for i in changed:
                ni = node_infos[i]
                counts[i] = sum(map(match, ni.pods.values()))
                entry.seen[i] = ni
            entry.counts = _read_only(counts)
        return entry.counts


class DomainCounts:
    """A number per domain (value) of one topology key: matching pods, or a score.

    ``present`` marks the domains that exist for the question (upstream: the value is a key of
    the map, even with a zero count). Arrays are indexed by the column's codes; a value that no
    node of the snapshot has (a node changed in a simulation) gets a code of its own.
    """

    __slots__ = ("codes", "index", "counts", "present", "_min")

    def __init__(self, column: LabelColumn, counts: np.ndarray, present: np.ndarray) -> None:
        self.codes = column.codes
        self.index = column.index
        self.counts = counts
        self.present = present
        self._min: tuple[int, int | None] | None = None

    @classmethod
    def zeros(cls, column: LabelColumn) -> DomainCounts:
        d = len(column.index)
        return cls(column, np.zeros(d, dtype=np.int64), np.zeros(d, dtype=bool))

    @classmethod
    def summed(cls, column: LabelColumn, per_node: np.ndarray | None,
               eligible: np.ndarray | None = None) -> DomainCounts:
        """Per domain, the sum of ``per_node`` over its ``eligible`` nodes (all when None);
        the domains of eligible nodes are present. ``per_node`` None sums zeros."""
        codes = column.codes
        has = codes >= 0 if eligible is None else (codes >= 0) & eligible
        d = len(column.index)
        on = codes[has]
        present = np.bincount(on, minlength=d) > 0
        if per_node is None:
            counts = np.zeros(d, dtype=np.int64)
        else:
            counts = np.bincount(on, weights=per_node[has], minlength=d).astype(np.int64)
        return cls(column, counts, present)

    def clone(self) -> DomainCounts:
        c = DomainCounts.__new__(DomainCounts)
        c.codes, c.index = self.codes, self.index
        c.counts, c.present = self.counts.copy(), self.present.copy()
        c._min = self._min
        return c

    def get(self, value: str) -> int:
        code = self.index.get(value)
        return 0 if code is None or code >= len(self.counts) else int(self.counts[code])

    def add(self, value: str, delta: int) -> None:
        """Add ``delta`` to the domain ``value``, which becomes present."""
        code = self.index.get(value)
        if code is None:
            code = len(self.counts)
            self.index = {**self.index, value: code}
            self.counts = np.append(self.counts, np.int64(0))
            self.present = np.append(self.present, False)
        self.counts[code] += delta
        self.present[code] = True
        self._min = None

    def add_summed(self, per_node: np.ndarray, weight: int = 1) -> None:
        """Add ``weight`` times ``per_node`` summed over each domain's nodes."""
        self.counts += DomainCounts.summed(self, per_node).counts * weight
        self._min = None

    def any_nonzero(self) -> bool:
        return bool(self.counts.any())

    def num_present(self) -> int:
        return self._minimum()[0]

    def min_present(self) -> int | None:
        """The smallest number among present domains; None when none is present."""
        return self._minimum()[1]

    def _minimum(self) -> tuple[int, int | None]:
        if self._min is None:
            n = int(self.present.sum())
            self._min = (n, int(self.counts[self.present].min()) if n else None)
        return self._min

    def at(self, node_idx: np.ndarray | None = None) -> np.ndarray:
        """Per node (the snapshot's, or those at ``node_idx``), its domain's number; 0 for a
        node without the label."""
        codes = self.codes if node_idx is None else self.codes[node_idx]
        if len(self.counts) == 0:
            return np.zeros(len(codes), dtype=np.int64)
        return np.where(codes >= 0, self.counts[codes], 0)


__all__ = ["DomainCounts", "LabelColumn", "PodCounter"]
