"""What the nodemetric and nodeslo controllers share: one object per node, named after it.

Corresponds to the common shape of upstream's ``NodeMetricReconciler`` and
``NodeSLOReconciler`` (pkg/slo-controller/nodemetric, nodeslo). Keys are node names. Nodes
wake a node's key on add/delete and on updates that change what the object is rendered from
(allocatable, labels, annotations); the owned objects wake it on add/delete and on a new
generation only (so status reports do not); a change of the config keys the controller renders
from wakes every node. Nothing is reconciled before the config cache is available.
"""

from __future__ import annotations

from typing import ClassVar

from api.configuration import SLOControllerConfig
from manager.slo_controller.config import SLOConfigCache
from pkg.client.informers import EventHandlerFuncs, SharedInformer, SharedInformerFactory
from pkg.client.resources import NODES, Resource
from pkg.client.rest import Client
from pkg.controller import Controller, Result
from pkg.util.clock import REAL_CLOCK, Clock
from pkg.util.predicates import generation_changed, node_slo_inputs_changed


class PerNodeController:
    """Base of the controllers that keep one ``resource`` object per node."""

    name: ClassVar[str]
    resource: ClassVar[Resource]

    def __init__(self, client: Client, informer_factory: SharedInformerFactory,
                 config: SLOConfigCache, *, workers: int = 1, clock: Clock = REAL_CLOCK) -> None:
        self.client = client
        self.config = config
        self.nodes: SharedInformer = informer_factory.informer_for(NODES)
        self.owned: SharedInformer = informer_factory.informer_for(self.resource)
        self.controller = Controller(self.name, self.reconcile, workers=workers, clock=clock)
        enqueue = self.controller.enqueue_object
        self.nodes.add_event_handler(EventHandlerFuncs(
            add=enqueue, delete=enqueue,
            update=lambda old, new: enqueue(new) if node_slo_inputs_changed(old, new) else None))
        self.owned.add_event_handler(EventHandlerFuncs(
            add=enqueue, delete=enqueue,
            update=lambda old, new: enqueue(new) if generation_changed(old, new) else None))
        config.add_listener(self._on_config_changed)

    @property
    def informers(self) -> list[SharedInformer]:
        """The informers this controller reads (wait for them before reconciling)."""
        return [self.nodes, self.owned, self.config.informer]

    def start(self, sync_timeout: float | None = None) -> bool:
        """Start the workers once the informers synced (False if they did not in time)."""
        return self.controller.start(wait_for=self.informers, sync_timeout=sync_timeout)

    def stop(self, timeout: float | None = 30.0) -> bool:
        return self.controller.stop(timeout)

    def _on_config_changed(self, old: SLOControllerConfig, new: SLOControllerConfig) -> None:
        if self.config_changed(old, new):
            for node in self.nodes.lister.list():
                self.controller.enqueue_object(node)

    def config_changed(self, old: SLOControllerConfig, new: SLOControllerConfig) -> bool:
        """Whether a config change alters what this controller renders."""
        raise NotImplementedError

    def reconcile(self, name: str) -> Result | None:
        raise NotImplementedError
