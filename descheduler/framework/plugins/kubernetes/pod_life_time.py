"""PodLifeTime: evicts pods older than ``maxPodLifeTimeSeconds``, oldest first.

Corresponds to sigs.k8s.io/descheduler ``pkg/framework/plugins/podlifetime`` as koordinator
wraps it (``pkg/descheduler/framework/plugins/kubernetes``: upstream's plugin over koordinator's
evictor). A pod is a candidate when it is in the configured namespaces and matches the label
selector, both evictor filters accept it, it is strictly older than the limit and, when
``states`` is given, its phase, its status reason or a container's waiting reason is one of
them (init and ephemeral containers count when asked). Candidates on all nodes are evicted
oldest first, so the limits on evictions per node or namespace keep the oldest.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from descheduler.apis.config.args import PodLifeTimeArgs
from descheduler.framework.plugins.kubernetes.podutil import (
    age_seconds,
    container_statuses,
    pod_filter,
    pods_on_nodes,
    sort_by_age,
    state_reason,
)
from descheduler.framework.types import EvictOptions, Handle, Obj, Status
from pkg.util.clock import Clock, RealClock

NAME = "PodLifeTime"


class PodLifeTime:
    def __init__(self, args: PodLifeTimeArgs, handle: Handle, clock: Clock | None = None) -> None:
        self.args = args
        self.handle = handle
        self.clock = clock or RealClock()
        self._accepts = pod_filter(args.namespaces, args.label_selector,
                                   handle.evictor.filter, handle.evictor.pre_eviction_filter)
        self._states = frozenset(args.states)

    @classmethod
    def new(cls, args: Any, handle: Handle) -> PodLifeTime:
        return cls(args if isinstance(args, PodLifeTimeArgs) else PodLifeTimeArgs(), handle)

    def name(self) -> str:
        return NAME

    def _in_states(self, pod: Obj) -> bool:
        if not self._states:
            return True
        status = pod.get("status") or {}
        if status.get("phase") in self._states or status.get("reason") in self._states:
            return True
        return any(state_reason(cs, "waiting") in self._states
                   for cs in container_statuses(
                       pod, init=self.args.including_init_containers,
                       ephemeral=self.args.including_ephemeral_containers))

    def deschedule(self, nodes: Sequence[Obj]) -> Status:
        limit = self.args.max_pod_life_time_seconds
        if limit is None:  # refused by validation
            return Status()
        now = self.clock.now()
        pods = pods_on_nodes(self.handle.pods_on_node, nodes, lambda pod: (
            self._accepts(pod) and age_seconds(pod, now) > limit and self._in_states(pod)))
        sort_by_age(pods)
        for pod in pods:
            self.handle.evictor.evict(pod, EvictOptions(
                plugin_name=NAME, reason=f"pod lifetime exceeds {limit}s"))
        return Status()
