"""The per-cycle snapshot: NodeInfos plus column arrays for vectorised Filter and Score.

Corresponds to kube-scheduler ``pkg/scheduler/backend/cache/snapshot.go``. Besides the list
of NodeInfos that every plugin may read, the snapshot keeps the numbers the hot plugins need as
numpy arrays with one column per node (in ``node_infos`` order), so a Filter or Score over
5,000 nodes is a handful of array operations instead of a Python loop:

* ``allocatable[r, i]`` and ``requested[r, i]`` for each resource row ``r`` (``resource_row``;
  cpu in millicores, others in units; the ``pods`` row counts pods);
* ``non_zero[0|1, i]``: requested cpu/memory with the 100m / 200 MiB defaults.

Values beyond ±``SATURATION`` (a Node or Pod quantity such as ``cpu: 1e30``, which the API
server accepts as kube-apiserver does) are saturated: writing them raised OverflowError and
stopped every scheduling cycle. The bound leaves room to add two of them inside int64.

``memo`` caches results that depend only on node objects (a taint mask per toleration set, a
label-selector mask): it is cleared whenever a node object changes, is added or removed
(``node_generation``), and never by pod changes.

The snapshot is written only by ``Cache.update_snapshot`` at the start of a cycle and read by
the scheduling thread; preemption and nominated-pod simulation work on clones of single
NodeInfos, never on the arrays. The one exception is ``override_for_cycle``: a BeforePreFilter
transformer (Reservation's restore, scheduler.md §7.4) may show the pod of this cycle a
changed copy of some nodes; the next ``update_snapshot`` puts the originals back first.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

import numpy as np

from pkg.util.podresources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from scheduler.framework.types import NodeInfo

_FIXED_ROWS = (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)


# 2^62: any quantity this large fits nowhere real and fails alike; sums of two stay in int64.
SATURATION = 2**62


def _saturated(value: int) -> int:
    return max(-SATURATION, min(value, SATURATION))





class NodeInfosAt(Sequence[NodeInfo]):
    """The NodeInfos at some indices of the snapshot, looked up when read: most PreScore
    plugins never read the feasible nodes, and listing thousands per pod costs more than
    their scoring."""

    __slots__ = ("_infos", "_idx")

    def __init__(self, infos: Sequence[NodeInfo], idx: np.ndarray) -> None:
        self._infos = infos
        self._idx = idx

    def __len__(self) -> int:
        return len(self._idx)

    @overload
    def __getitem__(self, i: int) -> NodeInfo: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[NodeInfo]: ...

    def __getitem__(self, i: int | slice) -> NodeInfo | Sequence[NodeInfo]:
        if isinstance(i, slice):
            return [self._infos[j] for j in self._idx[i].tolist()]
        return self._infos[int(self._idx[i])]

    def __iter__(self) -> Iterator[NodeInfo]:
        infos = self._infos
        return (infos[j] for j in self._idx.tolist())


class Snapshot:
    def __init__(self) -> None:
        self.node_infos: list[NodeInfo] = []
        self.index: dict[str, int] = {}
        self.resources: list[str] = list(_FIXED_ROWS)
        self.rows: dict[str, int] = {name: i for i, name in enumerate(self.resources)}
        self.allocatable = np.zeros((len(self.resources), 0), dtype=np.int64)
        self.requested = np.zeros((len(self.resources), 0), dtype=np.int64)
        self.non_zero = np.zeros((2, 0), dtype=np.int64)
        self.node_generation = 0
        self.memo: dict[Any, Any] = {}
        # Generation of the cache when this snapshot was last brought up to date.
        self.generation = 0
        self.have_pods_with_affinity: list[NodeInfo] = []
        self.have_pods_with_required_anti_affinity: list[NodeInfo] = []
        self.names = np.zeros(0, dtype=object)
        # Index → the NodeInfo ``override_for_cycle`` replaced there.
        self._cycle_originals: dict[int, NodeInfo] = {}

    # Reading -----------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.node_infos)

    def get(self, name: str) -> NodeInfo | None:
        i = self.index.get(name)
        return None if i is None else self.node_infos[i]

    def __getitem__(self, name: str) -> NodeInfo:
        """The node's NodeInfo; KeyError when the snapshot has no such node."""
        return self.node_infos[self.index[name]]

    def resource_row(self, resource: str) -> int | None:
        """The row of ``resource`` in the arrays; None when no node or pod has it."""
        return self.rows.get(resource)

    def allocatable_of(self, resource: str) -> np.ndarray:
        r = self.rows.get(resource)
        if r is None:
            return np.zeros(len(self.node_infos), dtype=np.int64)
        return self.allocatable[r]

    def requested_of(self, resource: str) -> np.ndarray:
        r = self.rows.get(resource)
        if r is None:
            return np.zeros(len(self.node_infos), dtype=np.int64)
        return self.requested[r]

    def memoized(self, key: Any, compute: Any) -> Any:
        """``compute()`` once per node generation under ``key`` (node-only results)."""
        try:
            return self.memo[key]
        except KeyError:
            value = self.memo[key] = compute()
            return value

    # Writing (Cache.update_snapshot only) -------------------------------------------------

    def ensure_resources(self, names: Iterable[str]) -> None:
        new = [n for n in names if n not in self.rows]
        if not new:
            return
        for n in new:
            self.rows[n] = len(self.resources)
            self.resources.append(n)
        extra = np.zeros((len(new), len(self.node_infos)), dtype=np.int64)
        self.allocatable = np.vstack([self.allocatable, extra])
        self.requested = np.vstack([self.requested, extra.copy()])

    def rebuild(self, node_infos: list[NodeInfo]) -> None:
        """Replace the node list (nodes were added or removed)."""
        self.node_infos = node_infos
        self.index = {ni.name: i for i, ni in enumerate(node_infos)}
        self.names = np.array([ni.name for ni in node_infos], dtype=object)
        names: set[str] = set()
        for ni in node_infos:
            names.update(ni.allocatable)
            names.update(ni.requested)
        for name in sorted(names - self.rows.keys()):  # the arrays are rebuilt just below
            self.rows[name] = len(self.resources)
            self.resources.append(name)
        n = len(node_infos)
        self.allocatable = np.zeros((len(self.resources), n), dtype=np.int64)
        self.requested = np.zeros((len(self.resources), n), dtype=np.int64)
        self.non_zero = np.zeros((2, n), dtype=np.int64)
        for i in range(n):
            self._write_columns(i)
        self.node_changed()
        self.refresh_affinity_lists()

    def set_node_info(self, i: int, ni: NodeInfo) -> None:
        self.node_infos[i] = ni
        self.ensure_resources(ni.allocatable)
        self.ensure_resources(ni.requested)
        self._write_columns(i)

    def override_for_cycle(self, ni: NodeInfo) -> None:
        """Show ``ni`` (a changed copy of a node's NodeInfo) in place of the node's until
        ``revert_cycle_overrides``."""
        i = self.index[ni.name]
        original = self._cycle_originals.setdefault(i, self.node_infos[i])
        self.set_node_info(i, ni)
        if original.pods_with_affinity or ni.pods_with_affinity:
            self.refresh_affinity_lists()

    def revert_cycle_overrides(self) -> None:
        if not self._cycle_originals:
            return
        originals, self._cycle_originals = self._cycle_originals, {}
        affinity = False
        for i, ni in originals.items():
            affinity |= bool(ni.pods_with_affinity or self.node_infos[i].pods_with_affinity)
            self.set_node_info(i, ni)
        if affinity:
            self.refresh_affinity_lists()

    def _write_columns(self, i: int) -> None:
        ni = self.node_infos[i]
        rows = self.rows
        alloc = self.allocatable
        req = self.requested
        alloc[:, i] = 0
        req[:, i] = 0
        for name, v in ni.allocatable.items():
            alloc[rows[name], i] = _saturated(v)
        for name, v in ni.requested.items():
            req[rows[name], i] = _saturated(v)
        req[rows[PODS], i] = len(ni.pods)
        self.non_zero[0, i] = _saturated(ni.non_zero_cpu)
        self.non_zero[1, i] = _saturated(ni.non_zero_memory)

    def node_changed(self) -> None:
        self.node_generation += 1
        self.memo.clear()

    def refresh_affinity_lists(self) -> None:
        self.have_pods_with_affinity = [ni for ni in self.node_infos if ni.pods_with_affinity]
        self.have_pods_with_required_anti_affinity = [
            ni for ni in self.node_infos if ni.pods_with_required_anti_affinity]
