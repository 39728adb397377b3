"""NodeSLO: the per-node QoS strategy koord-manager renders and koordlet enforces.

Corresponds to upstream `apis/slo/v1alpha1/nodeslo_types.go` (NodeSLOSpec, NodeSLOStatus,
NodeSLO). One NodeSLO per node, named like the node, rendered from the slo-controller-config
ConfigMap (see ``api.configuration``). The strategy types live in ``resource_qos``,
``strategies`` and ``host_application``.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from api.base import ApiModel
from api.meta import KubeObject
from api.slo.v1alpha1.extensions import ExtensionsMap
from api.slo.v1alpha1.host_application import HostApplicationSpec
from api.slo.v1alpha1.resource_qos import ResourceQOSStrategy
from api.slo.v1alpha1.strategies import CPUBurstStrategy, ResourceThresholdStrategy, SystemStrategy

GROUP = "slo.koordinator.sh"
VERSION = "v1alpha1"


class NodeSLOSpec(ApiModel):
    """NodeSLOSpec defines the desired state of NodeSLO."""

    # From resource-threshold-config: BE suppression and eviction thresholds.
    resource_used_threshold_with_be: ResourceThresholdStrategy | None = Field(
        None, alias="resourceUsedThresholdWithBE"
    )
    # From resource-qos-config.
    resource_qos_strategy: ResourceQOSStrategy | None = Field(None, alias="resourceQOSStrategy")
    # From cpu-burst-config.
    cpu_burst_strategy: CPUBurstStrategy | None = None
    # From system-config.
    system_strategy: SystemStrategy | None = None
    # Third-party strategies from the ConfigMap's other keys.
    extensions: ExtensionsMap | None = None
    # From host-application-config.
    host_applications: list[HostApplicationSpec] | None = None


class NodeSLOStatus(ApiModel):
    """NodeSLOStatus defines the observed state of NodeSLO (no fields upstream)."""


class NodeSLO(KubeObject):
    """NodeSLO is the Schema for the nodeslos API"""

    group: ClassVar[str] = GROUP
    version: ClassVar[str] = VERSION
    plural: ClassVar[str] = "nodeslos"
    singular: ClassVar[str] = "nodeslo"
    namespaced: ClassVar[bool] = False

    spec: NodeSLOSpec = Field(default_factory=NodeSLOSpec)
    status: NodeSLOStatus | None = None


__all__ = ["GROUP", "VERSION", "NodeSLO", "NodeSLOSpec", "NodeSLOStatus"]
