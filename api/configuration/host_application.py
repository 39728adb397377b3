"""``host-application-config``: QoS of processes running outside pods, per node.

Corresponds to ``HostApplicationCfg``/``NodeHostApplicationCfg`` in upstream
`apis/configuration/slo_controller_config.go` and ``getHostApplicationConfig`` of
`pkg/slo-controller/nodeslo/resource_strategy.go`. No defaults and no merging: the first
matching ``nodeConfigs`` entry's ``applications`` replace the cluster list for that node.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from api.base import GoJSONModel
from api.configuration.profile import NodeCfgProfile, first_matching
from api.slo.v1alpha1.host_application import HostApplicationSpec


class NodeHostApplicationCfg(NodeCfgProfile):
    """A ``nodeConfigs[]`` entry: name, node selector and the node's applications."""

    applications: list[HostApplicationSpec] | None = None


class HostApplicationCfg(GoJSONModel):
    """The ``host-application-config`` key (→ ``NodeSLO.spec.hostApplications``)."""

    applications: list[HostApplicationSpec] | None = None
    node_configs: list[NodeHostApplicationCfg] | None = None

    def for_node(self, node: Mapping[str, Any]) -> list[HostApplicationSpec]:
        """The applications of a node (copies): the first matching entry's, else the
        cluster list."""
        entry = first_matching(self.node_configs, node)
        source = entry.applications if entry is not None else self.applications
        return [app.model_copy(deep=True) for app in source or []]


__all__ = ["HostApplicationCfg", "NodeHostApplicationCfg"]
