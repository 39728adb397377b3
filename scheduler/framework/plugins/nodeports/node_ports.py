"""NodePorts: the host ports a pod asks for must be free on the node.

Corresponds to kubernetes ``pkg/scheduler/framework/plugins/nodeports`` (``NodePorts``) and
``HostPortInfo.CheckConflict`` of ``pkg/scheduler/framework/types.go``, v1.35 with
SchedulerQueueingHints on. PreFilter collects the pod's container host ports and returns Skip
when there are none, so Filter runs only for the few pods that use host ports. A wanted
(ip, protocol, port) conflicts with the same protocol and port used on the node on that ip or
on 0.0.0.0; a wanted 0.0.0.0 conflicts with the protocol and port on any ip.

Registered events: Pod Delete (when the deleted pod held a conflicting port) and Node Add.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from scheduler.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
)
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.framework.types import HostPort, NodeInfo, PodInfo

NAME = "NodePorts"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
DEFAULT_BIND_ALL_HOST_IP = "0.0.0.0"


@dataclass(frozen=True, slots=True)
class WantedPorts:
    """A pod's host ports, as the used-port keys each would conflict with."""

    # (protocol, port) wanted on every ip: any node ip using them conflicts.
    any_ip: frozenset[tuple[str, int]]
    # (ip, protocol, port) keys that conflict with the ports wanted on one ip.
    exact: frozenset[HostPort]

    def clone(self) -> WantedPorts:
        return self

    @classmethod
    def of(cls, host_ports: Iterable[HostPort]) -> WantedPorts:
        any_ip, exact = set(), set()
        for ip, protocol, port in host_ports:
            if ip == DEFAULT_BIND_ALL_HOST_IP:
                any_ip.add((protocol, port))
            else:
                exact.add((ip, protocol, port))
                exact.add((DEFAULT_BIND_ALL_HOST_IP, protocol, port))
        return cls(frozenset(any_ip), frozenset(exact))

    def fit(self, used_ports: Mapping[HostPort, int]) -> bool:
        for ip, protocol, port in used_ports:
            if (protocol, port) in self.any_ip or (ip, protocol, port) in self.exact:
                return False
        return True


class NodePorts(PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    name = NAME

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   snapshot: Snapshot) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.host_ports:
            return None, Status(Code.SKIP)
        wanted = pod.memo.get(self.name)
        if wanted is None:
            wanted = pod.memo[self.name] = WantedPorts.of(pod.host_ports)
        state.write(PRE_FILTER_STATE_KEY, wanted)
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        wanted = state.get(PRE_FILTER_STATE_KEY)
        if wanted is None:
            return Status.as_error(KeyError(
                f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found'))
        if wanted.fit(node_info.used_ports):
            return None
        return Status(Code.UNSCHEDULABLE, ERR_REASON)

    def filter_nodes(self, state: CycleState, pod: PodInfo,
                     snapshot: Snapshot) -> np.ndarray | None:
        # Only pods with host ports get here (PreFilter skips the rest), and only nodes with
        # used ports can conflict.
        wanted: WantedPorts = state.read(PRE_FILTER_STATE_KEY)
        busy = [i for i, ni in enumerate(snapshot.node_infos)
                if ni.used_ports and not wanted.fit(ni.used_ports)]
        if not busy:
            return None
        mask = np.ones(len(snapshot.node_infos), dtype=bool)
        mask[busy] = False
        return mask

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE),
                                 is_schedulable_after_pod_deleted),
            # A new node always has free ports: no hint needed.
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD)),
        ]


def is_schedulable_after_pod_deleted(pod: dict[str, Any], old: Any, new: Any) -> QueueingHint:
    deleted = old
    if not (deleted.get("spec") or {}).get("nodeName") and not (
            deleted.get("status") or {}).get("nominatedNodeName"):
        return QueueingHint.QUEUE_SKIP
    freed = {port: 1 for port in PodInfo(deleted).host_ports}
    if not freed or WantedPorts.of(PodInfo(pod).host_ports).fit(freed):
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE
