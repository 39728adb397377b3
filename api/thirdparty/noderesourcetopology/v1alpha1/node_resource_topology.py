"""NodeResourceTopology ``v1alpha1``: a node's NUMA zones and the resources in each.

Corresponds to k8stopologyawareschedwg noderesourcetopology-api
`pkg/apis/topology/v1alpha1/types.go`. Cluster-scoped, one per node, named like the node. This is
the version Koordinator's code reads and writes; ``v1alpha2`` is the CRD's storage version and
shares the zone types defined here. koordlet writes one zone per NUMA node, named ``node-<id>``
with type ``Node``.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from api.base import CRD_REQUIRED, ApiModel, Int64
from api.core import Quantity
from api.meta import KubeObject

GROUP = "topology.node.k8s.io"
VERSION = "v1alpha1"

API_APPROVED = {"api-approved.kubernetes.io": "https://github.com/kubernetes/enhancements/pull/1870"}

# Zone type of a NUMA node zone.
ZONE_TYPE_NODE = "Node"


class ResourceInfo(ApiModel):
    """One resource of a zone: capacity, allocatable, and what is still available."""

    name: str = Field("", json_schema_extra=CRD_REQUIRED)
    capacity: Quantity = Field("0", json_schema_extra=CRD_REQUIRED)
    allocatable: Quantity = Field("0", json_schema_extra=CRD_REQUIRED)
    available: Quantity = Field("0", json_schema_extra=CRD_REQUIRED)


class CostInfo(ApiModel):
    """The cost (distance) from a zone to the zone named ``name``."""

    name: str = Field("", json_schema_extra=CRD_REQUIRED)
    value: Int64 = Field(0, json_schema_extra=CRD_REQUIRED)


class AttributeInfo(ApiModel):
    name: str = Field("", json_schema_extra=CRD_REQUIRED)
    value: str = Field("", json_schema_extra=CRD_REQUIRED)


class Zone(ApiModel):
    """A topology zone (socket, NUMA node, die or core)."""

    name: str = Field("", json_schema_extra=CRD_REQUIRED)
    type: str = Field("", json_schema_extra=CRD_REQUIRED)
    parent: str | None = None
    costs: list[CostInfo] | None = None
    attributes: list[AttributeInfo] | None = None
    resources: list[ResourceInfo] | None = None


class NodeResourceTopology(KubeObject):
    """NodeResourceTopology describes node resources and their topology."""

    group: ClassVar[str] = GROUP
    version: ClassVar[str] = VERSION
    plural: ClassVar[str] = "noderesourcetopologies"
    singular: ClassVar[str] = "noderesourcetopology"
    namespaced: ClassVar[bool] = False
    short_names: ClassVar[tuple[str, ...]] = ("node-res-topo",)
    status_subresource: ClassVar[bool] = False
    served: ClassVar[bool] = True
    storage: ClassVar[bool] = False
    crd_annotations: ClassVar[dict[str, str]] = API_APPROVED

    # The kubelet topology manager policies (koordlet writes ``None`` when unset).
    topology_policies: list[str] = Field(default_factory=list, json_schema_extra=CRD_REQUIRED)
    zones: list[Zone] = Field(default_factory=list, json_schema_extra=CRD_REQUIRED)

    def zone(self, name: str) -> Zone | None:
        """The zone called ``name``, if any."""
        return next((z for z in self.zones if z.name == name), None)


__all__ = [
    "ZONE_TYPE_NODE", "AttributeInfo", "CostInfo", "NodeResourceTopology", "ResourceInfo", "Zone",
]
