"""RemovePodsHavingTooManyRestarts: evicts pods whose containers restarted too often.

Corresponds to sigs.k8s.io/descheduler ``pkg/framework/plugins/removepodshavingtoomanyrestarts``
as koordinator wraps it (``pkg/descheduler/framework/plugins/kubernetes``). A pod is evicted
when it is in the configured namespaces and matches the label selector, both evictor filters
accept it, the restart counts of its containers (and init containers with
``includingInitContainers``) add up to ``podRestartThreshold`` or more and, when ``states`` is
given, its phase or a container's waiting reason is one of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from descheduler.apis.config.args import RemovePodsHavingTooManyRestartsArgs
from descheduler.framework.plugins.kubernetes.podutil import (
    container_statuses,
    node_name,
    pod_filter,
    state_reason,
)
from descheduler.framework.types import EvictOptions, Handle, Obj, Status

NAME = "RemovePodsHavingTooManyRestarts"


def restarts(pod: Obj, including_init_containers: bool) -> int:
    return sum(int(cs.get("restartCount") or 0)
               for cs in container_statuses(pod, init=including_init_containers))


class RemovePodsHavingTooManyRestarts:
    def __init__(self, args: RemovePodsHavingTooManyRestartsArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self._accepts = pod_filter(args.namespaces, args.label_selector,
                                   handle.evictor.filter, handle.evictor.pre_eviction_filter)
        self._states = frozenset(args.states)

    @classmethod
    def new(cls, args: Any, handle: Handle) -> RemovePodsHavingTooManyRestarts:
        return cls(args if isinstance(args, RemovePodsHavingTooManyRestartsArgs)
                   else RemovePodsHavingTooManyRestartsArgs(), handle)

    def name(self) -> str:
        return NAME

    def _in_states(self, pod: Obj) -> bool:
        if not self._states:
            return True
        if (pod.get("status") or {}).get("phase") in self._states:
            return True
        return any(state_reason(cs, "waiting") in self._states for cs in container_statuses(
            pod, init=self.args.including_init_containers))

    def deschedule(self, nodes: Sequence[Obj]) -> Status:
        threshold = self.args.pod_restart_threshold
        for node in nodes:
            for pod in self.handle.pods_on_node(node_name(node)):
                count = restarts(pod, self.args.including_init_containers)
                if count >= threshold and self._in_states(pod) and self._accepts(pod):
                    self.handle.evictor.evict(pod, EvictOptions(
                        plugin_name=NAME,
                        reason=f"pod restarted {count} times (threshold {threshold})"))
        return Status()
