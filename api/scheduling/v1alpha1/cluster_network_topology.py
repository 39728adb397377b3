"""ClusterNetworkTopology: the network layers of the cluster, for topology-aware gang scheduling.

Corresponds to upstream `apis/scheduling/v1alpha1/cluster_network_topology_types.go`.
Cluster-scoped; ``spec`` names the layers and the node labels that place a node in each, the
controller fills ``status`` with the layer tree it found.
"""

from __future__ import annotations

from enum import StrEnum
from typing import ClassVar

from pydantic import Field

from api.base import CRD_REQUIRED, ApiModel, Int32
from api.meta import KubeObject

GROUP = "scheduling.koordinator.sh"
VERSION = "v1alpha1"


class TopologyLayer(StrEnum):
    """The built-in layers; any other layer name may be defined in the spec."""

    CLUSTER = "ClusterTopologyLayer"
    NODE = "NodeTopologyLayer"


class NetworkTopologySpec(ApiModel):
    """One layer: its name, its parent layer and the node label keys (any of) naming it."""

    topology_layer: str = Field("", json_schema_extra=CRD_REQUIRED)
    parent_topology_layer: str | None = None
    label_key: list[str] | None = None


class ClusterNetworkTopologySpec(ApiModel):
    network_topology_spec: list[NetworkTopologySpec] = Field(
        default_factory=list, json_schema_extra=CRD_REQUIRED)


class TopologyInfo(ApiModel):
    topology_layer: str = Field("", json_schema_extra=CRD_REQUIRED)
    topology_name: str = Field("", json_schema_extra=CRD_REQUIRED)


class ClusterNetworkTopologyDetailStatus(ApiModel):
    """One topology domain: where it sits in the tree and how many nodes it holds."""

    topology_info: TopologyInfo = Field(default_factory=TopologyInfo,
                                        json_schema_extra=CRD_REQUIRED)
    parent_topology_info: TopologyInfo | None = None
    child_topology_layer: str | None = None
    child_topology_names: list[str] | None = None
    node_num: Int32 = Field(0, json_schema_extra=CRD_REQUIRED)


class ClusterNetworkTopologyStatus(ApiModel):
    detail_status: list[ClusterNetworkTopologyDetailStatus] | None = None


class ClusterNetworkTopology(KubeObject):
    """ClusterNetworkTopology describes the network topology layers of the cluster."""

    group: ClassVar[str] = GROUP
    version: ClassVar[str] = VERSION
    plural: ClassVar[str] = "clusternetworktopologies"
    singular: ClassVar[str] = "clusternetworktopology"
    namespaced: ClassVar[bool] = False
    status_subresource: ClassVar[bool] = True

    spec: ClusterNetworkTopologySpec = Field(default_factory=ClusterNetworkTopologySpec)
    status: ClusterNetworkTopologyStatus | None = None


__all__ = [
    "ClusterNetworkTopology", "ClusterNetworkTopologyDetailStatus", "ClusterNetworkTopologySpec",
    "ClusterNetworkTopologyStatus", "NetworkTopologySpec", "TopologyInfo", "TopologyLayer",
]
