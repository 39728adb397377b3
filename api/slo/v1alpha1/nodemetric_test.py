"""NodeMetric loads from and dumps back to the JSON koordlet and koord-manager write."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from api.loader import ObjectLoadError, load_object
from api.slo.v1alpha1 import (
    AggregationType,
    MemoryCollectPolicy,
    NodeMetric,
    NodeMetricCollectPolicy,
    NodeMetricSpec,
    NUMAUsage,
)

# A NodeMetric as the API server returns it, keys in upstream's declaration order.
NODE_METRIC = """
{"apiVersion":"slo.koordinator.sh/v1alpha1","kind":"NodeMetric",
 "metadata":{"name":"node-1","uid":"0b1c2d3e-0000-4000-8000-000000000001",
   "resourceVersion":"48213","generation":2,"creationTimestamp":"2024-03-05T08:00:00Z"},
 "spec":{"metricCollectPolicy":{"aggregateDurationSeconds":300,"reportIntervalSeconds":60,
   "nodeAggregatePolicy":{"durations":["5m0s","10m0s","30m0s"]},
   "nodeMemoryCollectPolicy":"usageWithoutPageCache"}},
 "status":{"updateTime":"2024-03-05T08:10:00Z",
  "nodeMetric":{
   "nodeUsage":{"resources":{"cpu":"7300m","memory":"31Gi"},
     "devices":[{"type":"gpu","labels":{"type":"A100"},"id":"GPU-8fa3c1d2","minor":0,
       "moduleID":1,"health":true,
       "resources":{"koordinator.sh/gpu-core":"30","koordinator.sh/gpu-memory":"12Gi",
         "koordinator.sh/gpu-memory-ratio":"30"},
       "topology":{"socketID":0,"nodeID":0,"pcieID":"pci0000:3a","busID":"0000:3b:00.0"}}]},
   "aggregatedNodeUsages":[
     {"usage":{"avg":{"resources":{"cpu":"6","memory":"30Gi"}},
               "p50":{"resources":{"cpu":"5800m","memory":"30Gi"}},
               "p90":{"resources":{"cpu":"7","memory":"31Gi"}}},
      "duration":"5m0s"},
     {"usage":{"p95":{"resources":{"cpu":"7500m","memory":"31Gi"}},
               "p99":{"resources":{"cpu":"7900m","memory":"31Gi"}}},
      "duration":"30m0s"}],
   "systemUsage":{"resources":{"cpu":"1200m","memory":"3Gi"}},
   "aggregatedSystemUsages":[
     {"usage":{"p90":{"resources":{"cpu":"1300m","memory":"3Gi"}}},"duration":"10m0s"}],
   "numaUsages":[
     {"numaNodeID":0,"nodeUsage":{"resources":{"cpu":"4","memory":"16Gi"}},
      "systemUsage":{"resources":{"cpu":"600m","memory":"1536Mi"}}},
     {"numaNodeID":1,"nodeUsage":{"resources":{"cpu":"3300m","memory":"15Gi"}}}]},
  "podsMetric":[
    {"name":"web-0","namespace":"default","podUsage":{"resources":{"cpu":"2","memory":"8Gi"}},
     "priority":"koord-prod","qos":"LS"},
    {"name":"spark-exec-1","namespace":"batch",
     "podUsage":{"resources":{"kubernetes.io/batch-cpu":"3000","kubernetes.io/batch-memory":"12Gi"}},
     "priority":"koord-batch","qos":"BE",
     "extensions":{"Object":{"yarn":{"containerID":"container_1_0001"}}}}],
  "hostApplicationMetric":[
    {"name":"nginx","usage":{"resources":{"cpu":"500m","memory":"1Gi"}},
     "priority":"koord-prod","qos":"LS"}],
  "prodReclaimableMetric":{"resource":{"resources":{"cpu":"2","memory":"4Gi"}}},
  "prodPeakMetric":{"resource":{"resources":{"cpu":"5","memory":"24Gi"}}}}}
"""


def _compact(text: str) -> str:
    return json.dumps(json.loads(text), separators=(",", ":"))


def test_realistic_node_metric_round_trips_byte_for_byte() -> None:
    obj = NodeMetric.model_validate_json(NODE_METRIC)
    assert obj.to_json() == _compact(NODE_METRIC)


def test_node_metric_fields_are_typed() -> None:
    obj = NodeMetric.model_validate_json(NODE_METRIC)
    assert obj.spec is not None and obj.status is not None
    policy = obj.spec.metric_collect_policy
    assert policy is not None
    assert policy.node_memory_collect_policy is MemoryCollectPolicy.USAGE_WITHOUT_PAGE_CACHE
    info = obj.status.node_metric
    assert info is not None and info.node_usage is not None
    devices = info.node_usage.devices or []
    assert devices[0].uuid == "GPU-8fa3c1d2" and devices[0].health is True
    assert info.aggregated_node_usages is not None
    assert AggregationType.P90 in (info.aggregated_node_usages[0].usage or {})
    assert [n.numa_node_id for n in info.numa_usages or []] == [0, 1]
    pods = obj.status.pods_metric or []
    assert pods[1].extensions is not None
    assert pods[1].extensions.get("yarn") == {"containerID": "container_1_0001"}


def test_irregular_json_names() -> None:
    usage = NUMAUsage(numa_node_id=1)
    assert usage.to_dict() == {"numaNodeID": 1}
    # numaNodeID is always written, even when zero.
    assert NUMAUsage().to_dict() == {"numaNodeID": 0}
    spec = NodeMetricSpec(metric_collect_policy=NodeMetricCollectPolicy(
        aggregate_duration_seconds=300,
        node_memory_collect_policy=MemoryCollectPolicy.USAGE_WITH_HOT_PAGE_CACHE))
    assert spec.to_dict() == {"metricCollectPolicy": {
        "aggregateDurationSeconds": 300, "nodeMemoryCollectPolicy": "usageWithHotPageCache"}}


def test_type_meta_is_filled_and_empty_object_stays_small() -> None:
    obj = NodeMetric.model_validate({"metadata": {"name": "node-2"}})
    assert obj.to_dict() == {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric",
                             "metadata": {"name": "node-2"}}
    assert NodeMetric.crd_name() == "nodemetrics.slo.koordinator.sh"
    assert not NodeMetric.namespaced and NodeMetric.status_subresource


def test_aggregated_usage_duration_is_always_written() -> None:
    obj = NodeMetric.model_validate(
        {"status": {"nodeMetric": {"aggregatedNodeUsages": [{"usage": {}}]}}})
    assert obj.to_dict()["status"]["nodeMetric"]["aggregatedNodeUsages"] == [
        {"usage": {}, "duration": "0s"}]


def _with_usage(node_usage: Mapping[str, object],
                pod_usage: Mapping[str, object]) -> dict[str, Any]:
    obj = json.loads(NODE_METRIC)
    obj["status"]["nodeMetric"]["nodeUsage"]["resources"] = node_usage
    obj["status"]["podsMetric"][0]["podUsage"]["resources"] = pod_usage
    return obj


@pytest.mark.parametrize(("usage", "reason"), [
    ({"cpu": "1e30"}, "cpu quantity '1e30' is beyond Kubernetes' int64 range"),
    ({"cpu": 1e30}, "beyond Kubernetes' int64 range"),
    ({"memory": "9223372036854775808"}, "memory quantity '9223372036854775808' is beyond"),
    ({"cpu": "-2"}, "cpu quantity '-2' is negative"),
    ({"cpu": "NaN"}, "'NaN' is not a resource quantity"),
    ({"cpu": float("inf")}, "not a resource quantity"),
])
def test_absurd_usage_is_refused_naming_the_object_and_field(usage, reason) -> None:
    ok = {"cpu": "2"}
    for node, pod, path in ((usage, ok, "status.nodeMetric.nodeUsage.resources"),
                            (ok, usage, "status.podsMetric[0].podUsage.resources")):
        with pytest.raises(ObjectLoadError) as err:
            load_object(_with_usage(node, pod))
        message = str(err.value)
        assert "invalid NodeMetric node-1" in message
        assert path in message and reason in message


def test_the_largest_int64_usage_is_accepted() -> None:
    # 2^63-1 milli-cores (Kubernetes' MaxMilliValue) and 2^63-1 bytes still fit Go's int64.
    m = load_object(_with_usage({"cpu": "9223372036854775807m", "memory": "9223372036854775807"},
                                {"cpu": "0"}))
    assert isinstance(m, NodeMetric)
