"""How DefaultBinder writes a placement: the Binder the framework handle carries.

Corresponds to the call kube-scheduler's DefaultBinder makes through client-go
(``CoreV1().Pods(ns).Bind``: POST a ``v1.Binding`` to ``pods/{name}/binding``), behind a small
protocol so that benchmarks and tests can bind without an API server:

A Binding may carry annotations, which the API server sets on the pod as it binds it: PreBind
plugins leave them in the cycle state (``Framework.defer_to_binding``) instead of patching
the pod themselves, one API write less per pod (upstream merges PreBind's changes into one
patch; here that patch is the binding itself).

* ``ApiBinder`` POSTs the Binding (with the pod's uid as precondition) through
  ``pkg.client.Client``; the server's refusal (409 when the pod is already bound or being
  deleted, 404 when it is gone) raises ``ApiError``.
* ``InMemoryBinder`` records each binding and hands the bound pod to an optional callback.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from pkg.client.resources import PODS
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.types import PodInfo

if TYPE_CHECKING:
    from scheduler.frameworkext.interface import ClientSet


class Binder(Protocol):
    def bind(self, pod: PodInfo, node_name: str,
             annotations: Mapping[str, str] | None = None) -> None:
        """Assign ``pod`` to ``node_name``, setting ``annotations`` on it with the binding (the
        API server copies a Binding's annotations onto the pod); raises when that fails."""
        ...


# Cycle-state key: annotations PreBind plugins leave for the binding to set (see
# ``Framework.defer_to_binding``).
BINDING_ANNOTATIONS = "framework/binding-annotations"


def binding_annotations(state: CycleState) -> dict[str, str]:
    annotations: dict[str, str] = state.get(BINDING_ANNOTATIONS) or {}
    return annotations


def binding_for(pod: PodInfo, node_name: str,
                annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"namespace": pod.namespace, "name": pod.name, "uid": pod.uid}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "v1", "kind": "Binding", "metadata": meta,
            "target": {"kind": "Node", "name": node_name}}


class ApiBinder:
    def __init__(self, client: ClientSet) -> None:
        self.client = client

    def bind(self, pod: PodInfo, node_name: str,
             annotations: Mapping[str, str] | None = None) -> None:
        self.client.request("POST", PODS.path(pod.namespace, pod.name, "binding"),
                            body=binding_for(pod, node_name, annotations))


class InMemoryBinder:
    """Bindings kept in memory: ``bindings`` maps pod key to node, in binding order."""

    def __init__(self, on_bind: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.on_bind = on_bind
        self.bindings: dict[str, str] = {}
        # Pod key → the annotations its binding set (only bindings that set any).
        self.annotations: dict[str, dict[str, str]] = {}
        # Binding cycles run on a thread pool.
        self._lock = threading.Lock()

    def bind(self, pod: PodInfo, node_name: str,
             annotations: Mapping[str, str] | None = None) -> None:
        with self._lock:
            self.bindings[pod.key] = node_name
            if annotations:
                self.annotations[pod.key] = dict(annotations)
        if self.on_bind is not None:
            bound = pod.with_node(node_name).pod
            if annotations:
                meta = bound["metadata"] = dict(bound.get("metadata") or {})
                meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
            self.on_bind(bound)
