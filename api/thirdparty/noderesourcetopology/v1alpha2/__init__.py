"""``topology.node.k8s.io/v1alpha2``: the NodeResourceTopology storage version."""

from api.thirdparty.noderesourcetopology.v1alpha2.node_resource_topology import (
    AttributeInfo,
    CostInfo,
    NodeResourceTopology,
    ResourceInfo,
    Zone,
)

GROUP = "topology.node.k8s.io"
VERSION = "v1alpha2"

__all__ = [
    "GROUP", "VERSION", "AttributeInfo", "CostInfo", "NodeResourceTopology", "ResourceInfo", "Zone",
]
