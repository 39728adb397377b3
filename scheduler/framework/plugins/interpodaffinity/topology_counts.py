"""Numbers per topology pair (key, value): matching pods at PreFilter, scores at PreScore.

Corresponds to kube-scheduler ``plugins/interpodaffinity`` ``topologyToMatchedTermCount``
(filtering.go) and ``scoreMap`` (scoring.go): upstream's map keyed by (key, value) becomes one
``DomainCounts`` per topology key over the snapshot's label column of that key, so a Filter or
Score over every node is a lookup of each node's value code.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

from pkg.util.topologycounts import DomainCounts
from scheduler.framework.plugins.nodeaffinity.columns import label_column
from scheduler.framework.snapshot import Snapshot


class TopologyCounts:
    __slots__ = ("snapshot", "by_key")

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.by_key: dict[str, DomainCounts] = {}

    def clone(self) -> TopologyCounts:
        c = TopologyCounts(self.snapshot)
        c.by_key = {k: v.clone() for k, v in self.by_key.items()}
        return c

    def _of(self, key: str) -> DomainCounts:
        counts = self.by_key.get(key)
        if counts is None:
            counts = self.by_key[key] = DomainCounts.zeros(label_column(self.snapshot, key))
        return counts

    def update(self, node_labels: Mapping[str, str], key: str, delta: int) -> bool:
        """Add ``delta`` to the node's pair of ``key``; False when the node lacks the label."""
        value = node_labels.get(key)
        if value is None:
            return False
        self._of(key).add(value, delta)
        return True

    def add_per_node(self, key: str, per_node: np.ndarray, weight: int = 1) -> bool:
        """Add ``weight`` times each node's number to its pair of ``key``; whether any node
        with the label had a non-zero number."""
        counts = self._of(key)
        counts.add_summed(per_node, weight)
        return bool(per_node[counts.codes >= 0].any())

    def get(self, key: str, value: str) -> int:
        counts = self.by_key.get(key)
        return 0 if counts is None else counts.get(value)

    def at(self, key: str, node_idx: np.ndarray | None = None) -> np.ndarray:
        """Per node (all, or those at ``node_idx``), the number of its pair of ``key``."""
        return self._of(key).at(node_idx)

    def items(self) -> Iterator[tuple[str, DomainCounts]]:
        return iter(self.by_key.items())

    def values(self) -> Iterator[DomainCounts]:
        return iter(self.by_key.values())

    def is_empty(self) -> bool:
        """No pair with a non-zero number (upstream deletes pairs that drop to zero)."""
        return not any(c.any_nonzero() for c in self.by_key.values())
