"""The scheduler cache: nodes, bound and assumed pods, and the incremental snapshot.

Corresponds to kube-scheduler ``pkg/scheduler/backend/cache`` (``cacheImpl``). Informer
handlers add, update and remove nodes and bound pods; the scheduling loop *assumes* a pod on
its chosen node right after host selection (so the next cycle already counts it), then either
confirms it (``finish_binding`` and the informer's add) or *forgets* it when binding fails.
Assumed pods whose binding finished but which the informer never confirmed expire after
``ttl`` seconds (0 = never, kube-scheduler's default since 1.26).

``update_snapshot`` copies only the NodeInfos that changed since the previous cycle.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from pkg.util.clock import REAL_CLOCK, Clock
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.types import NodeInfo, PodInfo, pod_key

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _PodState:
    info: PodInfo
    assumed: bool = False
    binding_finished: bool = False
    deadline: float | None = None


class CacheError(Exception):
    """An operation that contradicts what the cache holds (e.g. assuming a pod twice)."""


class Cache:
    def __init__(self, *, clock: Clock = REAL_CLOCK, ttl: float = 0.0) -> None:
        self._lock = threading.RLock()
        self._clock = clock
        self._ttl = ttl
        self._nodes: dict[str, NodeInfo] = {}
        self._pods: dict[str, _PodState] = {}
        self._dirty: set[str] = set()
        self._node_objects_changed = False
        self._structure_changed = True

    # Nodes -------------------------------------------------------------------------------

    def add_node(self, node: dict[str, Any]) -> None:
        name = node["metadata"]["name"]
        with self._lock:
            ni = self._nodes.get(name)
            if ni is None:
                self._nodes[name] = NodeInfo(node)
                self._structure_changed = True
            else:
                had_node = ni.node is not None
                ni.set_node(node)
                self._structure_changed |= not had_node
                self._node_objects_changed = True
            self._dirty.add(name)

    def update_node(self, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
        self.add_node(new)

    def remove_node(self, node: dict[str, Any]) -> None:
        name = node["metadata"]["name"]
        with self._lock:
            ni = self._nodes.get(name)
            if ni is None:
                return
            if ni.pods:
                ni.remove_node()  # pods may still be deleted later; keep them counted
            else:
                del self._nodes[name]
            self._structure_changed = True
            self._dirty.add(name)

    # Pods --------------------------------------------------------------------------------

    def _node_for(self, name: str) -> NodeInfo:
        ni = self._nodes.get(name)
        if ni is None:
            # A pod may arrive before its node: keep it on a placeholder.
            ni = self._nodes[name] = NodeInfo(name=name)
        return ni

    def _place(self, pi: PodInfo) -> None:
        self._node_for(pi.node_name).add_pod(pi)
        self._dirty.add(pi.node_name)

    def _unplace(self, pi: PodInfo) -> None:
        ni = self._nodes.get(pi.node_name)
        if ni is None:
            return
        ni.remove_pod(pi.key)
        self._dirty.add(pi.node_name)
        if ni.node is None and not ni.pods:
            del self._nodes[pi.node_name]
            self._structure_changed = True

    def add_pod(self, pod: dict[str, Any]) -> None:
        """A bound pod seen by the informer (confirms an assumed pod)."""
        pi = PodInfo(pod)
        with self._lock:
            state = self._pods.get(pi.key)
            if state is not None:
                self._unplace(state.info)
            self._pods[pi.key] = _PodState(pi)
            self._place(pi)

    def update_pod(self, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
        self.add_pod(new)

    def remove_pod(self, pod: dict[str, Any]) -> None:
        key = pod_key(pod)
        with self._lock:
            state = self._pods.pop(key, None)
            if state is not None:
                self._unplace(state.info)

    def assume_pod(self, pi: PodInfo) -> None:
        """Count ``pi`` (already carrying its node name) on its node before it is bound."""
        with self._lock:
            if pi.key in self._pods:
                raise CacheError(f"pod {pi.key} is in the cache, so can't be assumed")
            self._pods[pi.key] = _PodState(pi, assumed=True)
            self._place(pi)

    def finish_binding(self, pi: PodInfo) -> None:
        with self._lock:
            state = self._pods.get(pi.key)
            if state is not None and state.assumed:
                state.binding_finished = True
                if self._ttl > 0:
                    state.deadline = self._clock.monotonic() + self._ttl

    def forget_pod(self, pi: PodInfo) -> None:
        """Undo ``assume_pod`` (binding failed or the pod was rejected at Permit)."""
        with self._lock:
            state = self._pods.get(pi.key)
            if state is None or not state.assumed:
                return
            if state.info.node_name != pi.node_name:
                raise CacheError(f"pod {pi.key} was assumed on {state.info.node_name} "
                                 f"but forgotten on {pi.node_name}")
            del self._pods[pi.key]
            self._unplace(state.info)

    def is_assumed(self, key: str) -> bool:
        with self._lock:
            state = self._pods.get(key)
            return state is not None and state.assumed

    def cleanup_assumed_pods(self) -> list[str]:
        """Expire assumed pods whose binding finished ``ttl`` ago; returns their keys."""
        now = self._clock.monotonic()
        expired = []
        with self._lock:
            for key, state in list(self._pods.items()):
                if (state.assumed and state.binding_finished and state.deadline is not None
                        and now >= state.deadline):
                    log.warning("Pod %s expired in the scheduler cache (assumed on %s)", key,
                                state.info.node_name)
                    del self._pods[key]
                    self._unplace(state.info)
                    expired.append(key)
        return expired

    # Reading -----------------------------------------------------------------------------

    def node_count(self) -> int:
        with self._lock:
            return sum(1 for ni in self._nodes.values() if ni.node is not None)

    def pod_count(self) -> int:
        with self._lock:
            return len(self._pods)

    def get_pod(self, key: str) -> PodInfo | None:
        with self._lock:
            state = self._pods.get(key)
            return None if state is None else state.info

    def node_info(self, name: str) -> NodeInfo | None:
        with self._lock:
            ni = self._nodes.get(name)
            return None if ni is None else ni.clone()

    # Snapshot ----------------------------------------------------------------------------

    def update_snapshot(self, snap: Snapshot) -> None:
        """Bring ``snap`` up to date, copying only what changed since its last update."""
        with self._lock:
            snap.revert_cycle_overrides()
            if self._structure_changed:
                infos = [ni.clone() for ni in self._nodes.values() if ni.node is not None]
                snap.rebuild(infos)
            elif self._dirty:
                # The affinity lists hold the snapshot's NodeInfos: any replaced NodeInfo
                # with pods with affinity (before or after) must be replaced there too, or
                # InterPodAffinity reads its old labels and pods.
                stale_affinity_lists = False
                for name in self._dirty:
                    ni = self._nodes.get(name)
                    i = snap.index.get(name)
                    if ni is not None and i is not None:
                        stale_affinity_lists |= bool(snap.node_infos[i].pods_with_affinity
                                                     or ni.pods_with_affinity)
                        snap.set_node_info(i, ni.clone())
                if self._node_objects_changed:
                    snap.node_changed()
                if stale_affinity_lists:
                    snap.refresh_affinity_lists()
            self._dirty.clear()
            self._structure_changed = False
            self._node_objects_changed = False
