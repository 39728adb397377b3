"""NodeResourceTopology ``v1alpha2``, the CRD's storage version.

Corresponds to k8stopologyawareschedwg noderesourcetopology-api
`pkg/apis/topology/v1alpha2/types.go`. Same zones as ``v1alpha1``; ``topologyPolicies`` is
optional (deprecated in favour of the top-level ``attributes``).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from api.base import CRD_REQUIRED
from api.meta import KubeObject
from api.thirdparty.noderesourcetopology.v1alpha1.node_resource_topology import (
    API_APPROVED,
    AttributeInfo,
    CostInfo,
    ResourceInfo,
    Zone,
)

GROUP = "topology.node.k8s.io"
VERSION = "v1alpha2"


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
    storage: ClassVar[bool] = True
    crd_annotations: ClassVar[dict[str, str]] = API_APPROVED

    # Deprecated upstream: use ``attributes``.
    topology_policies: list[str] | None = None
    zones: list[Zone] = Field(default_factory=list, json_schema_extra=CRD_REQUIRED)
    attributes: list[AttributeInfo] | None = None

    def zone(self, name: str) -> Zone | None:
        """The zone called ``name``, if any."""
        return next((z for z in self.zones if z.name == name), None)


__all__ = ["AttributeInfo", "CostInfo", "NodeResourceTopology", "ResourceInfo", "Zone"]
