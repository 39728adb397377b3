"""The states informer (upstream ``pkg/koordlet/statesinformer/impl``: ``states_informer.go``,
``states_node.go``, ``states_pods.go``, ``states_nodeslo.go``, ``states_nodemetric.go``).

``StatesInformer(factory, node_name)`` watches, through the shared informers of
``pkg/client/informers`` and as raw JSON (hot paths), this node (``metadata.name``), its pods
(API server, field selector ``spec.nodeName=<node>``; or, given a ``KubeletStub``, kubelet's
``/pods/`` polled as upstream does), and the NodeSLO and NodeMetric named after the node.
Public API:

* ``get_node()``, ``get_all_pods()`` (``PodMeta`` list), ``get_node_slo()`` (raw object),
  ``get_node_metric_spec()`` (spec with upstream defaults and floors);
* ``register_callbacks(type, name, description, fn)``: ``NodeMetadata`` fires when the node's
  labels or annotations change, ``AllPods`` on any pod change, ``NodeSLOSpec`` on a spec change,
  ``NodeTopology`` when the topology report (``node_topology``) computes a change
  (``send_callback``);
* ``start(stop)`` / ``has_synced()``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from koordlet.statesinformer.callbacks import Callback, CallbackRunner, RegisterType
from koordlet.statesinformer.kubelet_pods import KubeletPodsInformer, KubeletStub
from pkg.client.informers import EventHandlerFuncs, SharedInformerFactory
from pkg.client.resources import NODE_METRICS, NODE_SLOS, NODES, PODS

# Upstream defaults and floors of spec.metricCollectPolicy (states_nodemetric.go).
DEFAULT_AGGREGATE_DURATION_SECONDS = 300
MIN_AGGREGATE_DURATION_SECONDS = 60
DEFAULT_REPORT_INTERVAL_SECONDS = 60
MIN_REPORT_INTERVAL_SECONDS = 30
DEFAULT_AGGREGATE_DURATIONS = ("5m0s", "10m0s", "30m0s")
DEFAULT_MEMORY_COLLECT_POLICY = "usageWithoutPageCache"


@dataclass(slots=True)
class PodMeta:
    pod: dict[str, Any]
    cgroup_dir: str = ""

    @property
    def uid(self) -> str:
        return str(self.pod.get("metadata", {}).get("uid", ""))


def merge_node_metric_spec(spec: dict[str, Any] | None) -> dict[str, Any]:
    """``metricCollectPolicy`` with upstream defaults under the manager's values, floored."""
    policy = dict((spec or {}).get("metricCollectPolicy") or {})
    aggregate = policy.get("aggregateDurationSeconds") or DEFAULT_AGGREGATE_DURATION_SECONDS
    interval = policy.get("reportIntervalSeconds") or DEFAULT_REPORT_INTERVAL_SECONDS
    durations = (policy.get("nodeAggregatePolicy") or {}).get("durations")
    return {"metricCollectPolicy": {
        "aggregateDurationSeconds": max(int(aggregate), MIN_AGGREGATE_DURATION_SECONDS),
        "reportIntervalSeconds": max(int(interval), MIN_REPORT_INTERVAL_SECONDS),
        "nodeAggregatePolicy": {"durations": list(durations or DEFAULT_AGGREGATE_DURATIONS)},
        "nodeMemoryCollectPolicy": policy.get("nodeMemoryCollectPolicy")
        or DEFAULT_MEMORY_COLLECT_POLICY,
    }}


def _meta(obj: Any) -> dict[str, Any]:
    return obj.get("metadata", {}) if isinstance(obj, dict) else {}


class StatesInformer:
    def __init__(self, factory: SharedInformerFactory, node_name: str,
                 kubelet: KubeletStub | None = None) -> None:
        self.node_name = node_name
        by_name = f"metadata.name={node_name}"
        self._node = factory.informer_for(NODES, field_selector=by_name, typed=False)
        self._kubelet_pods: KubeletPodsInformer | None = None
        self._pods: Any = None
        if kubelet is not None:
            self._kubelet_pods = KubeletPodsInformer(
                kubelet, self.get_node, lambda: self._runner.send(RegisterType.ALL_PODS))
        else:
            self._pods = factory.informer_for(
                PODS, field_selector=f"spec.nodeName={node_name}", typed=False)
        self._slo = factory.informer_for(NODE_SLOS, field_selector=by_name, typed=False)
        self._metric = factory.informer_for(NODE_METRICS, field_selector=by_name, typed=False)
        self._runner = CallbackRunner(self._callback_target)
        self._node.add_event_handler(EventHandlerFuncs(
            add=lambda o: self._runner.send(RegisterType.NODE_METADATA),
            update=self._on_node_update))
        pods_changed = EventHandlerFuncs(
            add=lambda o: self._runner.send(RegisterType.ALL_PODS),
            update=lambda o, n: self._runner.send(RegisterType.ALL_PODS),
            delete=lambda o: self._runner.send(RegisterType.ALL_PODS))
        if self._pods is not None:
            self._pods.add_event_handler(pods_changed)
        self._slo.add_event_handler(EventHandlerFuncs(
            add=lambda o: self._runner.send(RegisterType.NODE_SLO_SPEC),
            update=self._on_slo_update))

    def _on_node_update(self, old: Any, new: Any) -> None:
        o, n = _meta(old), _meta(new)
        if (o.get("labels"), o.get("annotations")) != (n.get("labels"), n.get("annotations")):
            self._runner.send(RegisterType.NODE_METADATA)

    def _on_slo_update(self, old: Any, new: Any) -> None:
        if old.get("spec") != new.get("spec"):
            self._runner.send(RegisterType.NODE_SLO_SPEC)

    def _callback_target(self, rtype: RegisterType) -> dict[str, Any]:
        slo = self.get_node_slo() or {}
        return {"pods": self.get_all_pods(),
                "hostApplications": (slo.get("spec") or {}).get("hostApplications") or []}

    def _one(self, informer: Any) -> dict[str, Any] | None:
        items = informer.indexer.list()
        return items[0] if items else None

    def get_node(self) -> dict[str, Any] | None:
        return self._one(self._node)

    def get_all_pods(self) -> list[PodMeta]:
        if self._kubelet_pods is not None:
            return [PodMeta(p) for p in self._kubelet_pods.pods()]
        return [PodMeta(p) for p in self._pods.indexer.list()]

    def get_node_slo(self) -> dict[str, Any] | None:
        return self._one(self._slo)

    def get_node_metric(self) -> dict[str, Any] | None:
        """This node's NodeMetric as the informer holds it (None before it exists)."""
        return self._one(self._metric)

    def get_node_metric_spec(self) -> dict[str, Any]:
        metric = self.get_node_metric() or {}
        return merge_node_metric_spec(metric.get("spec"))

    def register_callbacks(self, rtype: RegisterType, name: str, description: str,
                           fn: Callback) -> None:
        self._runner.register(rtype, name, description, fn)

    def send_callback(self, rtype: RegisterType) -> None:
        """Fire ``rtype``'s callbacks (``NodeTopology`` comes from the topology report)."""
        self._runner.send(rtype)

    def start(self, stop: threading.Event) -> None:
        """Start the callback workers and the kubelet poller; the informers start with the
        factory."""
        self._runner.start(stop)
        if self._kubelet_pods is not None:
            threading.Thread(target=self._kubelet_pods.run, args=(stop,), daemon=True,
                             name="kubelet-pods").start()

    def has_synced(self) -> bool:
        pods = self._kubelet_pods if self._kubelet_pods is not None else self._pods
        return all(i.has_synced() for i in (self._node, pods, self._slo, self._metric))
