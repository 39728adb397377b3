"""The NodeResourceTopology report, after upstream's ``states_noderesourcetopology_test.go``.

The machine is a ``/sys`` (and ``/proc/cpuinfo``) tree laid out under a temp dir as the kernel
does: 2 sockets, 2 hyper-threaded cores each (cpu0-3 on socket 0 / NUMA node 0, cpu4-7 on
socket 1 / node 1, the kernel's ``core_id`` restarting at 0 in socket 1), the NUMA nodes'
``meminfo`` with upstream's test totals. NodeInfoCollector reads it into a real metric cache;
the objects live on the embedded API server.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from api.extension.node import ANNOTATION_NODE_RESERVATION, ANNOTATION_NODE_SYSTEM_QOS_RESOURCE
from api.extension.numa import ANNOTATION_RESOURCE_STATUS, LABEL_NODE_ENABLE_NUMA_RESERVATION
from api.extension.qos import LABEL_POD_QOS
from koordlet.metriccache.metric_cache import MetricCache
from koordlet.metricsadvisor.nodeinfo import NodeInfoCollector, read_cpu_topology
from koordlet.statesinformer.node_topology import (
    KubeletConfiguration,
    KubeletConfigz,
    KubeletDefaults,
    NodeTopologyReporter,
    TopologyError,
    kubelet_allocated_cpus,
    take_by_topology,
    topology_policy,
)
from koordlet.statesinformer.states_informer import PodMeta
from pkg.client.errors import ApiError
from pkg.client.resources import NODE_RESOURCE_TOPOLOGIES, NODES
from pkg.client.rest import Client
from pkg.features import koordlet_features
from pkg.features.featuregate import FeatureGate
from pkg.features.koordlet_features import KOORDLET_FEATURE_GATES
from test.apiserver import start
from test.e2e.cluster import install_crds, wait_for

NODE = "test"
CPU_TOPOLOGY = (
    '{"detail":[{"id":0,"core":0,"socket":0,"node":0},{"id":1,"core":0,"socket":0,"node":0},'
    '{"id":2,"core":1,"socket":0,"node":0},{"id":3,"core":1,"socket":0,"node":0},'
    '{"id":4,"core":2,"socket":1,"node":1},{"id":5,"core":2,"socket":1,"node":1},'
    '{"id":6,"core":3,"socket":1,"node":1},{"id":7,"core":3,"socket":1,"node":1}]}')
CPU_BASIC_INFO = '{"cpuModel":"XXX","hyperThreadEnabled":true,"vendorID":"GenuineIntel"}'
SHARED_POOLS = ('[{"socket":0,"node":0,"cpuset":"0-2"},'
                '{"socket":1,"node":1,"cpuset":"6-7"}]')
# pod3 writes its QoS as an annotation, not the label: it is no LSE pod, so BE keeps all.
BE_SHARED_POOLS = ('[{"socket":0,"node":0,"cpuset":"0-3"},'
                   '{"socket":1,"node":1,"cpuset":"4-7"}]')


def _zone(name: str, cpu: str, memory: str, **extra: str) -> dict[str, Any]:
    resources = {"cpu": cpu, "hugepages-1Gi": "0", "hugepages-2Mi": "0", "memory": memory,
                 **extra}
    return {"name": name, "type": "Node", "resources": [
        {"name": r, "capacity": q, "allocatable": q, "available": q}
        for r, q in sorted(resources.items())]}


# 263432804 kB and 263432000 kB of MemTotal, as upstream's test.
ZONES = [_zone("node-0", "4", "263432804Ki"), _zone("node-1", "4", "263432000Ki")]


def _w(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def lay_out_machine(root: Path) -> tuple[str, str]:
    """(sys root, proc root) of the 8-CPU machine."""
    sys_root, proc_root = root / "sys", root / "proc"
    cpu_root = sys_root / "devices/system/cpu"
    for cpu in range(8):
        _w(cpu_root / f"cpu{cpu}/topology/physical_package_id", f"{cpu // 4}\n")
        _w(cpu_root / f"cpu{cpu}/topology/core_id", f"{(cpu % 4) // 2}\n")
    _w(cpu_root / "smt/active", "1\n")
    for node, (cpus, kb) in enumerate((("0-3", 263432804), ("4-7", 263432000))):
        node_dir = sys_root / f"devices/system/node/node{node}"
        _w(node_dir / "cpulist", f"{cpus}\n")
        _w(node_dir / "meminfo", f"Node {node} MemTotal:       {kb} kB\n"
                                 f"Node {node} MemFree:        254391744 kB\n")
    _w(proc_root / "cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\n"
                              "model name\t: XXX\n\nprocessor\t: 1\n")
    return str(sys_root), str(proc_root)


def _pod(name: str, uid: str, labels: dict[str, str] | None = None,
         annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": name.replace("pod", "ns"), "uid": uid,
                         "labels": labels or {}, "annotations": annotations or {}}}


PODS = [
    _pod("pod1", "xxx-y1", {LABEL_POD_QOS: "LSR"},
         {ANNOTATION_RESOURCE_STATUS: '{"cpuset": "4" }'}),
    _pod("pod2", "xxx-y2", annotations={LABEL_POD_QOS: "LSR",
                                        ANNOTATION_RESOURCE_STATUS: '{"cpuset": "3" }'}),
    _pod("pod3", "xxx-y3", annotations={LABEL_POD_QOS: "LSE",
                                        ANNOTATION_RESOURCE_STATUS: '{"cpuset": "5" }'}),
    _pod("pod4", "xxx-y4"),
]


class FakeStates:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.pods = PODS

    def get_node(self) -> dict[str, Any] | None:
        return self.client.get(NODES, NODE)

    def get_all_pods(self) -> list[PodMeta]:
        return [PodMeta(p) for p in self.pods]


class StaticKubelet:
    """kubelet with the static CPU manager policy and 2 CPUs kube-reserved (upstream's test)."""

    def kubelet_configuration(self) -> KubeletConfiguration:
        return KubeletConfiguration(cpu_manager_policy="static", kube_reserved={"cpu": "2000m"})


@pytest.fixture(scope="module")
def server() -> Iterator[Client]:
    with start() as srv:
        client = Client.from_kubeconfig(srv.kubeconfig, qps=-1)
        install_crds(client)
        yield client


@pytest.fixture()
def client(server: Client) -> Iterator[Client]:
    server.create(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}})
    yield server
    for resource in (NODE_RESOURCE_TOPOLOGIES, NODES):
        try:
            server.delete(resource, NODE)
        except ApiError as e:
            if e.status != 404:  # a test with the gate off creates no NodeResourceTopology
                raise


@pytest.fixture()
def cache(tmp_path: Path) -> MetricCache:
    cache = MetricCache()
    NodeInfoCollector(cache, *lay_out_machine(tmp_path)).collect(0.0)
    return cache


def reporter(client: Client, cache: MetricCache, tmp_path: Path,
             kubelet: Any = None, gate: FeatureGate | None = None,
             on_change: Any = lambda: None) -> NodeTopologyReporter:
    def current() -> dict[str, Any] | None:
        items = [o for o in client.list(NODE_RESOURCE_TOPOLOGIES)["items"]
                 if o["metadata"]["name"] == NODE]
        return items[0] if items else None

    return NodeTopologyReporter(
        client, FakeStates(client), cache, current,
        kubelet=kubelet if kubelet is not None else StaticKubelet(),
        var_lib_kubelet=str(tmp_path / "kubelet"),
        feature_gate=gate or FeatureGate(KOORDLET_FEATURE_GATES), on_change=on_change)


def nrt_annotations(client: Client) -> dict[str, str]:
    return client.get(NODE_RESOURCE_TOPOLOGIES, NODE)["metadata"]["annotations"]


def test_report_topology(client: Client, cache: MetricCache, tmp_path: Path) -> None:
    assert reporter(client, cache, tmp_path).report_once()
    nrt = client.get(NODE_RESOURCE_TOPOLOGIES, NODE)
    a = nrt["metadata"]["annotations"]
    assert json.loads(a["kubelet.koordinator.sh/cpu-manager-policy"]) == {
        "policy": "static", "reservedCPUs": "0-1"}
    assert a["node.koordinator.sh/cpu-basic-info"] == CPU_BASIC_INFO
    assert a["node.koordinator.sh/cpu-shared-pools"] == SHARED_POOLS
    assert a["node.koordinator.sh/be-cpu-shared-pools"] == BE_SHARED_POOLS
    assert a["node.koordinator.sh/cpu-topology"] == CPU_TOPOLOGY
    assert a["node.koordinator.sh/pod-cpu-allocs"] == "null"
    assert a[ANNOTATION_NODE_RESERVATION] == "{}"
    assert a[ANNOTATION_NODE_SYSTEM_QOS_RESOURCE] == "{}"
    assert nrt["topologyPolicies"] == ["None"]
    assert nrt["zones"] == ZONES
    node_uid = client.get(NODES, NODE)["metadata"]["uid"]
    assert nrt["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "Koordinator"}
    assert nrt["metadata"]["ownerReferences"] == [{
        "apiVersion": "v1", "kind": "Node", "name": NODE, "uid": node_uid,
        "controller": True, "blockOwnerDeletion": True}]


def test_unchanged_topology_is_not_written_again(client: Client, cache: MetricCache,
                                                 tmp_path: Path) -> None:
    changes: list[int] = []
    r = reporter(client, cache, tmp_path, on_change=lambda: changes.append(1))
    assert r.report_once()
    version = client.get(NODE_RESOURCE_TOPOLOGIES, NODE)["metadata"]["resourceVersion"]
    assert not r.report_once()
    assert client.get(NODE_RESOURCE_TOPOLOGIES, NODE)["metadata"]["resourceVersion"] == version
    assert changes == [1]  # the local copy changed once, the callback fired once
    local = r.get_node_topo()
    assert local is not None and local["zones"] == ZONES


def test_reserved_and_system_qos_leave_the_share_pools(client: Client, cache: MetricCache,
                                                       tmp_path: Path) -> None:
    node = client.get(NODES, NODE)
    node["metadata"]["annotations"] = {ANNOTATION_NODE_RESERVATION: '{"reservedCPUs":"1-2"}',
                                       ANNOTATION_NODE_SYSTEM_QOS_RESOURCE: '{"cpuset":"7"}'}
    client.update(NODES, node)
    reporter(client, cache, tmp_path).report_once()
    a = nrt_annotations(client)
    assert a["node.koordinator.sh/cpu-shared-pools"] == (
        '[{"socket":0,"node":0,"cpuset":"0"},{"socket":1,"node":1,"cpuset":"6"}]')
    assert a[ANNOTATION_NODE_RESERVATION] == '{"reservedCPUs":"1-2"}'
    assert a[ANNOTATION_NODE_SYSTEM_QOS_RESOURCE] == '{"cpuset":"7"}'


@pytest.mark.parametrize(("cpu", "reserved"), [
    ("3", {"resources": {"cpu": "3"}, "reservedCPUs": "0-2"}),
    ("2500m", {"resources": {"cpu": "2500m"}, "reservedCPUs": "0-2"}),
    ("9", {"resources": {"cpu": "9"}}),  # more than the node has: no CPU is named
])
def test_reserved_cpu_count_is_taken_by_topology(client: Client, cache: MetricCache,
                                                 tmp_path: Path, cpu: str,
                                                 reserved: dict[str, Any]) -> None:
    node = client.get(NODES, NODE)
    node["metadata"]["annotations"] = {
        ANNOTATION_NODE_RESERVATION: json.dumps({"resources": {"cpu": cpu}})}
    client.update(NODES, node)
    reporter(client, cache, tmp_path).report_once()
    assert json.loads(nrt_annotations(client)[ANNOTATION_NODE_RESERVATION]) == reserved


def test_disable_query_kubelet_config(client: Client, cache: MetricCache,
                                      tmp_path: Path) -> None:
    r = reporter(client, cache, tmp_path)
    r.kubelet = None
    r.report_once()
    a = nrt_annotations(client)
    assert a["kubelet.koordinator.sh/cpu-manager-policy"] == "{}"
    assert a["node.koordinator.sh/cpu-shared-pools"] == SHARED_POOLS


def test_kubelet_defaults_are_policy_none(client: Client, cache: MetricCache,
                                          tmp_path: Path) -> None:
    reporter(client, cache, tmp_path, kubelet=KubeletDefaults()).report_once()
    assert nrt_annotations(client)["kubelet.koordinator.sh/cpu-manager-policy"] == (
        '{"policy":"none"}')


class ConfigzOf:
    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config

    def get_kubelet_configuration(self, node: dict[str, Any]) -> dict[str, Any]:
        return self.config


def test_kubelet_configz_sets_policy_reserved_cpus_and_topology_policy(
        client: Client, cache: MetricCache, tmp_path: Path) -> None:
    configz = KubeletConfigz(ConfigzOf({
        "cpuManagerPolicy": "static", "cpuManagerPolicyOptions": {"full-pcpus-only": "true"},
        "reservedSystemCPUs": "6-7", "topologyManagerPolicy": "single-numa-node",
        "topologyManagerScope": "pod", "evictionHard": {"memory.available": "100Mi"}}),
        lambda: {"metadata": {"name": NODE}})
    reporter(client, cache, tmp_path, kubelet=configz).report_once()
    nrt = client.get(NODE_RESOURCE_TOPOLOGIES, NODE)
    assert json.loads(nrt["metadata"]["annotations"][
        "kubelet.koordinator.sh/cpu-manager-policy"]) == {
        "policy": "static", "options": {"full-pcpus-only": "true"}, "reservedCPUs": "6-7"}
    assert nrt["topologyPolicies"] == ["SingleNUMANodePodLevel"]


def test_malformed_configz_fails_the_round(client: Client, cache: MetricCache,
                                           tmp_path: Path) -> None:
    configz = KubeletConfigz(ConfigzOf({"kubeReserved": "2"}), lambda: {"metadata": {}})
    with pytest.raises(TopologyError, match="configz is malformed"):
        reporter(client, cache, tmp_path, kubelet=configz).report_once()
    assert "annotations" not in client.get(NODE_RESOURCE_TOPOLOGIES, NODE)["metadata"]


def test_disabled_gate_writes_nothing_but_keeps_the_local_copy(
        client: Client, cache: MetricCache, tmp_path: Path) -> None:
    gate = FeatureGate(KOORDLET_FEATURE_GATES)
    gate.set_from_map({koordlet_features.NODE_TOPOLOGY_REPORT: False})
    r = reporter(client, cache, tmp_path, gate=gate)
    assert not r.report_once()
    assert client.list(NODE_RESOURCE_TOPOLOGIES)["items"] == []
    local = r.get_node_topo()
    assert local is not None
    assert local["metadata"]["annotations"]["node.koordinator.sh/cpu-topology"] == CPU_TOPOLOGY


def test_old_zones_are_merged_and_expired_ones_trimmed(client: Client, cache: MetricCache,
                                                       tmp_path: Path) -> None:
    r = reporter(client, cache, tmp_path)
    r.report_once()
    nrt = client.get(NODE_RESOURCE_TOPOLOGIES, NODE)
    nrt["zones"] = [{"name": "fake-name", "type": "Node"},
                    _zone("node-0", "2", "263432804Ki", gpu="1"),
                    _zone("node-1", "2", "263432000Ki", gpu="1")]
    client.update(NODE_RESOURCE_TOPOLOGIES, nrt)
    assert r.report_once()
    assert client.get(NODE_RESOURCE_TOPOLOGIES, NODE)["zones"] == [
        _zone("node-0", "4", "263432804Ki", gpu="1"), _zone("node-1", "4", "263432000Ki", gpu="1")]


def test_kubelet_allocated_cpus_from_cpu_manager_state(client: Client, cache: MetricCache,
                                                       tmp_path: Path) -> None:
    _w(tmp_path / "kubelet/cpu_manager_state",
       '{"policyName":"static","defaultCpuSet":"2-7","entries":{"xxx-y4":{"demo":"1"}},'
       '"checksum":1000000000}')
    reporter(client, cache, tmp_path).report_once()
    a = nrt_annotations(client)
    assert a["node.koordinator.sh/cpu-shared-pools"] == (
        '[{"socket":0,"node":0,"cpuset":"0,2"},{"socket":1,"node":1,"cpuset":"6-7"}]')
    assert a["node.koordinator.sh/pod-cpu-allocs"] == (
        '[{"namespace":"ns4","name":"pod4","uid":"xxx-y4","cpuset":"1",'
        '"managedByKubelet":true}]')


def test_numa_reservation_splits_kubelet_reserved_over_zones(
        client: Client, cache: MetricCache, tmp_path: Path) -> None:
    node = client.get(NODES, NODE)
    node["metadata"]["labels"] = {LABEL_NODE_ENABLE_NUMA_RESERVATION: "true"}
    client.update(NODES, node)
    node = client.get(NODES, NODE)
    node["status"] = {"capacity": {"cpu": "8", "memory": "269755191296"},
                      "allocatable": {"cpu": "7", "memory": "268706611200"}}
    client.update_status(NODES, node)
    reporter(client, cache, tmp_path, kubelet=KubeletDefaults()).report_once()
    nrt = client.get(NODE_RESOURCE_TOPOLOGIES, NODE)
    assert nrt["metadata"]["labels"][LABEL_NODE_ENABLE_NUMA_RESERVATION] == "true"
    # 1 CPU and 1048580096 bytes reserved: 500m and 512002Ki off each zone's allocatable.
    cpu0, mem0 = (r for r in nrt["zones"][0]["resources"] if r["name"] in ("cpu", "memory"))
    assert (cpu0["capacity"], cpu0["allocatable"], cpu0["available"]) == ("4", "3500m", "3500m")
    assert mem0["capacity"] == "263432804Ki"
    assert mem0["allocatable"] == mem0["available"] == "262920802Ki"


def test_report_loop_creates_the_object(client: Client, cache: MetricCache,
                                        tmp_path: Path) -> None:
    r = reporter(client, cache, tmp_path)
    r.interval = 0.05
    stop = threading.Event()
    t = threading.Thread(target=r.run, args=(stop,))
    t.start()
    try:
        wait_for(lambda: client.list(NODE_RESOURCE_TOPOLOGIES)["items"], timeout=10,
                 what="NodeResourceTopology created by the loop")
    finally:
        stop.set()
        t.join()


def test_missing_cpu_info_fails_the_round_without_writing(client: Client,
                                                          tmp_path: Path) -> None:
    r = reporter(client, MetricCache(), tmp_path)
    with pytest.raises(Exception, match="node cpu info not exist"):
        r.report_once()


def test_this_machine_topology_is_read_as_lscpu_numbers_it(tmp_path: Path) -> None:
    sys_root, _ = lay_out_machine(tmp_path)
    assert [(p.cpu_id, p.core_id, p.socket_id, p.node_id)
            for p in read_cpu_topology(sys_root).processors] == [
        (0, 0, 0, 0), (1, 0, 0, 0), (2, 1, 0, 0), (3, 1, 0, 0),
        (4, 2, 1, 1), (5, 2, 1, 1), (6, 3, 1, 1), (7, 3, 1, 1)]


def test_take_by_topology_prefers_whole_sockets_then_cores(tmp_path: Path) -> None:
    processors = read_cpu_topology(lay_out_machine(tmp_path)[0]).processors
    assert take_by_topology(processors, 2) == {0, 1}
    assert take_by_topology(processors, 3) == {0, 1, 2}
    assert take_by_topology(processors, 5) == {0, 1, 2, 3, 4}
    assert take_by_topology(processors, 0) == frozenset()


def test_topology_policy_from_kubelet_policy_and_scope() -> None:
    assert topology_policy("single-numa-node", "pod") == "SingleNUMANodePodLevel"
    assert topology_policy("best-effort", "container") == "BestEffortContainerLevel"
    assert topology_policy("none", "pod") == "None"
    assert topology_policy("", "container") == "None"


@pytest.mark.parametrize(("state", "error", "uids"), [
    ("", True, []),
    ("{", True, []),
    ('{"policyName":"none","defaultCPUSet":"4-6","entries":{},"checksum":354655845}', False, []),
    ('{"policyName":"none","defaultCPUSet":"1-3","entries":{"pod":{"container1":"1-2",'
     '"container2":"2-3"}},"checksum":962272150}', False, [("pod", "1-3")]),
])
def test_kubelet_allocated_cpus(state: str, error: bool, uids: list[tuple[str, str]]) -> None:
    if error:
        with pytest.raises(ValueError):
            kubelet_allocated_cpus(state, [], {})
        return
    assert [(a.uid, a.cpuset) for a in kubelet_allocated_cpus(state, [], {})] == uids


def test_kubelet_allocated_cpus_skip_pods_koordinator_manages() -> None:
    state = json.dumps({"policyName": "none", "defaultCPUSet": "1-8", "entries": {
        "pod": {"container1": "1-2", "container2": "2-3"}, "LSPod": {"container1": "3-4"},
        "BEPod": {"container1": "4-5"}, "LSRPod": {"container1": "5-6"},
        "LSEPod": {"container1": "6-7"}}})
    pods = [_pod("test-pod", "pod"),
            _pod("test-ls-pod", "LSPod", {LABEL_POD_QOS: "LS"},
                 {ANNOTATION_RESOURCE_STATUS: '{"cpuset": "3-4"}'}),
            _pod("test-be-pod", "BEPod", {LABEL_POD_QOS: "BE"}),
            _pod("test-lsr-pod", "LSRPod", {LABEL_POD_QOS: "LSR"},
                 {ANNOTATION_RESOURCE_STATUS: '{"cpuset": "4-5"}'}),
            _pod("test-lse-pod", "LSEPod", {LABEL_POD_QOS: "LSE"},
                 {ANNOTATION_RESOURCE_STATUS: '{"cpuset": "5-6"}'})]
    allocs = kubelet_allocated_cpus(state, pods, {})
    assert [(a.namespace, a.name, a.uid, a.cpuset, a.managed_by_kubelet) for a in allocs] == [
        ("test-ns", "test-pod", "pod", "1-3", True)]
