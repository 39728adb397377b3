"""The nodeslo controller against the embedded API server: NodeSLO lifecycle and the spec
rendered from slo-controller-config with node overrides."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import pytest

from manager.slo_controller.config import SLOConfigCache
from manager.slo_controller.nodeslo import NodeSLOController
from pkg.client.informers import SharedInformerFactory
from pkg.client.resources import CONFIGMAPS, EVENTS, NAMESPACES, NODE_SLOS, NODES
from pkg.client.rest import Client
from pkg.events import EventBroadcaster
from test.apiserver import ServerHandle, start
from test.e2e.cluster import install_crds, wait_for

NS = "koordinator-system"
NAME = "slo-controller-config"

# Upstream's NodeSLO for a node when slo-controller-config has none of the keys.
DEFAULT_SPEC: dict[str, dict[str, Any]] = {
    "resourceUsedThresholdWithBE": {
        "enable": False, "cpuSuppressThresholdPercent": 65, "cpuSuppressPolicy": "cpuset",
        "memoryEvictThresholdPercent": 70, "cpuEvictPolicy": "evictByRealLimit"},
    "resourceQOSStrategy": {},
    "cpuBurstStrategy": {
        "policy": "none", "cpuBurstPercent": 1000, "cfsQuotaBurstPercent": 300,
        "cfsQuotaBurstPeriodSeconds": -1, "sharePoolThresholdPercent": 50},
    "systemStrategy": {"totalNetworkBandwidth": "0"},
}


@dataclass
class Env:
    srv: ServerHandle
    client: Client
    cache: SLOConfigCache
    controller: NodeSLOController
    broadcaster: EventBroadcaster

    def spec(self, node: str) -> dict[str, Any] | None:
        try:
            return self.client.get(NODE_SLOS, node)["spec"]
        except Exception:  # noqa: BLE001 - not there (yet)
            return None

    def reconcile_now(self, node: str) -> None:
        """Reconcile once the controller's cache holds the stored NodeSLO."""
        def cached() -> bool:
            held = self.controller.node_slos.lister.get(node)
            stored = self.client.get(NODE_SLOS, node)["metadata"]["resourceVersion"]
            return held is not None and held.metadata.resource_version == stored
        wait_for(cached, 10, what=f"NodeSLO {node} in the informer cache")
        self.controller.reconcile(node)

    def set_config(self, data: dict[str, Any]) -> None:
        text = {k: v if isinstance(v, str) else json.dumps(v) for k, v in data.items()}
        try:
            current = self.client.get(CONFIGMAPS, NAME, NS)
        except Exception:  # noqa: BLE001 - first write
            self.client.create(CONFIGMAPS, {"metadata": {"name": NAME, "namespace": NS},
                                            "data": text})
            return
        current["data"] = text
        self.client.update(CONFIGMAPS, current)

    def patch_node(self, name: str, metadata: dict[str, Any]) -> None:
        self.client.patch(NODES, name, {"metadata": metadata})


@pytest.fixture
def env() -> Iterator[Env]:
    srv = start()
    client = Client.from_kubeconfig(srv.kubeconfig, qps=-1)  # no client-side throttling
    install_crds(client)
    client.create(NAMESPACES, {"metadata": {"name": NS}})
    factory = SharedInformerFactory(client)
    broadcaster = EventBroadcaster(client)
    recorder = broadcaster.new_recorder("koord-manager")
    cache = SLOConfigCache(factory, recorder, NS, NAME)
    controller = NodeSLOController(client, factory, cache, recorder, workers=2)
    factory.start()
    assert controller.start(sync_timeout=10)
    yield Env(srv, client, cache, controller, broadcaster)
    controller.stop(5)
    factory.shutdown()
    broadcaster.shutdown(5)
    srv.stop()


def test_every_node_gets_the_default_nodeslo_and_it_stays_put(env: Env) -> None:
    env.srv.add_nodes(2)
    for name in ("node-0", "node-1"):
        assert wait_for(partial(env.spec, name), 10, what=f"NodeSLO {name}") == DEFAULT_SPEC
    version = env.client.get(NODE_SLOS, "node-0")["metadata"]["resourceVersion"]
    env.reconcile_now("node-0")  # nothing differs: no write
    assert env.client.get(NODE_SLOS, "node-0")["metadata"]["resourceVersion"] == version


def test_cluster_and_node_strategies_are_merged_onto_the_defaults(env: Env) -> None:
    env.srv.add_nodes(1, prefix="plain-")
    env.srv.add_nodes(1, prefix="pool-", labels={"pool": "batch"})
    selector = {"matchLabels": {"pool": "batch"}}
    env.set_config({
        "resource-threshold-config": {
            "clusterStrategy": {"enable": True, "cpuSuppressThresholdPercent": 60},
            "nodeStrategies": [{"name": "batch", "nodeSelector": selector,
                                "memoryEvictThresholdPercent": 80}]},
        "cpu-burst-config": {"clusterStrategy": {"policy": "auto"}},
        "system-config": {"clusterStrategy": {"minFreeKbytesFactor": 150}},
        "resource-qos-config": {"clusterStrategy": {"beClass": {"cpuQOS": {"enable": True}}}},
    })
    threshold = {**DEFAULT_SPEC["resourceUsedThresholdWithBE"], "enable": True,
                 "cpuSuppressThresholdPercent": 60}
    cluster = {
        "resourceUsedThresholdWithBE": threshold,
        "resourceQOSStrategy": {"beClass": {"cpuQOS": {"enable": True}}},
        "cpuBurstStrategy": {**DEFAULT_SPEC["cpuBurstStrategy"], "policy": "auto"},
        "systemStrategy": {"minFreeKbytesFactor": 150, "totalNetworkBandwidth": "0"},
    }
    wait_for(lambda: env.spec("plain-0") == cluster, 10, what="cluster strategies")
    wait_for(lambda: env.spec("pool-0") == {
        **cluster,
        "resourceUsedThresholdWithBE": {**threshold, "memoryEvictThresholdPercent": 80},
    }, 10, what="node strategy")

    # Relabelling moves a node in and out of the node strategy.
    env.patch_node("pool-0", {"labels": {"pool": None}})
    wait_for(lambda: env.spec("pool-0") == cluster, 10, what="re-render after relabel")
    env.patch_node("plain-0", {"labels": {"pool": "batch"}})
    wait_for(lambda: (env.spec("plain-0") or {}).get("resourceUsedThresholdWithBE", {})
             .get("memoryEvictThresholdPercent") == 80, 10, what="re-render after relabel")


def test_host_applications_by_node_selector(env: Env) -> None:
    env.srv.add_nodes(1, prefix="plain-")
    env.srv.add_nodes(1, prefix="edge-", labels={"edge": "true"})
    nginx = {"name": "nginx", "qos": "LS", "priority": "koord-prod",
             "cgroupPath": {"base": "CgroupRoot", "parentDir": "host-latency-sensitive/",
                            "relativePath": "nginx/"}}
    agent = {"name": "agent", "qos": "BE"}
    env.set_config({"host-application-config": {
        "applications": [nginx],
        "nodeConfigs": [{"name": "edge", "nodeSelector": {"matchLabels": {"edge": "true"}},
                         "applications": [agent]}],
    }})
    wait_for(lambda: (env.spec("plain-0") or {}).get("hostApplications") == [nginx], 10)
    wait_for(lambda: (env.spec("edge-0") or {}).get("hostApplications") == [agent], 10)


def test_network_bandwidth_annotation_and_its_quirk(env: Env) -> None:
    env.srv.add_nodes(2)
    env.patch_node("node-0", {"annotations": {"node.koordinator.sh/network-bandwidth": "10G"}})
    env.patch_node("node-1", {"annotations": {"node.koordinator.sh/network-bandwidth": "fast"}})
    wait_for(lambda: (env.spec("node-0") or {}).get("systemStrategy")
             == {"totalNetworkBandwidth": "10G"}, 10, what="bandwidth from annotation")
    # upstream drops the whole systemStrategy for an unparsable annotation
    spec = wait_for(lambda: (s := env.spec("node-1")) and "systemStrategy" not in s and s, 10,
                    what="NodeSLO without systemStrategy")
    assert spec["cpuBurstStrategy"] == DEFAULT_SPEC["cpuBurstStrategy"]
    env.broadcaster.flush(5)
    events = wait_for(lambda: [e for e in env.client.list(EVENTS, "default")["items"]
                               if e["involvedObject"].get("name") == "node-1"
                               and e["reason"] == "InvalidNodeSLOAnnotation"], 10)
    assert events[0]["type"] == "Warning"
    assert "node.koordinator.sh/network-bandwidth" in events[0]["message"]
    assert "'fast'" in events[0]["message"]


def test_extensions_of_the_stored_spec_are_kept(env: Env) -> None:
    env.srv.add_nodes(1)
    wait_for(lambda: env.spec("node-0"), 10)
    slo = env.client.get(NODE_SLOS, "node-0")
    slo["spec"]["extensions"] = {"my-plugin": {"level": 3}}
    env.client.update(NODE_SLOS, slo)
    env.set_config({"cpu-burst-config": {"clusterStrategy": {"policy": "cpuBurstOnly"}}})
    wait_for(lambda: (env.spec("node-0") or {}).get("cpuBurstStrategy", {}).get("policy")
             == "cpuBurstOnly", 10)
    assert (env.spec("node-0") or {}).get("extensions") == {"my-plugin": {"level": 3}}


def test_nodeslo_goes_with_its_node_and_orphans_are_removed(env: Env) -> None:
    env.srv.add_nodes(2)
    wait_for(lambda: env.spec("node-1"), 10)
    env.client.delete(NODES, "node-1")
    env.client.create(NODE_SLOS, {"apiVersion": "slo.koordinator.sh/v1alpha1",
                                  "kind": "NodeSLO", "metadata": {"name": "ghost"}})
    names = lambda: {i["metadata"]["name"]  # noqa: E731
                     for i in env.client.list(NODE_SLOS)["items"]}
    wait_for(lambda: names() == {"node-0"}, 10, what="only node-0's NodeSLO left")
