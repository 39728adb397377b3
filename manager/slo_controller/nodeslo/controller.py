"""The nodeslo controller: one NodeSLO per node, rendered from slo-controller-config.

Corresponds to upstream `pkg/slo-controller/nodeslo` (``NodeSLOReconciler``, controller name
``nodeslo``). Keys are node names; NodeSLOs are cluster-scoped and named after their node.
Lifecycle as the nodemetric controller: node gone → NodeSLO deleted; node without NodeSLO →
created; otherwise the spec is re-rendered (``spec.node_slo_spec``) and written only when it
differs from the stored one.

Watches: Nodes (add/delete; updates only when allocatable, labels or annotations changed),
NodeSLOs (add/delete; updates on a new generation) and the config cache (every node when any
key rendered into NodeSLO changed). A node whose network-bandwidth annotation is unparsable
gets a Warning Event naming the annotation (and, as upstream, no ``systemStrategy``).
"""

from __future__ import annotations

import logging
from typing import Any

from api.configuration import SLOControllerConfig
from api.slo.v1alpha1.nodeslo import NodeSLO
from manager.slo_controller.config import SLOConfigCache
from manager.slo_controller.nodeslo.spec import node_slo_spec
from pkg.client.errors import is_not_found
from pkg.client.informers import EventHandlerFuncs, SharedInformer, SharedInformerFactory
from pkg.client.resources import NODES, Resource
from pkg.client.rest import Client
from pkg.controller import Controller, Result
from pkg.events import WARNING, EventRecorder
from pkg.util.clock import REAL_CLOCK, Clock
from pkg.util.predicates import generation_changed, node_slo_inputs_changed

log = logging.getLogger(__name__)

NAME = "nodeslo"
NODE_SLOS = Resource.for_model(NodeSLO)
REASON_INVALID_NODE_ANNOTATION = "InvalidNodeSLOAnnotation"

# SLOControllerConfig fields rendered into NodeSLO: a change of any re-renders every node.
_RENDERED = ("resource_threshold", "resource_qos", "cpu_burst", "system", "host_application")


class NodeSLOController:
    """Keeps a NodeSLO for every node (see the module docstring)."""

    def __init__(self, client: Client, informer_factory: SharedInformerFactory,
                 config: SLOConfigCache, recorder: EventRecorder | None = None, *,
                 workers: int = 1, clock: Clock = REAL_CLOCK) -> None:
        self.client = client
        self.config = config
        self.recorder = recorder
        self.nodes: SharedInformer = informer_factory.informer_for(NODES)
        self.node_slos: SharedInformer = informer_factory.informer_for(NODE_SLOS)
        self.controller = Controller(NAME, self.reconcile, workers=workers, clock=clock)
        enqueue = self.controller.enqueue_object
        self.nodes.add_event_handler(EventHandlerFuncs(
            add=enqueue, delete=enqueue,
            update=lambda old, new: enqueue(new) if node_slo_inputs_changed(old, new) else None))
        self.node_slos.add_event_handler(EventHandlerFuncs(
            add=enqueue, delete=enqueue,
            update=lambda old, new: enqueue(new) if generation_changed(old, new) else None))
        config.add_listener(self._on_config_changed)

    @property
    def informers(self) -> list[SharedInformer]:
        """The informers this controller reads (wait for them before reconciling)."""
        return [self.nodes, self.node_slos, self.config.informer]

    def start(self, sync_timeout: float | None = None) -> bool:
        """Start the workers once the informers synced (False if they did not in time)."""
        return self.controller.start(wait_for=self.informers, sync_timeout=sync_timeout)

    def stop(self, timeout: float | None = 30.0) -> bool:
        return self.controller.stop(timeout)

    def _on_config_changed(self, old: SLOControllerConfig, new: SLOControllerConfig) -> None:
        if any(getattr(old, f) != getattr(new, f) for f in _RENDERED):
            for node in self.nodes.lister.list():
                self.controller.enqueue_object(node)

    def reconcile(self, name: str) -> Result | None:
        if not self.config.available():
            return Result(requeue=True)
        node: dict[str, Any] | None = self.nodes.lister.get(name)
        slo: NodeSLO | None = self.node_slos.lister.get(name)
        if node is None:
            if slo is not None:
                self._delete(name)
            return None
        spec, bad_annotation = node_slo_spec(self.config.current(), node,
                                             slo.spec if slo is not None else None)
        if bad_annotation is not None:
            log.error("%s; node %s gets no systemStrategy", bad_annotation, name)
            if self.recorder is not None:
                self.recorder.event(node, WARNING, REASON_INVALID_NODE_ANNOTATION,
                                    f"{bad_annotation}; NodeSLO has no systemStrategy")
        if slo is None:
            self.client.create(NODE_SLOS, NodeSLO(metadata={"name": name}, spec=spec).to_dict())
            log.info("created NodeSLO %s", name)
            return None
        if slo.spec.to_dict() == spec.to_dict():
            return None
        self.client.update(NODE_SLOS, slo.model_copy(update={"spec": spec}).to_dict())
        log.info("updated NodeSLO %s spec", name)
        return None

    def _delete(self, name: str) -> None:
        try:
            self.client.delete(NODE_SLOS, name)
        except Exception as err:
            if not is_not_found(err):
                raise
        log.info("deleted NodeSLO %s of a removed node", name)


__all__ = ["NAME", "NODE_SLOS", "REASON_INVALID_NODE_ANNOTATION", "NodeSLOController"]
