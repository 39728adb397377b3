"""The noderesource controller (upstream `pkg/slo-controller/noderesource`, the controller
and the status path of `resource_calculator.go`).

Watches Nodes (every event), NodeMetrics (updates whose ``status`` changed; a deletion forgets
the node's last write and enqueues it), Pods (only as the per-node index the calculation
reads), NodeResourceTopologies (CPUNormalization reads the CPU basic info annotation and
BatchResource the NUMA zones; a change of either enqueues the node), Devices (GPU/RDMA
resources; every event enqueues the node of the same name) and the slo-controller-config (a
change enqueues every node).
Each key is a node name; ``reconcile`` runs the pure calculation of ``calculator`` over informer
state and writes ``status`` only when upstream would (``isNodeResourceSyncNeeded``: first write,
``updateTimeThresholdSeconds`` passed, or a change past ``resourceDiffThreshold``), and merge
patches labels/annotations when a NodeMetaCheck plugin sees a difference. Before that, the batch
results per NUMA zone are written to the node's NodeResourceTopology (upstream's PreUpdate) when
they moved past ``resourceDiffThreshold`` or ``updateTimeThresholdSeconds`` passed since the
last NRT write.

Wiring (koord-manager's main, on the leader)::

    cache = SLOConfigCache(factory, recorder)       # manager.slo_controller.config
    ctrl = NodeResourceController(client, factory, cache)
    factory.start()
    ctrl.start(sync_timeout=120)                    # waits for every informer it reads
    ...
    ctrl.stop()
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from api.configuration import ColocationCfg, ColocationStrategy, SLOControllerConfig
from api.extension.cpu_normalization import ANNOTATION_CPU_BASIC_INFO
from api.extension.node_colocation import ANNOTATION_NODE_COLOCATION_STRATEGY
from manager.slo_controller.noderesource import calculator, inputs, numazone
from manager.slo_controller.noderesource.framework import (
    NodeResource,
    Plugin,
    PluginInputs,
    PodInfo,
)
from manager.slo_controller.noderesource.plugins import PLUGINS
from pkg.client.errors import is_conflict, is_not_found, is_too_many_requests
from pkg.client.informers import SharedInformerFactory
from pkg.client.informers.handlers import EventHandlerFuncs, deleted_object
from pkg.client.informers.store import NODE_NAME_INDEX, name_of
from pkg.client.resources import DEVICES, NODE_METRICS, NODE_RESOURCE_TOPOLOGIES, NODES, PODS
from pkg.client.rest import Client
from pkg.controller import Controller, Result
from pkg.events import WARNING, EventRecorder
from pkg.util.clock import REAL_CLOCK, Clock

log = logging.getLogger(__name__)

CONTROLLER_NAME = "noderesource"
# The Warning event on a NodeMetric whose usage cannot be a measurement (the node degrades).
REASON_INVALID_NODE_METRIC = "InvalidNodeMetric"
# client-go retry.DefaultBackoff: 4 steps from 10 ms, ×5, jitter 0.1.
RETRY_STEPS, RETRY_DELAY, RETRY_FACTOR, RETRY_JITTER = 4, 0.01, 5.0, 0.1


class ConfigSource(Protocol):
    """The slo-controller-config cache (``manager.slo_controller.config.SLOConfigCache``)."""

    def available(self) -> bool: ...

    def current(self) -> SLOControllerConfig: ...

    def add_listener(self, fn: Callable[[SLOControllerConfig, SLOControllerConfig], None]
                     ) -> None: ...


class StrategyCache:
    """``ColocationCfg.for_node`` memoised on what it reads (labels and the strategy
    annotation): merging pydantic models per node per reconcile would dominate large clusters."""

    def __init__(self) -> None:
        self._cfg: ColocationCfg | None = None
        self._cache: dict[tuple[Any, ...], ColocationStrategy] = {}
        self._lock = threading.Lock()

    def for_node(self, cfg: ColocationCfg, node: Mapping[str, Any]) -> ColocationStrategy:
        meta = node.get("metadata") or {}
        labels = meta.get("labels") or {}
        key = (tuple(sorted(labels.items())),
               (meta.get("annotations") or {}).get(ANNOTATION_NODE_COLOCATION_STRATEGY))
        with self._lock:
            if cfg is not self._cfg:
                self._cfg, self._cache = cfg, {}
            found = self._cache.get(key)
        if found is None:
            found = cfg.for_node(node)
            with self._lock:
                if cfg is self._cfg:
                    self._cache[key] = found
        return found


class PodInfoCache:
    """``PodInfo`` per pod, rebuilt only when the pod's resourceVersion changes."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[str, PodInfo]] = {}
        self._lock = threading.Lock()

    def get(self, pod: Mapping[str, Any]) -> PodInfo:
        meta = pod.get("metadata") or {}
        uid, rv = meta.get("uid") or "", meta.get("resourceVersion") or ""
        with self._lock:
            hit = self._cache.get(uid)
        if hit is not None and hit[0] == rv and rv:
            return hit[1]
        info = inputs.pod_info(pod)
        with self._lock:
            self._cache[uid] = (rv, info)
        return info

    def forget(self, pod: Mapping[str, Any]) -> None:
        with self._lock:
            self._cache.pop((pod.get("metadata") or {}).get("uid") or "", None)


class NodeResourceController:
    """Reconciles batch/mid resources of every node; see the module docstring."""

    def __init__(self, client: Client, factory: SharedInformerFactory, config: ConfigSource,
                 *, plugins: Sequence[Plugin] = PLUGINS, clock: Clock = REAL_CLOCK,
                 workers: int = 4, recorder: EventRecorder | None = None) -> None:
        self.client = client
        self.recorder = recorder
        self.config = config
        self.plugins = tuple(plugins)
        self.clock = clock
        self.nodes = factory.informer_for(NODES)
        # Plain JSON: decoding 5,000 NodeMetrics into models on every report would be wasted.
        self.metrics = factory.informer_for(NODE_METRICS, typed=False)
        self.pods = factory.informer_for(PODS)
        self.topologies = factory.informer_for(NODE_RESOURCE_TOPOLOGIES, typed=False)
        self.devices = factory.informer_for(DEVICES, typed=False)
        self.strategies = StrategyCache()
        self.pod_infos = PodInfoCache()
        self._last_update: dict[str, float] = {}
        self._last_topology_update: dict[str, float] = {}
        self._lock = threading.Lock()
        self.controller = Controller(CONTROLLER_NAME, self.reconcile, workers=workers,
                                     clock=clock)
        self.nodes.add_event_handler(self.controller.event_handler(name_of))
        self.metrics.add_event_handler(EventHandlerFuncs(
            update=self._on_metric_update, delete=self._on_metric_delete))
        self.pods.add_event_handler(EventHandlerFuncs(
            delete=lambda obj: self.pod_infos.forget(deleted_object(obj))))
        self.topologies.add_event_handler(EventHandlerFuncs(
            add=lambda obj: self.controller.enqueue(name_of(obj)),
            update=self._on_topology_update))
        self.devices.add_event_handler(self.controller.event_handler(name_of))
        config.add_listener(lambda _old, _new: self.enqueue_all())

    # -- events ---------------------------------------------------------------------------

    def _on_metric_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        if old.get("status") != new.get("status"):
            self.controller.enqueue(name_of(new))

    def _on_topology_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        # The CPU basic info or koordlet's zones; our own batch entries are not news.
        if (_cpu_basic_info(old) != _cpu_basic_info(new)
                or numazone.without_batch(old) != numazone.without_batch(new)):
            self.controller.enqueue(name_of(new))

    def _on_metric_delete(self, obj: Any) -> None:
        name = name_of(deleted_object(obj))
        with self._lock:
            self._last_update.pop(name, None)
        self.controller.enqueue(name)

    def enqueue_all(self) -> None:
        for node in self.nodes.lister.list():
            self.controller.enqueue(name_of(node))

    # -- running --------------------------------------------------------------------------

    def start(self, sync_timeout: float | None = None) -> bool:
        return self.controller.start(wait_for=[self.nodes, self.metrics, self.pods,
                                               self.topologies, self.devices],
                                     sync_timeout=sync_timeout)

    def stop(self, timeout: float | None = 30.0) -> bool:
        return self.controller.stop(timeout)

    # -- reconcile ------------------------------------------------------------------------

    def pods_on(self, node_name: str) -> list[PodInfo]:
        return [self.pod_infos.get(p) for p in self.pods.lister.by_index(NODE_NAME_INDEX,
                                                                           node_name)]

    def desired(self, config: SLOControllerConfig, node: Mapping[str, Any]
                ) -> tuple[ColocationStrategy, NodeResource, dict[str, Any]]:
        """The node's strategy, the calculation and the node as it should be, from informer
        state."""
        name = name_of(node)
        cfg = config.colocation
        strategy = self.strategies.for_node(cfg, node)
        metric = self.metrics.lister.get(name)
        status = metric.get("status") if metric is not None else None
        problem = inputs.untrusted_usage(status)
        if metric is not None and problem is not None:
            # The plugins degrade the node (inputs.is_degraded); say why, on the NodeMetric.
            message = (f"NodeMetric {name} is not used for node {name}'s batch and mid "
                       f"resources: {problem}")
            log.warning("%s", message)
            if self.recorder is not None:
                self.recorder.event(metric, WARNING, REASON_INVALID_NODE_METRIC, message)
        extra = PluginInputs(config, self.topologies.lister.get(name),
                             self.devices.lister.get(name))
        nr = calculator.calculate(cfg, strategy, node, status if metric is not None else None,
                                  self.pods_on(name), self.clock.now(), self.plugins, extra)
        return strategy, nr, calculator.prepare_node(node, nr, self.plugins)

    def reconcile(self, name: str) -> Result | None:
        if not self.config.available():
            return None
        node = self.nodes.lister.get(name)
        if node is None:
            with self._lock:
                self._last_update.pop(name, None)
                self._last_topology_update.pop(name, None)
            return None
        # One config snapshot for the whole reconcile, even if the ConfigMap changes meanwhile.
        config = self.config.current()
        strategy, nr, new = self.desired(config, node)
        with self._lock:
            last = self._last_update.get(name)
        needed, reason = calculator.need_status_update(strategy, node, new, last,
                                                       self.clock.now(), self.plugins)
        meta_needed, meta_reason = calculator.need_meta_update(node, new, self.plugins)
        errors: list[Exception] = []
        if nr.zone_resources:
            try:
                self.update_topology(name, strategy, nr)
            except Exception as err:
                errors.append(err)
        if needed:
            log.debug("node %s: updating status: %s", name, reason)
            try:
                self.update_status(name, config)
            except Exception as err:
                errors.append(err)
        if meta_needed:
            log.debug("node %s: patching metadata: %s", name, meta_reason)
            try:
                self.patch_meta(name, config)
            except Exception as err:
                errors.append(err)
        if errors:  # both paths tried; the workqueue's backoff retries the node
            raise errors[0]
        return None

    def patch_meta(self, name: str, config: SLOControllerConfig) -> None:
        """Re-GET, re-prepare and merge-patch the node's labels and annotations."""
        try:
            fresh = self.client.get(NODES, name)
            _, _, prepared = self.desired(config, fresh)
            patch = calculator.meta_patch(fresh, prepared)
            if patch:
                self.client.patch(NODES, name, patch)
        except Exception as err:
            if is_not_found(err):
                return
            raise

    def update_status(self, name: str, config: SLOControllerConfig) -> None:
        """GET, prepare and PUT the node's status; retried on Conflict / 429 as client-go's
        ``RetryOnConflict`` with the default backoff. A vanished node is not an error."""
        def write() -> None:
            fresh = self.client.get(NODES, name)
            _, _, prepared = self.desired(config, fresh)
            self.client.update_status(NODES, prepared)
            with self._lock:
                self._last_update[name] = self.clock.now()

        self.retry(write)

    def update_topology(self, name: str, strategy: ColocationStrategy,
                        nr: NodeResource) -> None:
        """Write the zone results into the node's NodeResourceTopology when needed."""
        def write() -> None:
            nrt = self.client.get(NODE_RESOURCE_TOPOLOGIES, name)
            if numazone.zone_capacities(nrt) is None:
                return
            zones = nrt.get("zones") or []
            changed = numazone.update_zone_list(zones, nr,
                                                strategy.resource_diff_threshold or 0.0)
            with self._lock:
                last = self._last_topology_update.get(name)
            expired = last is None or (self.clock.now() - last
                                       > (strategy.update_time_threshold_seconds or 0))
            if not changed and not expired:
                return
            nrt["zones"] = zones
            self.client.update(NODE_RESOURCE_TOPOLOGIES, nrt)
            with self._lock:
                self._last_topology_update[name] = self.clock.now()

        self.retry(write)

    def retry(self, write: Callable[[], None]) -> None:
        """client-go's ``RetryOnConflict`` with the default backoff, also on 429; a vanished
        object is not an error."""
        delay = RETRY_DELAY
        for step in range(RETRY_STEPS):
            try:
                write()
            except Exception as err:
                if is_not_found(err):
                    return
                if (is_conflict(err) or is_too_many_requests(err)) and step < RETRY_STEPS - 1:
                    self.clock.sleep(delay * (1 + random.random() * RETRY_JITTER))
                    delay *= RETRY_FACTOR
                    continue
                raise
            return


def _cpu_basic_info(topology: Mapping[str, Any]) -> str | None:
    return ((topology.get("metadata") or {}).get("annotations") or {}).get(
        ANNOTATION_CPU_BASIC_INFO)


__all__ = ["CONTROLLER_NAME", "ConfigSource", "DEVICES", "NODE_METRICS", "NODE_RESOURCE_TOPOLOGIES",
           "NodeResourceController",
           "PodInfoCache", "StrategyCache"]
