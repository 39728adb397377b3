"""NodeResourceTopology in both versions: top-level zones, quantities, storage version."""

from __future__ import annotations

import pytest

from api.meta import ObjectMeta
from api.thirdparty.noderesourcetopology import v1alpha1, v1alpha2

ZONES = [
    {"name": "node-0", "type": "Node",
     "costs": [{"name": "node-0", "value": 10}, {"name": "node-1", "value": 20}],
     "attributes": [{"name": "cpus", "value": "0-15"}],
     "resources": [{"name": "cpu", "capacity": "16", "allocatable": "15", "available": "7500m"},
                   {"name": "memory", "capacity": "64Gi", "allocatable": "62Gi",
                    "available": "30Gi"}]},
    {"name": "node-1", "type": "Node"},
]


def test_v1alpha1_round_trips() -> None:
    doc = {"apiVersion": "topology.node.k8s.io/v1alpha1", "kind": "NodeResourceTopology",
           "metadata": {"name": "node-a",
                        "labels": {"app.kubernetes.io/managed-by": "Koordinator"}},
           "topologyPolicies": ["None"], "zones": ZONES}
    nrt = v1alpha1.NodeResourceTopology.model_validate(doc)
    assert nrt.to_dict() == doc
    zone = nrt.zone("node-0")
    assert zone is not None and zone.resources is not None
    assert zone.resources[0].available == "7500m"
    assert nrt.zone("node-9") is None


def test_v1alpha2_round_trips_with_attributes() -> None:
    doc = {"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
           "metadata": {"name": "node-a"}, "zones": ZONES,
           "attributes": [{"name": "topologyManagerPolicy", "value": "single-numa-node"}]}
    assert v1alpha2.NodeResourceTopology.model_validate(doc).to_dict() == doc


def test_required_fields_are_written_when_zero() -> None:
    assert v1alpha1.NodeResourceTopology(metadata=ObjectMeta(name="n")).to_dict() == {
        "apiVersion": "topology.node.k8s.io/v1alpha1", "kind": "NodeResourceTopology",
        "metadata": {"name": "n"}, "topologyPolicies": [], "zones": []}
    assert v1alpha1.ResourceInfo().to_dict() == {
        "name": "", "capacity": "0", "allocatable": "0", "available": "0"}


def test_bad_quantity_is_rejected() -> None:
    with pytest.raises(ValueError, match="resource quantity"):
        v1alpha1.ResourceInfo.model_validate({"name": "cpu", "capacity": "lots"})


def test_v1alpha2_is_the_storage_version() -> None:
    assert (v1alpha1.NodeResourceTopology.served, v1alpha1.NodeResourceTopology.storage) == (
        True, False)
    assert (v1alpha2.NodeResourceTopology.served, v1alpha2.NodeResourceTopology.storage) == (
        True, True)
    for kind in (v1alpha1.NodeResourceTopology, v1alpha2.NodeResourceTopology):
        assert kind.short_names == ("node-res-topo",) and not kind.namespaced
        assert kind.crd_name() == "noderesourcetopologies.topology.node.k8s.io"
        assert not kind.status_subresource
