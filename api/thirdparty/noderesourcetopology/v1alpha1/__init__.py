"""``topology.node.k8s.io/v1alpha1``: the NodeResourceTopology version Koordinator uses."""

from api.thirdparty.noderesourcetopology.v1alpha1.node_resource_topology import (
    AttributeInfo,
    CostInfo,
    NodeResourceTopology,
    ResourceInfo,
    Zone,
)

GROUP = "topology.node.k8s.io"
VERSION = "v1alpha1"

__all__ = [
    "GROUP", "VERSION", "AttributeInfo", "CostInfo", "NodeResourceTopology", "ResourceInfo", "Zone",
]
