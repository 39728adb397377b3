"""NodeSLO loads from and dumps back to the JSON koord-manager writes."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from api.base import ApiModel
from api.slo.v1alpha1 import (
    CPUQOSCfg,
    ExtensionsMap,
    IOCfg,
    NetworkQOSCfg,
    NodeSLO,
    NodeSLOSpec,
    ResourceQOS,
    ResourceQOSPolicies,
    ResourceQOSStrategy,
    ResourceThresholdStrategy,
    SystemStrategy,
)

_CLASS = """{"cpuQOS":{"enable":true,"groupIdentity":2,"schedIdle":0,"coreExpeller":true},
 "memoryQOS":{"enable":false,"minLimitPercent":0,"lowLimitPercent":0,"throttlingPercent":0,
   "wmarkRatio":95,"wmarkScalePermill":20,"wmarkMinAdj":-25,"priorityEnable":0,"priority":0,
   "oomKillGroup":0,"pageCacheEnable":false,"pageCacheLimitPercent":80,
   "pageCacheLimitSize":1073741824,"pageCacheReclaimSync":true},
 "blkioQOS":{"enable":false},
 "resctrlQOS":{"enable":true,"catRangeStartPercent":0,"catRangeEndPercent":100,"mbaPercent":100},
 "networkQOS":{"enable":true,"ingressRequest":"50M","ingressLimit":100,"egressRequest":0,
   "egressLimit":"80%"}}"""

# A NodeSLO as koord-manager renders it, keys in upstream's declaration order.
NODE_SLO = """
{"apiVersion":"slo.koordinator.sh/v1alpha1","kind":"NodeSLO",
 "metadata":{"name":"node-1","uid":"0b1c2d3e-0000-4000-8000-000000000002",
   "resourceVersion":"48214","generation":3,"creationTimestamp":"2024-03-05T08:00:00Z"},
 "spec":{
  "resourceUsedThresholdWithBE":{"enable":true,"cpuSuppressThresholdPercent":65,
    "cpuSuppressMinPercent":10,"cpuSuppressPolicy":"cpuset","memoryEvictThresholdPercent":70,
    "memoryEvictLowerPercent":68,"memoryAllocatableEvictThresholdPercent":110,
    "memoryAllocatableEvictLowerPercent":100,"cpuEvictBESatisfactionUpperPercent":60,
    "cpuEvictBESatisfactionLowerPercent":40,"cpuEvictBEUsageThresholdPercent":90,
    "cpuEvictTimeWindowSeconds":300,"cpuEvictThresholdPercent":80,"cpuEvictLowerPercent":78,
    "cpuAllocatableEvictThresholdPercent":110,"cpuAllocatableEvictLowerPercent":100,
    "cpuEvictPolicy":"evictByRealLimit","evictEnabledPriorityThreshold":5999,
    "allocatableEvictPriorityThreshold":7999},
  "resourceQOSStrategy":{
    "policies":{"cpuPolicy":"coreSched","netQOSPolicy":"terway-qos"},
    "lsrClass":""" + _CLASS + """,
    "lsClass":""" + _CLASS + """,
    "beClass":{"cpuQOS":{"enable":true,"groupIdentity":-1},
      "blkioQOS":{"enable":true,"blocks":[
        {"name":"ackdistro-pool","type":"volumegroup","ioCfg":{"ioWeightPercent":60}},
        {"name":"/dev/sdb","type":"device","ioCfg":{"readIOPS":20480,"writeIOPS":10240,
          "readBPS":102400000,"writeBPS":204800004}}]},
      "resctrlQOS":{"enable":true,"catRangeEndPercent":30}},
    "systemClass":{"cpuQOS":{"enable":false,"groupIdentity":0}},
    "cgroupRoot":{"blkioQOS":{"enable":true,"blocks":[
      {"name":"ackdistro-pool","type":"volumegroup","ioCfg":{"readLatency":3000,
        "writeLatency":3000,"readLatencyPercent":95,"writeLatencyPercent":95,
        "enableUserModel":true,"modelReadBPS":1000,"modelWriteBPS":1000,
        "modelReadSeqIOPS":100,"modelWriteSeqIOPS":100,"modelReadRandIOPS":50,
        "modelWriteRandIOPS":50}}]}}},
  "cpuBurstStrategy":{"policy":"auto","cpuBurstPercent":1000,"cfsQuotaBurstPercent":300,
    "cfsQuotaBurstPeriodSeconds":-1,"sharePoolThresholdPercent":50},
  "systemStrategy":{"minFreeKbytesFactor":100,"watermarkScaleFactor":150,
    "memcgReapBackGround":0,"schedGroupIdentityEnabled":1,"schedIdleSaverWmark":1000000,
    "schedFeatures":{"ID_ABSOLUTE_EXPEL":true,"ID_LOAD_BALANCE":false},
    "pageCacheLimitEnabled":0,"totalNetworkBandwidth":"10G"},
  "extensions":{"Object":{"gpu-qos":{"enable":true,"ratio":0.5}}},
  "hostApplications":[{"name":"nginx","priority":"koord-prod","qos":"LS",
    "cgroupPath":{"base":"CgroupRoot","parentDir":"host-latency-sensitive/",
      "relativePath":"nginx/"},"strategy":{}}]},
 "status":{}}
"""


def _compact(text: str) -> str:
    return json.dumps(json.loads(text), separators=(",", ":"))


def test_realistic_node_slo_round_trips_byte_for_byte() -> None:
    obj = NodeSLO.model_validate_json(NODE_SLO)
    assert obj.to_json() == _compact(NODE_SLO)


def test_node_slo_fields_are_typed() -> None:
    spec = NodeSLO.model_validate_json(NODE_SLO).spec
    strategy = spec.resource_qos_strategy
    assert strategy is not None and strategy.be_class is not None
    assert strategy.be_class.cpu_qos == CPUQOSCfg(enable=True, group_identity=-1)
    blocks = strategy.be_class.blkio_qos.blocks if strategy.be_class.blkio_qos else None
    assert blocks is not None and blocks[1].io_cfg.read_iops == 20480
    assert strategy.for_qos_class("LSE") is strategy.lsr_class
    assert strategy.for_qos_class("SYSTEM") is strategy.system_class
    assert spec.system_strategy is not None
    assert spec.system_strategy.sched_features == {"ID_ABSOLUTE_EXPEL": True,
                                                   "ID_LOAD_BALANCE": False}
    assert spec.extensions is not None and spec.extensions.get("gpu-qos")["ratio"] == 0.5
    assert spec.host_applications and spec.host_applications[0].cgroup_path is not None


@pytest.mark.parametrize(("model", "json_name"), [
    (ResourceQOSStrategy(lsr_class=ResourceQOS()), "lsrClass"),
    (ResourceQOSStrategy(ls_class=ResourceQOS()), "lsClass"),
    (ResourceQOSStrategy(be_class=ResourceQOS()), "beClass"),
    (ResourceQOSStrategy(system_class=ResourceQOS()), "systemClass"),
    (ResourceQOSStrategy(cgroup_root=ResourceQOS()), "cgroupRoot"),
    (ResourceQOS(cpu_qos=CPUQOSCfg()), "cpuQOS"),
    (ResourceQOS(network_qos=NetworkQOSCfg()), "networkQOS"),
    (ResourceQOSPolicies(net_qos_policy="tc"), "netQOSPolicy"),
    (IOCfg(read_iops=1), "readIOPS"),
    (IOCfg(write_bps=1), "writeBPS"),
    (IOCfg(model_read_rand_iops=1), "modelReadRandIOPS"),
    (ResourceThresholdStrategy(cpu_evict_be_satisfaction_upper_percent=1),
     "cpuEvictBESatisfactionUpperPercent"),
    (SystemStrategy(memcg_reap_back_ground=1), "memcgReapBackGround"),
    (NodeSLOSpec(resource_used_threshold_with_be=ResourceThresholdStrategy()),
     "resourceUsedThresholdWithBE"),
    (NodeSLOSpec(resource_qos_strategy=ResourceQOSStrategy()), "resourceQOSStrategy"),
])
def test_irregular_json_names(model: ApiModel, json_name: str) -> None:
    dumped = model.to_dict()
    assert json_name in dumped
    # ... and the same name loads back.
    assert type(model).model_validate(dumped) == model


def test_cfg_types_write_enable_first_then_the_flattened_strategy() -> None:
    cfg = CPUQOSCfg.model_validate({"groupIdentity": 2, "enable": True})
    assert cfg.to_json() == '{"enable":true,"groupIdentity":2}'


def test_total_network_bandwidth_is_always_written() -> None:
    assert SystemStrategy().to_dict() == {"totalNetworkBandwidth": "0"}
    assert SystemStrategy.model_validate({"totalNetworkBandwidth": 1000}).to_dict() == {
        "totalNetworkBandwidth": "1000"}


@pytest.mark.parametrize("bad", [
    {"resourceUsedThresholdWithBE": {"cpuSuppressThresholdPercent": 101}},
    {"resourceUsedThresholdWithBE": {"memoryAllocatableEvictLowerPercent": -1}},
    {"cpuBurstStrategy": {"cpuBurstPercent": 10001}},
    {"resourceQOSStrategy": {"beClass": {"memoryQOS": {"wmarkMinAdj": -26}}}},
    {"resourceQOSStrategy": {"beClass": {"memoryQOS": {"wmarkScalePermill": 0}}}},
    {"resourceQOSStrategy": {"cgroupRoot": {"blkioQOS": {"blocks": [
        {"ioCfg": {"ioWeightPercent": 0}}]}}}},
    {"resourceQOSStrategy": {"lsClass": {"resctrlQOS": {"mbaPercent": 120}}}},
    {"systemStrategy": {"totalNetworkBandwidth": "ten gigabit"}},
    {"extensions": {"Object": [1, 2]}},
])
def test_values_the_crd_rejects_are_rejected(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        NodeSLOSpec.model_validate(bad)


def test_values_only_the_webhook_rejects_still_load() -> None:
    # The CRD has no range for these; upstream's ConfigMap webhook does.
    spec = NodeSLOSpec.model_validate({
        "resourceQOSStrategy": {"lsClass": {"cpuQOS": {"groupIdentity": 7}}},
        "cpuBurstStrategy": {"cfsQuotaBurstPercent": 50},
        "resourceUsedThresholdWithBE": {"allocatableEvictPriorityThreshold": 9000},
    })
    assert spec.cpu_burst_strategy is not None
    assert spec.cpu_burst_strategy.cfs_quota_burst_percent == 50


def test_extensions_map_wire_form() -> None:
    ext = ExtensionsMap.of({"plugin-a": {"enable": True}})
    assert ext.to_json() == '{"Object":{"plugin-a":{"enable":true}}}'
    assert ExtensionsMap.model_validate_json(ext.to_json()) == ext
    ext.object["plugin-b"] = {"level": 2}
    assert ext.to_dict() == {"Object": {"plugin-a": {"enable": True}, "plugin-b": {"level": 2}}}
    assert ExtensionsMap().get("missing", "default") == "default"
    spec = NodeSLOSpec(extensions=ext)
    assert spec.to_dict()["extensions"]["Object"]["plugin-b"] == {"level": 2}
