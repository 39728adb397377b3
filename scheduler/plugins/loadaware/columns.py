"""The assign cache as arrays aligned with the snapshot's nodes, for vectorised Filter/Score.

No upstream counterpart (upstream reads its cache node by node). Column ``i`` describes
``snapshot.node_infos[i]``: whether it has a NodeMetric (and ``status.nodeMetric``), the
metric's update time, and its existing load per usage source. ``sync`` realigns the columns
when the snapshot's node list changes and otherwise re-reads only the nodes the cache marked
dirty, so a cycle costs O(changed nodes) Python.
"""

from __future__ import annotations

import numpy as np

from scheduler.framework.snapshot import Snapshot
from scheduler.plugins.loadaware.assign_cache import PodAssignCache
from scheduler.plugins.loadaware.nodeload import NodeLoad, UsageSource


class NodeColumns:
    def __init__(self, cache: PodAssignCache) -> None:
        self._cache = cache
        self._width = len(cache.vectorizer)
        self._generation = -1
        self._names = np.zeros(0, dtype=object)
        self.index: dict[str, int] = {}
        self.has_metric = np.zeros(0, dtype=bool)
        self.has_node_metric = np.zeros(0, dtype=bool)
        self.update_time = np.zeros(0, dtype=np.float64)  # NaN: never reported
        # How many columns have a NodeMetric: none (no koordlet reports yet) means Filter
        # passes and Score is 0 everywhere, without reading a column.
        self.with_metric = 0
        self._existing: dict[UsageSource, np.ndarray] = {}

    def sync(self, snapshot: Snapshot) -> None:
        cache = self._cache
        with cache.lock:
            dirty = cache.take_dirty()
            if self._realign(snapshot):
                for i, name in enumerate(self._names):
                    self._fill(i, cache.nodes.get(name))
                return
            for name in dirty:
                column = self.index.get(name)
                if column is not None:
                    self._fill(column, cache.nodes.get(name))

    def existing(self, source: UsageSource) -> np.ndarray:
        """Existing load per resource row and node column (0 where no NodeMetric)."""
        arr = self._existing.get(source)
        if arr is None:
            arr = self._existing[source] = np.zeros((self._width, len(self._names)),
                                                    dtype=np.int64)
            cache = self._cache
            with cache.lock:
                for i, name in enumerate(self._names):
                    load = cache.nodes.get(name)
                    vec = None if load is None else load.existing(source)
                    if vec is not None:
                        arr[:, i] = vec
        return arr

    def _realign(self, snapshot: Snapshot) -> bool:
        if snapshot.node_generation == self._generation and len(snapshot) == len(self._names):
            return False
        self._generation = snapshot.node_generation
        if np.array_equal(snapshot.names, self._names):
            return False
        self._names = snapshot.names.copy()
        self.index = dict(snapshot.index)
        n = len(self._names)
        self.has_metric = np.zeros(n, dtype=bool)
        self.has_node_metric = np.zeros(n, dtype=bool)
        self.update_time = np.full(n, np.nan)
        self.with_metric = 0
        self._existing = {s: np.zeros((self._width, n), dtype=np.int64) for s in self._existing}
        return True

    def _fill(self, i: int, load: NodeLoad | None) -> None:
        m = None if load is None else load.metric
        self.with_metric += (m is not None) - bool(self.has_metric[i])
        if load is None or m is None:
            self.has_metric[i] = self.has_node_metric[i] = False
            self.update_time[i] = np.nan
            for arr in self._existing.values():
                arr[:, i] = 0
            return
        self.has_metric[i] = True
        self.has_node_metric[i] = m.has_node_metric
        self.update_time[i] = np.nan if m.update_time is None else m.update_time
        for source, arr in self._existing.items():
            arr[:, i] = load.existing(source)
