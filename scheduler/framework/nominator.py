"""The pod nominator: pods that preemption (or an earlier scheduler) nominated to a node.

Corresponds to kube-scheduler ``pkg/scheduler/backend/queue/nominator.go`` (``nominator``,
the ``PodNominator`` the framework handle carries), v1.35. A nominated pod has room kept on
its node: the Filter of pods of lower or equal priority counts it there
(``Framework.run_filter_plugins_with_nominated_pods``) until it is scheduled or deleted.

The scheduling queue owns the nominator and shares its lock with it, because the queue
nominates and forgets pods as they enter and leave it, atomically with its own bookkeeping;
``pending`` is the queue's answer to "does it still hold this pod" (upstream asks the pod
lister), so that a pod deleted or bound meanwhile is never nominated.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from scheduler.framework.types import PodInfo, pod_uid


def nominated_node_name(pod: Mapping[str, Any]) -> str:
    return (pod.get("status") or {}).get("nominatedNodeName") or ""


class Nominator:
    def __init__(self, lock: threading.RLock,
                 pending: Callable[[dict[str, Any]], bool]) -> None:
        self._lock = lock
        self._pending = pending
        # node → uid → pod info, and uid → node.
        self._nominated: dict[str, dict[str, PodInfo]] = {}
        self._nominated_node: dict[str, str] = {}

    def add_nominated_pod(self, pod_info: PodInfo, node_name: str | None = None) -> None:
        """Reserve room for ``pod_info`` on a node.

        ``node_name`` None takes the pod's ``status.nominatedNodeName``; "" clears the
        nomination. Ignored for pods the queue no longer holds (deleted) or bound ones.
        """
        with self._lock:
            if self._pending(pod_info.pod):
                self.nominate(pod_info, node_name)

    def delete_nominated_pod_if_exists(self, pod: Mapping[str, Any]) -> None:
        with self._lock:
            self.delete(pod_uid(pod))

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        """The pod infos nominated to ``node_name`` (a copy of the list)."""
        with self._lock:
            return list(self._nominated.get(node_name, {}).values())

    def nodes_with_nominated_pods(self) -> list[str]:
        with self._lock:
            return list(self._nominated)

    # For the queue, which holds the lock ---------------------------------------------------

    def is_nominated(self, uid: str) -> bool:
        return uid in self._nominated_node

    def nominate(self, pod_info: PodInfo, node_name: str | None) -> None:
        """Nominate unconditionally (see ``add_nominated_pod`` for ``node_name``)."""
        pod = pod_info.pod
        self.delete(pod_info.uid)
        if node_name is None:
            node_name = nominated_node_name(pod)
        if not node_name or (pod.get("spec") or {}).get("nodeName"):
            return
        self._nominated_node[pod_info.uid] = node_name
        self._nominated.setdefault(node_name, {})[pod_info.uid] = pod_info

    def update(self, old: Mapping[str, Any] | None, pod_info: PodInfo) -> None:
        """The queued pod changed from ``old`` to ``pod_info``."""
        node_name: str | None = None
        if old is not None and not nominated_node_name(old) \
                and not nominated_node_name(pod_info.pod):
            # Nominated by this scheduler and not yet written to the pod: keep the node.
            node_name = self._nominated_node.get(pod_uid(old))
        if old is not None:
            self.delete(pod_uid(old))
        self.nominate(pod_info, node_name)

    def delete(self, uid: str) -> None:
        node_name = self._nominated_node.pop(uid, None)
        if node_name is None:
            return
        pods = self._nominated[node_name]
        del pods[uid]
        if not pods:
            del self._nominated[node_name]
