"""ClusterNetworkTopology: round trip and the fields upstream always writes."""

from __future__ import annotations

from api.scheduling.v1alpha1.cluster_network_topology import (
    ClusterNetworkTopology,
    ClusterNetworkTopologyDetailStatus,
    TopologyLayer,
)

TOPOLOGY = {
    "apiVersion": "scheduling.koordinator.sh/v1alpha1",
    "kind": "ClusterNetworkTopology",
    "metadata": {"name": "default"},
    "spec": {"networkTopologySpec": [
        {"topologyLayer": "SpineLayer", "parentTopologyLayer": "ClusterTopologyLayer",
         "labelKey": ["network.topology.koordinator.sh/spine"]},
        {"topologyLayer": "BlockLayer", "parentTopologyLayer": "SpineLayer",
         "labelKey": ["network.topology.koordinator.sh/block"]},
    ]},
    "status": {"detailStatus": [
        {"topologyInfo": {"topologyLayer": "ClusterTopologyLayer", "topologyName": ""},
         "childTopologyLayer": "SpineLayer", "childTopologyNames": ["s1"], "nodeNum": 4},
        {"topologyInfo": {"topologyLayer": "SpineLayer", "topologyName": "s1"},
         "parentTopologyInfo": {"topologyLayer": "ClusterTopologyLayer", "topologyName": ""},
         "nodeNum": 4},
    ]},
}


def test_round_trips() -> None:
    topology = ClusterNetworkTopology.model_validate(TOPOLOGY)
    assert topology.to_dict() == TOPOLOGY
    assert topology.status is not None and topology.status.detail_status is not None
    assert topology.status.detail_status[0].topology_info.topology_layer == TopologyLayer.CLUSTER


def test_required_fields_are_written_when_zero() -> None:
    assert ClusterNetworkTopology().to_dict()["spec"] == {"networkTopologySpec": []}
    assert ClusterNetworkTopologyDetailStatus().to_dict() == {
        "topologyInfo": {"topologyLayer": "", "topologyName": ""}, "nodeNum": 0}
