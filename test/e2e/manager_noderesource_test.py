"""e2e: the noderesource controller against the embedded API server.

Runs ``manager.slo_controller.noderesource`` in process, as koord-manager's ServiceAccount
under the chart's RBAC, with the real slo-controller-config cache, informers and status writes,
and checks the stored nodes' ``status.allocatable`` and ``capacity`` against the same table the
formula test uses (every calculate policy, thresholds, reservations, degrade, nodeConfigs, mid),
then the write rules, then the CPU normalization and resource amplification annotations (the
metadata patch path) and the GPU/RDMA resources and labels from the Device CR, and batch
resources per NUMA zone on the NodeResourceTopology.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from api.extension.resource import BATCH_CPU, BATCH_MEMORY, MID_CPU, MID_MEMORY
from manager.slo_controller.config import SLOConfigCache
from manager.slo_controller.noderesource.cases import CASES, Case
from manager.slo_controller.noderesource.cases_fixtures import metric_status, node_obj, pod_objs
from manager.slo_controller.noderesource.controller import (
    DEVICES,
    NODE_METRICS,
    NODE_RESOURCE_TOPOLOGIES,
    NodeResourceController,
)
from pkg.client.informers import SharedInformerFactory
from pkg.client.resources import CONFIGMAPS, EVENTS, NODES, PODS
from pkg.client.rest import Client
from pkg.events import EventBroadcaster
from pkg.util.podresources import quantity_int
from test.e2e.cluster import install_chart, service_account_kubeconfig, wait_for
from test.e2e.conftest import rbac_server, webhook_configurations

NS = "koordinator-system"
CM = "slo-controller-config"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory
        ) -> Iterator[tuple[Client, NodeResourceController]]:
    """The admin's client (the test writes as the user) and the controller, running as
    koord-manager's ServiceAccount under the installed chart's RBAC."""
    with rbac_server() as srv:
        client = Client.from_kubeconfig(srv.kubeconfig, qps=-1)  # no client-side throttling
        install_chart(client, skip=webhook_configurations)
        cm = client.get(CONFIGMAPS, CM, NS)  # the chart's, holding only the first case's
        cm["data"] = {"colocation-config": json.dumps(CASES[0].config)}
        client.update(CONFIGMAPS, cm, NS)
        manager = Client.from_kubeconfig(service_account_kubeconfig(
            srv.kubeconfig, "koord-manager", tmp_path_factory.mktemp("kubeconfigs")), qps=-1)
        factory = SharedInformerFactory(manager)
        cache = SLOConfigCache(factory)
        events = EventBroadcaster(manager)
        ctrl = NodeResourceController(manager, factory, cache, workers=2,
                                      recorder=events.new_recorder("slo-controller"))
        factory.start()
        assert ctrl.start(sync_timeout=30)
        try:
            yield client, ctrl
        finally:
            ctrl.stop()
            events.shutdown()
            factory.shutdown()
            manager.close()
            client.close()


def set_config(client: Client, config: dict[str, Any]) -> None:
    cm = client.get(CONFIGMAPS, CM, NS)
    cm["data"] = {"colocation-config": json.dumps(config)}
    client.update(CONFIGMAPS, cm, NS)


def create_node(client: Client, case: Case, name: str, preset: bool) -> None:
    # Created with its status in one request (nodes keep status on create): a separate
    # status update would race with the controller reacting to the new node.
    node = node_obj(case, name)
    if preset:  # as if written earlier: the controller has to take them away
        for key in ("capacity", "allocatable"):
            node["status"][key].update({BATCH_CPU: "1000", BATCH_MEMORY: "1G",
                                        MID_CPU: "1000", MID_MEMORY: "1G"})
    client.create(NODES, node)
    for pod in pod_objs(case, name):
        phase = pod.pop("status")["phase"]
        created = client.create(PODS, pod, "default")
        created["status"] = {"phase": phase}
        client.update_status(PODS, created, "default")
    metric = client.create(NODE_METRICS, {"apiVersion": "slo.koordinator.sh/v1alpha1",
                                          "kind": "NodeMetric", "metadata": {"name": name}})
    metric["status"] = metric_status(case, name, time.time())
    client.update_status(NODE_METRICS, metric)


def allocatable(client: Client, name: str) -> dict[str, Any]:
    return client.get(NODES, name)["status"].get("allocatable") or {}


def matches(client: Client, name: str, expect: dict[str, int | None]) -> bool:
    status = client.get(NODES, name)["status"]
    for key in ("allocatable", "capacity"):
        got = status.get(key) or {}
        for res, want in expect.items():
            if want is None:
                if res in got:
                    return False
            elif res not in got or quantity_int(res, got[res]) != want:
                return False
    return True


@pytest.mark.parametrize("index", range(len(CASES)), ids=[c.name for c in CASES])
def test_table(env: tuple[Client, NodeResourceController], index: int) -> None:
    client, _ = env
    case = CASES[index]
    name = f"case-{index}"
    set_config(client, case.config)
    create_node(client, case, name, preset=any(v is None for v in case.expect.values()))
    wait_for(lambda: matches(client, name, case.expect), timeout=15,
             what=f"{name} to get {case.expect}, has {allocatable(client, name)}")


def test_writes_only_past_diff_threshold(env: tuple[Client, NodeResourceController]) -> None:
    client, _ = env
    case = CASES[0]
    set_config(client, case.config)
    create_node(client, case, "diff", preset=False)
    wait_for(lambda: matches(client, "diff", case.expect), what="first write")
    # system usage 7 → 8.5 cores: batch-cpu would be 23500, a 6% change, under the 10% threshold
    metric = client.get(NODE_METRICS, "diff")
    metric["status"]["nodeMetric"]["systemUsage"]["resources"]["cpu"] = "8500m"
    client.update_status(NODE_METRICS, metric)
    time.sleep(1.5)
    assert quantity_int(BATCH_CPU, allocatable(client, "diff")[BATCH_CPU]) == 25000
    # 7 → 12 cores: 20000, a 20% change, written
    metric = client.get(NODE_METRICS, "diff")
    metric["status"]["nodeMetric"]["systemUsage"]["resources"]["cpu"] = "12"
    client.update_status(NODE_METRICS, metric)
    wait_for(lambda: matches(client, "diff", {BATCH_CPU: 20000}), what="batch-cpu 20000")


def test_malformed_config_keeps_last_good(env: tuple[Client, NodeResourceController]) -> None:
    client, _ = env
    case = CASES[0]
    set_config(client, case.config)
    create_node(client, case, "bad-cm", preset=False)
    wait_for(lambda: matches(client, "bad-cm", case.expect), what="first write")
    cm = client.get(CONFIGMAPS, CM, NS)
    cm["data"] = {"colocation-config": '{"enable": true, "cpuReclaimThresholdPercent": "x"}'}
    client.update(CONFIGMAPS, cm, NS)
    time.sleep(1.0)
    assert matches(client, "bad-cm", case.expect)
    # a good change still takes effect afterwards (every node re-enqueued)
    set_config(client, {**case.config, "enable": False})
    wait_for(lambda: matches(client, "bad-cm", {BATCH_CPU: None, BATCH_MEMORY: None}),
             what="batch removed when colocation is disabled")


def invalid_metric_events(client: Client, name: str) -> list[dict[str, Any]]:
    return [e for e in client.list(EVENTS, namespace="default")["items"]
            if e.get("reason") == "InvalidNodeMetric"
            and e["involvedObject"].get("kind") == "NodeMetric"
            and e["involvedObject"].get("name") == name]


@pytest.mark.parametrize("cpu", ["1e30", "-1e30"])
def test_absurd_usage_degrades_the_node_with_an_event(env: tuple[Client, NodeResourceController],
                                                       cpu: str) -> None:
    # The API server accepts any quantity, as kube-apiserver does; the controller must not turn
    # systemUsage cpu 1e30 (batch-cpu 0) or -1e30 (batch-cpu 1e30 cores) into batch resources.
    client, _ = env
    case = CASES[0]
    name = f"absurd{cpu.replace('-', 'minus-').replace('.', '')}".lower()
    set_config(client, case.config)
    create_node(client, case, name, preset=False)
    wait_for(lambda: matches(client, name, case.expect), what="first write")
    metric = client.get(NODE_METRICS, name)
    metric["status"]["nodeMetric"]["systemUsage"]["resources"]["cpu"] = cpu
    client.update_status(NODE_METRICS, metric)
    wait_for(lambda: matches(client, name, {BATCH_CPU: None, BATCH_MEMORY: None}),
             timeout=30, what="batch resources removed (degraded)")
    wait_for(lambda: invalid_metric_events(client, name), timeout=30,
             what="a Warning event on the NodeMetric")
    (event,) = invalid_metric_events(client, name)
    assert event["type"] == "Warning"
    assert (f"NodeMetric {name} is not used" in event["message"]
            and f"status.nodeMetric.systemUsage.resources: cpu quantity '{cpu}'"
            in event["message"])
    # A sane report afterwards brings the batch resources back.
    metric = client.get(NODE_METRICS, name)
    metric["status"]["nodeMetric"]["systemUsage"]["resources"]["cpu"] = "7"
    client.update_status(NODE_METRICS, metric)
    wait_for(lambda: matches(client, name, case.expect), timeout=30, what="batch back")


CPU_BASIC_INFO = "node.koordinator.sh/cpu-basic-info"
NORMALIZATION_RATIO = "node.koordinator.sh/cpu-normalization-ratio"
AMPLIFICATION_RATIO = "node.koordinator.sh/resource-amplification-ratio"
MODEL = "Intel(R) Xeon(R) Platinum 8369B CPU @ 2.70GHz"


def basic_info(ht: bool) -> str:
    return json.dumps({"cpuModel": MODEL, "hyperThreadEnabled": ht, "turboEnabled": False})


def node_annotations(client: Client, name: str) -> dict[str, str]:
    return client.get(NODES, name)["metadata"].get("annotations") or {}


def test_cpu_normalization_and_amplification(env: tuple[Client, NodeResourceController]
                                             ) -> None:
    client, _ = env
    case = CASES[0]  # batch-cpu 25000 before normalization
    cm = client.get(CONFIGMAPS, CM, NS)
    cm["data"] = {
        "colocation-config": json.dumps(case.config),
        "cpu-normalization-config": json.dumps({"enable": True, "ratioModel": {
            MODEL: {"baseRatio": 1.5, "hyperThreadEnabledRatio": 1.2}}}),
        "resource-amplification-config": json.dumps(
            {"enable": True, "resourceAmplificationRatio": {"memory": 1.5}}),
    }
    client.update(CONFIGMAPS, cm, NS)
    client.create(NODE_RESOURCE_TOPOLOGIES, {
        "apiVersion": "topology.node.k8s.io/v1alpha1", "kind": "NodeResourceTopology",
        "metadata": {"name": "norm", "annotations": {CPU_BASIC_INFO: basic_info(True)}},
        "topologyPolicies": ["None"], "zones": []})
    create_node(client, case, "norm", preset=False)
    # HT on: ratio 1.20, batch-cpu 25000 × 1.2; memory untouched
    wait_for(lambda: matches(client, "norm", {BATCH_CPU: 30000, BATCH_MEMORY: 33 * 10**9})
             and node_annotations(client, "norm").get(NORMALIZATION_RATIO) == "1.20",
             what=f"normalized batch-cpu, has {allocatable(client, 'norm')}")
    # amplification picks the node's ratio up on the reconcile the patch triggers
    wait_for(lambda: node_annotations(client, "norm").get(AMPLIFICATION_RATIO)
             == '{"cpu":1.20,"memory":1.50}', what="amplification ratios with cpu 1.20")
    # koordlet reports HT off: the NRT change alone re-reconciles the node
    nrt = client.get(NODE_RESOURCE_TOPOLOGIES, "norm")
    nrt["metadata"]["annotations"][CPU_BASIC_INFO] = basic_info(False)
    client.update(NODE_RESOURCE_TOPOLOGIES, nrt)
    wait_for(lambda: matches(client, "norm", {BATCH_CPU: 37500})
             and node_annotations(client, "norm").get(AMPLIFICATION_RATIO)
             == '{"cpu":1.50,"memory":1.50}', what="ratio 1.50 after the NRT change")
    assert node_annotations(client, "norm")[NORMALIZATION_RATIO] == "1.50"
    # a ratio out of range in the config is refused: the last ratio stays
    cm = client.get(CONFIGMAPS, CM, NS)
    cm["data"]["cpu-normalization-config"] = json.dumps(
        {"enable": True, "ratioModel": {MODEL: {"baseRatio": 50}}})
    client.update(CONFIGMAPS, cm, NS)
    time.sleep(1.0)
    assert node_annotations(client, "norm")[NORMALIZATION_RATIO] == "1.50"
    # disabling normalization writes 1.00 and batch-cpu back to the formula's value;
    # with amplification off too, the amplification annotation is removed
    cm = client.get(CONFIGMAPS, CM, NS)
    cm["data"]["cpu-normalization-config"] = json.dumps({"enable": False})
    cm["data"]["resource-amplification-config"] = json.dumps({"enable": False})
    client.update(CONFIGMAPS, cm, NS)
    wait_for(lambda: matches(client, "norm", {BATCH_CPU: 25000})
             and node_annotations(client, "norm").get(NORMALIZATION_RATIO) == "1.00"
             and AMPLIFICATION_RATIO not in node_annotations(client, "norm"),
             what=f"ratio 1.00, has {node_annotations(client, 'norm')}")


def test_device_resources(env: tuple[Client, NodeResourceController]) -> None:
    client, _ = env
    case = CASES[0]
    set_config(client, case.config)
    gpu = {"type": "gpu", "health": True, "minor": 0, "resources": {
        "koordinator.sh/gpu-core": "100", "koordinator.sh/gpu-memory": "80Gi",
        "koordinator.sh/gpu-memory-ratio": "100"}}
    client.create(DEVICES, {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Device",
        "metadata": {"name": "gpu-node", "labels": {
            "node.koordinator.sh/gpu-model": "A100-SXM4-80GB",
            "node.koordinator.sh/gpu-driver-version": "535.104"}},
        "spec": {"devices": [gpu, {**gpu, "minor": 1}, {**gpu, "minor": 2, "health": False},
                             {"type": "rdma", "health": True, "minor": 0}]}})
    create_node(client, case, "gpu-node", preset=False)
    expect = {"koordinator.sh/gpu": 200, "koordinator.sh/gpu-core": 200,
              "koordinator.sh/gpu-memory": 160 * 2**30, "koordinator.sh/gpu-memory-ratio": 200,
              "koordinator.sh/rdma": 100, **case.expect}
    wait_for(lambda: matches(client, "gpu-node", expect),
             what=f"gpu resources, has {allocatable(client, 'gpu-node')}")
    wait_for(lambda: client.get(NODES, "gpu-node")["metadata"].get("labels", {}).get(
        "node.koordinator.sh/gpu-model") == "A100-SXM4-80GB", what="gpu model label")
    labels = client.get(NODES, "gpu-node")["metadata"]["labels"]
    assert labels["node.koordinator.sh/gpu-driver-version"] == "535.104"
    # the Device goes away: its resources go with it, batch stays
    client.delete(DEVICES, "gpu-node")
    wait_for(lambda: matches(client, "gpu-node", {**{k: None for k in expect
                                                     if k.startswith("koordinator.sh/")},
                                                  **case.expect}),
             what=f"gpu resources removed, has {allocatable(client, 'gpu-node')}")


def zone_batch(client: Client, name: str) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for z in client.get(NODE_RESOURCE_TOPOLOGIES, name).get("zones") or []:
        for r in z.get("resources") or []:
            if r["name"] in (BATCH_CPU, BATCH_MEMORY):
                assert r["capacity"] == r["allocatable"] == r["available"]
                out.setdefault(z["name"], {})[r["name"]] = quantity_int(r["name"],
                                                                        r["allocatable"])
    return out


def test_numa_zone_batch_resources(env: tuple[Client, NodeResourceController]) -> None:
    client, _ = env
    case = CASES[0]
    set_config(client, case.config)

    def zone(name: str, cpu: str) -> dict[str, Any]:
        return {"name": name, "type": "Node", "resources": [
            {"name": "cpu", "capacity": cpu, "allocatable": cpu, "available": cpu},
            {"name": "memory", "capacity": "60G", "allocatable": "60G", "available": "60G"}]}

    client.create(NODE_RESOURCE_TOPOLOGIES, {
        "apiVersion": "topology.node.k8s.io/v1alpha1", "kind": "NodeResourceTopology",
        "metadata": {"name": "numa"}, "topologyPolicies": ["None"],
        "zones": [zone("node-0", "50"), zone("node-1", "50")]})
    create_node(client, case, "numa", preset=False)
    # per zone: 50000 − 17500 (35% margin) − 3500 (system / 2) − 16500 (HP used / 2);
    # 60G − 21G − 6G − 16.5G
    half = {BATCH_CPU: 12500, BATCH_MEMORY: 16_500_000_000}
    wait_for(lambda: zone_batch(client, "numa") == {"node-0": half, "node-1": half},
             what=f"zone batch resources, has {zone_batch(client, 'numa')}")
    # The node level is unchanged (the node and its NRT are written one after the other).
    wait_for(lambda: matches(client, "numa", case.expect), what="node-level batch resources")
    # koordlet reports less cpu on node-1: the NRT change alone re-reconciles
    nrt = client.get(NODE_RESOURCE_TOPOLOGIES, "numa")
    for r in nrt["zones"][1]["resources"]:
        if r["name"] == "cpu":
            r.update(capacity="40", allocatable="40", available="40")
    client.update(NODE_RESOURCE_TOPOLOGIES, nrt)
    # 40000 − 14000 − 3500 − 16500
    wait_for(lambda: zone_batch(client, "numa").get("node-1", {}).get(BATCH_CPU) == 6000,
             what=f"node-1 batch-cpu 6000, has {zone_batch(client, 'numa')}")
