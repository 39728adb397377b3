"""The snapshot's nodes grouped by their taints, so tolerations are checked per taint set.

Part of kubernetes ``pkg/scheduler/framework/plugins/tainttoleration`` in this port: the
vectorised Filter and Score. A cluster has few distinct taint sets (most nodes have none), so
checking a pod's tolerations once per set and spreading the answer over the nodes with numpy
costs the same at 50 or 5,000 nodes. The grouping is memoised in the snapshot (it depends only
on node objects) and so is each answer, per toleration set.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pkg.util.nodeaffinity import tolerates
from scheduler.framework.snapshot import Snapshot

_MEMO_KEY = ("TaintToleration", "groups")

Taints = tuple[Mapping[str, Any], ...]


@dataclass(frozen=True, slots=True)
class TaintGroups:
    """``taints[g]``: the taints every node of group ``g`` has; ``group_of[i]``: node i's group."""

    taints: tuple[Taints, ...]
    group_of: np.ndarray
    effects: frozenset[str]  # every effect some node's taint has

    def any_with(self, effects: Collection[str]) -> bool:
        return not self.effects.isdisjoint(effects)

    def count_untolerated(self, tolerations: Sequence[Mapping[str, Any]],
                          effects: Collection[str]) -> np.ndarray:
        """Per node, how many of its taints with ``effects`` no toleration tolerates."""
        per_group = np.fromiter(
            (sum(1 for t in taints if t.get("effect") in effects and not tolerates(tolerations, t))
             for taints in self.taints), dtype=np.int64, count=len(self.taints))
        return _frozen(per_group[self.group_of])

    def tolerated(self, tolerations: Sequence[Mapping[str, Any]],
                  effects: Collection[str]) -> np.ndarray:
        """Per node, True when every taint with ``effects`` is tolerated."""
        per_group = np.fromiter(
            (all(t.get("effect") not in effects or tolerates(tolerations, t) for t in taints)
             for taints in self.taints), dtype=bool, count=len(self.taints))
        return _frozen(per_group[self.group_of])


def _frozen(a: np.ndarray) -> np.ndarray:
    # Memoised arrays are shared by every pod of the cycle: nobody may write to them.
    a.flags.writeable = False
    return a


def _signature(taints: Sequence[Mapping[str, Any]]) -> tuple[tuple[Any, Any, Any], ...]:
    return tuple((t.get("key"), t.get("value"), t.get("effect")) for t in taints)


def _group(snapshot: Snapshot) -> TaintGroups:
    index: dict[tuple[tuple[Any, Any, Any], ...], int] = {(): 0}
    taints: list[Taints] = [()]
    codes = np.zeros(len(snapshot.node_infos), dtype=np.int64)
    for i, ni in enumerate(snapshot.node_infos):
        node_taints = ni.taints
        if not node_taints:
            continue
        sig = _signature(node_taints)
        g = index.get(sig)
        if g is None:
            g = index[sig] = len(taints)
            taints.append(tuple(node_taints))
        codes[i] = g
    effects = frozenset(t.get("effect") or "" for group in taints for t in group)
    return TaintGroups(tuple(taints), _frozen(codes), effects)


def taint_groups(snapshot: Snapshot) -> TaintGroups:
    """The snapshot's nodes grouped by taints (memoised until a node object changes)."""
    return snapshot.memoized(_MEMO_KEY, lambda: _group(snapshot))
