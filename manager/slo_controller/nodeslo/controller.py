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
from api.meta import ObjectMeta
from api.slo.v1alpha1.nodeslo import NodeSLO
from manager.slo_controller.config import SLOConfigCache
from manager.slo_controller.nodeslo.spec import node_slo_spec
from manager.slo_controller.pernode import PerNodeController
from pkg.client.errors import is_not_found
from pkg.client.informers import SharedInformer, SharedInformerFactory
from pkg.client.resources import NODE_SLOS
from pkg.client.rest import Client
from pkg.controller import Result
from pkg.events import WARNING, EventRecorder
from pkg.util.clock import REAL_CLOCK, Clock

log = logging.getLogger(__name__)

NAME = "nodeslo"
REASON_INVALID_NODE_ANNOTATION = "InvalidNodeSLOAnnotation"

# SLOControllerConfig fields rendered into NodeSLO: a change of any re-renders every node.
_RENDERED = ("resource_threshold", "resource_qos", "cpu_burst", "system", "host_application")


class NodeSLOController(PerNodeController):
    """Keeps a NodeSLO for every node (see the module docstring)."""

    name = NAME
    resource = NODE_SLOS

    def __init__(self, client: Client, informer_factory: SharedInformerFactory,
                 config: SLOConfigCache, recorder: EventRecorder | None = None, *,
                 workers: int = 1, clock: Clock = REAL_CLOCK) -> None:
        self.recorder = recorder
        super().__init__(client, informer_factory, config, workers=workers, clock=clock)

    @property
    def node_slos(self) -> SharedInformer:
        return self.owned

    def config_changed(self, old: SLOControllerConfig, new: SLOControllerConfig) -> bool:
        return any(getattr(old, f) != getattr(new, f) for f in _RENDERED)

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
            created = NodeSLO(metadata=ObjectMeta(name=name), spec=spec)
            self.client.create(NODE_SLOS, created.to_dict())
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


__all__ = ["NAME", "REASON_INVALID_NODE_ANNOTATION", "NodeSLOController"]
