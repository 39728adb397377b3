"""The nodemetric controller: one NodeMetric per node, its spec from colocation-config.

Corresponds to upstream `pkg/slo-controller/nodemetric` (``NodeMetricReconciler``, controller
name ``nodemetric``). Keys are node names; NodeMetrics are cluster-scoped and named after
their node. Per key:

=======  ==========  ==============================================================
Node     NodeMetric  action
=======  ==========  ==============================================================
absent   absent      nothing
absent   present     delete the NodeMetric (upstream deletes explicitly, no GC)
present  absent      create it with the computed spec
present  present     recompute the spec; update only if it differs; while
                     ``colocation-config`` is refused (error status) leave it as is
=======  ==========  ==============================================================

Watches: Nodes (add/delete; updates only when allocatable, labels or annotations changed),
NodeMetrics (add/delete; updates only on a new generation, so koordlet's status reports do not
wake it) and the config cache (every node when ``colocation-config`` changed). Nothing is done
before the config cache is available.

A NodeMetric the informer cannot decode (koordlet reported ``cpu: 1e30``, which the model
refuses) is absent from the cache although it exists: creating it answers AlreadyExists, which
is logged once per attempt and not retried; the next readable report brings it back.
"""

from __future__ import annotations

import logging
from typing import Any

from api.configuration import COLOCATION_CONFIG_KEY, SLOControllerConfig
from api.meta import ObjectMeta
from api.slo.v1alpha1.nodemetric import NodeMetric
from manager.slo_controller.nodemetric.collect_policy import node_metric_spec
from manager.slo_controller.pernode import PerNodeController
from pkg.client.errors import is_already_exists, is_not_found
from pkg.client.informers import SharedInformer
from pkg.client.resources import NODE_METRICS
from pkg.controller import Result

log = logging.getLogger(__name__)

NAME = "nodemetric"


class NodeMetricController(PerNodeController):
    """Keeps a NodeMetric for every node (see the module docstring)."""

    name = NAME
    resource = NODE_METRICS

    @property
    def node_metrics(self) -> SharedInformer:
        return self.owned

    def config_changed(self, old: SLOControllerConfig, new: SLOControllerConfig) -> bool:
        return old.colocation != new.colocation

    def reconcile(self, name: str) -> Result | None:
        if not self.config.available():
            return Result(requeue=True)
        node: dict[str, Any] | None = self.nodes.lister.get(name)
        metric: NodeMetric | None = self.node_metrics.lister.get(name)
        if node is None:
            if metric is not None:
                self._delete(name)
            return None
        if metric is None:
            spec = node_metric_spec(self.config.current().colocation, node)
            created = NodeMetric(metadata=ObjectMeta(name=name), spec=spec)
            try:
                self.client.create(NODE_METRICS, created.to_dict())
            except Exception as err:
                if not is_already_exists(err):
                    raise
                log.warning("NodeMetric %s exists but cannot be read (see the informer's "
                            "decode error); leaving it until a readable update arrives", name)
                return None
            log.info("created NodeMetric %s", name)
            return None
        if self.config.is_error(COLOCATION_CONFIG_KEY):
            return None
        spec = node_metric_spec(self.config.current().colocation, node)
        current = metric.spec.to_dict() if metric.spec is not None else None
        if current == spec.to_dict():
            return None
        updated = metric.model_copy(update={"spec": spec})
        self.client.update(NODE_METRICS, updated.to_dict())
        log.info("updated NodeMetric %s spec", name)
        return None

    def _delete(self, name: str) -> None:
        try:
            self.client.delete(NODE_METRICS, name)
        except Exception as err:
            if not is_not_found(err):
                raise
        log.info("deleted NodeMetric %s of a removed node", name)


__all__ = ["NAME", "NodeMetricController"]
