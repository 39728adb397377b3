"""RemoveFailedPods: evicts pods in phase Failed.

Corresponds to sigs.k8s.io/descheduler ``pkg/framework/plugins/removefailedpods`` as koordinator
wraps it (``pkg/descheduler/framework/plugins/kubernetes``). A pod is evicted when it has
failed, is in the configured namespaces and matches the label selector, both evictor filters
accept it, none of its owners is of an ``excludeOwnerKinds`` kind, it is older than
``minPodLifetimeSeconds`` (an hour by default) and, when ``reasons`` / ``exitCodes`` are given,
one of its containers' waiting or terminated reasons (or the pod's status reason) / terminated
exit codes is listed; init containers count with ``includingInitContainers``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from descheduler.apis.config.args import RemoveFailedPodsArgs
from descheduler.framework.plugins.kubernetes.podutil import (
    age_seconds,
    container_statuses,
    has_owner_kind,
    node_name,
    pod_filter,
    state_reason,
)
from descheduler.framework.types import EvictOptions, Handle, Obj, Status
from pkg.util.clock import Clock, RealClock

NAME = "RemoveFailedPods"


class RemoveFailedPods:
    def __init__(self, args: RemoveFailedPodsArgs, handle: Handle,
                 clock: Clock | None = None) -> None:
        self.args = args
        self.handle = handle
        self.clock = clock or RealClock()
        self._accepts = pod_filter(args.namespaces, args.label_selector,
                                   handle.evictor.filter, handle.evictor.pre_eviction_filter)
        self._reasons = frozenset(args.reasons)
        self._exit_codes = frozenset(args.exit_codes)

    @classmethod
    def new(cls, args: Any, handle: Handle) -> RemoveFailedPods:
        return cls(args if isinstance(args, RemoveFailedPodsArgs) else RemoveFailedPodsArgs(),
                   handle)

    def name(self) -> str:
        return NAME

    def _candidate(self, pod: Obj, now: float) -> bool:
        status = pod.get("status") or {}
        if status.get("phase") != "Failed" or not self._accepts(pod):
            return False
        args = self.args
        if args.exclude_owner_kinds and has_owner_kind(pod, args.exclude_owner_kinds):
            return False
        if args.min_pod_lifetime_seconds is not None and \
                age_seconds(pod, now) <= args.min_pod_lifetime_seconds:
            return False
        statuses = container_statuses(pod, init=args.including_init_containers)
        if self._reasons:
            reasons = {state_reason(cs, state) for cs in statuses
                       for state in ("waiting", "terminated")}
            reasons.add(status.get("reason") or "")
            if not self._reasons & (reasons - {""}):
                return False
        if self._exit_codes:
            codes = {((cs.get("state") or {}).get("terminated") or {}).get("exitCode")
                     for cs in statuses}
            if not self._exit_codes & codes:
                return False
        return True

    def deschedule(self, nodes: Sequence[Obj]) -> Status:
        now = self.clock.now()
        for node in nodes:
            for pod in self.handle.pods_on_node(node_name(node)):
                if self._candidate(pod, now):
                    self.handle.evictor.evict(pod, EvictOptions(plugin_name=NAME,
                                                                reason="pod failed"))
        return Status()
