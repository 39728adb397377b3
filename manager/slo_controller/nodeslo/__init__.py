"""The nodeslo controller (upstream `pkg/slo-controller/nodeslo`): one NodeSLO per node,
rendered from slo-controller-config's NodeSLO keys with node-selector overrides."""

from manager.slo_controller.nodeslo.controller import NAME, NodeSLOController
from manager.slo_controller.nodeslo.spec import node_slo_spec

__all__ = ["NAME", "NodeSLOController", "node_slo_spec"]
