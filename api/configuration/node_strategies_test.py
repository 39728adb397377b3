"""The NodeSLO strategy keys, host applications, CPU normalization and amplification:
merging onto defaults and the cluster strategy, and what a node gets."""

from __future__ import annotations

from typing import Any

import pytest

from api.configuration.cpu_normalization import CPUNormalizationCfg
from api.configuration.host_application import HostApplicationCfg
from api.configuration.node_strategies import (
    CPUBurstCfg,
    ResourceQOSCfg,
    ResourceThresholdCfg,
    SystemCfg,
)
from api.configuration.resource_amplification import ResourceAmplificationCfg
from api.errors import MalformedValueError


def _node(labels: dict[str, str] | None = None,
          annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "node-1", "labels": labels or {},
                         "annotations": annotations or {}}}


POOL_A = {"matchLabels": {"pool": "a"}}
POOL_B = {"matchLabels": {"pool": "b"}}


def test_threshold_cluster_strategy_merges_onto_defaults_and_nodes_onto_cluster() -> None:
    cfg = ResourceThresholdCfg.model_validate({
        "clusterStrategy": {"enable": True, "cpuSuppressThresholdPercent": 60},
        "nodeStrategies": [{"name": "a", "nodeSelector": POOL_A,
                            "cpuEvictBEUsageThresholdPercent": 80}]}, strict=True).resolve()
    assert cfg.to_dict() == {
        "clusterStrategy": {"enable": True, "cpuSuppressThresholdPercent": 60,
                            "cpuSuppressPolicy": "cpuset", "memoryEvictThresholdPercent": 70,
                            "cpuEvictPolicy": "evictByRealLimit"},
        "nodeStrategies": [{"name": "a", "nodeSelector": POOL_A, "enable": True,
                            "cpuSuppressThresholdPercent": 60, "cpuSuppressPolicy": "cpuset",
                            "memoryEvictThresholdPercent": 70,
                            "cpuEvictBEUsageThresholdPercent": 80,
                            "cpuEvictPolicy": "evictByRealLimit"}]}
    assert cfg.for_node(_node({"pool": "a"})).cpu_evict_be_usage_threshold_percent == 80
    assert cfg.for_node(_node({"pool": "b"})).cpu_evict_be_usage_threshold_percent is None


def test_resource_qos_default_is_empty_and_node_entries_merge_deeply() -> None:
    assert ResourceQOSCfg.default().to_dict() == {"clusterStrategy": {}}
    cfg = ResourceQOSCfg.model_validate({
        "clusterStrategy": {"beClass": {"memoryQOS": {"enable": True, "wmarkRatio": 95,
                                                      "wmarkMinAdj": 50}}},
        "nodeStrategies": [{"name": "alios", "nodeSelector": POOL_A,
                            "beClass": {"memoryQOS": {"wmarkRatio": 90}}}]},
        strict=True).resolve()
    be = cfg.for_node(_node({"pool": "a"})).be_class
    assert be is not None and be.memory_qos is not None
    assert (be.memory_qos.enable, be.memory_qos.wmark_ratio, be.memory_qos.wmark_min_adj) == (
        True, 90, 50)


def test_cpu_burst_defaults_and_node_override() -> None:
    cfg = CPUBurstCfg.model_validate({
        "clusterStrategy": {"policy": "auto"},
        "nodeStrategies": [{"name": "a", "nodeSelector": POOL_A, "policy": "cfsQuotaBurstOnly",
                            "cfsQuotaBurstPercent": 400}]}, strict=True).resolve()
    cluster = cfg.for_node(_node({"pool": "z"}))
    assert cluster.to_dict() == {"policy": "auto", "cpuBurstPercent": 1000,
                                 "cfsQuotaBurstPercent": 300, "cfsQuotaBurstPeriodSeconds": -1,
                                 "sharePoolThresholdPercent": 50}
    node = cfg.for_node(_node({"pool": "a"}))
    assert (node.policy, node.cfs_quota_burst_percent, node.cpu_burst_percent) == (
        "cfsQuotaBurstOnly", 400, 1000)


def test_system_bandwidth_quirk() -> None:
    cfg = SystemCfg.model_validate({
        "clusterStrategy": {"minFreeKbytesFactor": 100, "totalNetworkBandwidth": "10G"},
        "nodeStrategies": [
            # Sets a strategy field but not the bandwidth: carries "0", which wins.
            {"name": "a", "nodeSelector": POOL_A, "watermarkScaleFactor": 150},
            # Sets no strategy field: equals the cluster strategy.
            {"name": "b", "nodeSelector": POOL_B}]}, strict=True).resolve()
    a = cfg.for_node(_node({"pool": "a"}))
    assert (a.total_network_bandwidth, a.min_free_kbytes_factor,
            a.watermark_scale_factor) == ("0", 100, 150)
    b = cfg.for_node(_node({"pool": "b"}))
    assert b.to_dict() == {"minFreeKbytesFactor": 100, "totalNetworkBandwidth": "10G"}
    assert cfg.for_node(_node()).total_network_bandwidth == "10G"


def test_system_bandwidth_annotation_overrides() -> None:
    cfg = SystemCfg.model_validate({
        "clusterStrategy": {"totalNetworkBandwidth": "10G"},
        "nodeStrategies": [{"name": "a", "nodeSelector": POOL_A, "minFreeKbytesFactor": 90}]},
        strict=True).resolve()
    annotation = {"node.koordinator.sh/network-bandwidth": "25G"}
    assert cfg.for_node(_node(annotations=annotation)).total_network_bandwidth == "25G"
    on_a = cfg.for_node(_node({"pool": "a"}, annotation))
    assert (on_a.total_network_bandwidth, on_a.min_free_kbytes_factor) == ("25G", 90)
    with pytest.raises(MalformedValueError) as caught:
        cfg.for_node(_node(annotations={"node.koordinator.sh/network-bandwidth": "fast"}))
    assert caught.value.key == "node.koordinator.sh/network-bandwidth"
    assert caught.value.obj == "node node-1"


def test_host_applications_node_list_replaces_cluster_list() -> None:
    nginx = {"name": "nginx", "priority": "koord-prod", "qos": "LS",
             "cgroupPath": {"base": "CgroupRoot", "parentDir": "host-latency-sensitive/",
                            "relativePath": "nginx/"}}
    agent = {"name": "agent", "qos": "BE"}
    cfg = HostApplicationCfg.model_validate({
        "applications": [nginx],
        "nodeConfigs": [{"name": "pool", "nodeSelector": POOL_A, "applications": [agent]},
                        {"name": "empty", "nodeSelector": POOL_B}]}, strict=True)
    assert [a.to_dict() for a in cfg.for_node(_node())] == [nginx]
    assert [a.to_dict() for a in cfg.for_node(_node({"pool": "a"}))] == [agent]
    assert cfg.for_node(_node({"pool": "b"})) == []
    assert HostApplicationCfg().for_node(_node()) == []


def test_cpu_normalization_defaults_merge_and_label() -> None:
    assert CPUNormalizationCfg.default().to_dict() == {"enable": False, "ratioModel": {}}
    cfg = CPUNormalizationCfg.model_validate({
        "enable": True, "ratioModel": {"Xeon 8369": {"baseRatio": 1.3}},
        "nodeConfigs": [{"name": "off", "nodeSelector": POOL_A, "enable": False}]},
        strict=True).resolve()
    assert cfg.for_node(_node()).enable is True
    on_a = cfg.for_node(_node({"pool": "a"}))
    assert on_a.enable is False and on_a.to_dict()["ratioModel"] == {
        "Xeon 8369": {"baseRatio": 1.3}}
    label = "node.koordinator.sh/cpu-normalization-enabled"
    assert cfg.for_node(_node({"pool": "a", label: "true"})).enable is True
    assert cfg.for_node(_node({label: "0"})).enable is False
    with pytest.raises(MalformedValueError) as caught:
        cfg.for_node(_node({label: "yes"}))
    assert caught.value.key == label


def test_resource_amplification_defaults_and_node_merge() -> None:
    assert ResourceAmplificationCfg.default().to_dict() == {"enable": False}
    cfg = ResourceAmplificationCfg.model_validate({
        "enable": True, "resourceAmplificationRatio": {"cpu": 1.5, "memory": 1.1},
        "nodeConfigs": [{"name": "a", "nodeSelector": POOL_A,
                         "resourceAmplificationRatio": {"cpu": 2}}]}, strict=True).resolve()
    assert cfg.for_node(_node({"pool": "a"})).resource_amplification_ratio == {
        "cpu": 2.0, "memory": 1.1}
    assert cfg.for_node(_node()).resource_amplification_ratio == {"cpu": 1.5, "memory": 1.1}
