"""How DefaultBinder writes a placement: the Binder the framework handle carries.

Corresponds to the call kube-scheduler's DefaultBinder makes through client-go
(``CoreV1().Pods(ns).Bind``: POST a ``v1.Binding`` to ``pods/{name}/binding``), behind a small
protocol so that benchmarks and tests can bind without an API server:

* ``ApiBinder`` POSTs the Binding (with the pod's uid as precondition) through
  ``pkg.client.Client``; the server's refusal (409 when the pod is already bound or being
  deleted, 404 when it is gone) raises ``ApiError``.
* ``InMemoryBinder`` records each binding and hands the bound pod to an optional callback.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from pkg.client.resources import PODS
from scheduler.framework.types import PodInfo

if TYPE_CHECKING:
    from scheduler.frameworkext.interface import ClientSet


class Binder(Protocol):
    def bind(self, pod: PodInfo, node_name: str) -> None:
        """Assign ``pod`` to ``node_name``; raises when that fails."""
        ...


def binding_for(pod: PodInfo, node_name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Binding",
            "metadata": {"namespace": pod.namespace, "name": pod.name, "uid": pod.uid},
            "target": {"kind": "Node", "name": node_name}}


class ApiBinder:
    def __init__(self, client: ClientSet) -> None:
        self.client = client

    def bind(self, pod: PodInfo, node_name: str) -> None:
        self.client.request("POST", PODS.path(pod.namespace, pod.name, "binding"),
                            body=binding_for(pod, node_name))


class InMemoryBinder:
    """Bindings kept in memory: ``bindings`` maps pod key to node, in binding order."""

    def __init__(self, on_bind: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.on_bind = on_bind
        self.bindings: dict[str, str] = {}
        # Binding cycles run on a thread pool.
        self._lock = threading.Lock()

    def bind(self, pod: PodInfo, node_name: str) -> None:
        with self._lock:
            self.bindings[pod.key] = node_name
        if self.on_bind is not None:
            self.on_bind(pod.with_node(node_name).pod)
