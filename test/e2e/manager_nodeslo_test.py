"""koord-manager's nodeslo controller end to end against the embedded API server.

The config cache and the controller run in process over HTTPS as koord-manager's ServiceAccount
(RBAC on, the chart installed: ``conftest``; the test writes as the admin). The controller's
workers are not started so the test drives reconciles itself and can count them: after a
ConfigMap change every one of 20 nodes is reconciled exactly once and every NodeSLO is already
re-rendered. A malformed key keeps its last good value in every NodeSLO, while the good keys of
the same change take effect, and a Warning Event names the bad key.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from manager.slo_controller.config import SLOConfigCache
from manager.slo_controller.nodeslo import NodeSLOController
from pkg.client.informers import SharedInformerFactory
from pkg.client.resources import CONFIGMAPS, EVENTS, NODE_SLOS
from pkg.client.rest import Client
from pkg.events import EventBroadcaster
from test.apiserver import ServerHandle
from test.e2e.cluster import wait_for
from test.e2e.conftest import KubeconfigOf

NS = "koordinator-system"
NAME = "slo-controller-config"
NODES = 20

THRESHOLD_DEFAULTS = {"enable": False, "cpuSuppressThresholdPercent": 65,
                      "cpuSuppressPolicy": "cpuset", "memoryEvictThresholdPercent": 70,
                      "cpuEvictPolicy": "evictByRealLimit"}
BURST_DEFAULTS = {"policy": "none", "cpuBurstPercent": 1000, "cfsQuotaBurstPercent": 300,
                  "cfsQuotaBurstPeriodSeconds": -1, "sharePoolThresholdPercent": 50}


@dataclass
class Manager:
    srv: ServerHandle
    client: Client
    cache: SLOConfigCache
    nodeslo: NodeSLOController
    broadcaster: EventBroadcaster
    reconciled: list[str] = field(default_factory=list)

    def reconcile_pass(self) -> list[str]:
        """Reconcile every key queued now, once each; the keys in order."""
        ctl = self.nodeslo.controller
        done = []
        for _ in range(len(ctl.queue)):
            before = len(self.reconciled)
            ctl.process_next()
            done.extend(self.reconciled[before:])
        return done

    def settle(self) -> None:
        """Reconcile until nothing is queued for a moment (informer echoes included)."""
        quiet_since = time.monotonic()
        while time.monotonic() - quiet_since < 0.5:
            if self.reconcile_pass():
                quiet_since = time.monotonic()
            time.sleep(0.05)

    def write_config(self, data: dict[str, Any]) -> None:
        cm = self.client.get(CONFIGMAPS, NAME, NS)
        cm["data"] = {k: v if isinstance(v, str) else json.dumps(v) for k, v in data.items()}
        self.client.update(CONFIGMAPS, cm)

    def specs(self) -> dict[str, dict[str, Any]]:
        return {i["metadata"]["name"]: i["spec"] for i in self.client.list(NODE_SLOS)["items"]}


pytestmark = pytest.mark.without_webhooks


@pytest.fixture
def manager(srv: ServerHandle, client: Client,
            kubeconfig_of: KubeconfigOf) -> Iterator[Manager]:
    # The chart's ConfigMap, holding only what the expectations below start from.
    cm = client.get(CONFIGMAPS, NAME, NS)
    cm["data"] = {"resource-threshold-config": json.dumps({"clusterStrategy": {"enable": True}})}
    client.update(CONFIGMAPS, cm, NS)
    # The controller as koord-manager's ServiceAccount; no client-side throttling.
    controller_client = Client.from_kubeconfig(kubeconfig_of("koord-manager"), qps=-1)
    srv.add_nodes(NODES // 2, prefix="a-", labels={"pool": "a"})
    srv.add_nodes(NODES // 2, prefix="b-", labels={"pool": "b"})
    factory = SharedInformerFactory(controller_client)
    broadcaster = EventBroadcaster(controller_client)
    recorder = broadcaster.new_recorder("koord-manager")
    cache = SLOConfigCache(factory, recorder, NS, NAME)
    nodeslo = NodeSLOController(controller_client, factory, cache, recorder)
    m = Manager(srv, client, cache, nodeslo, broadcaster)
    reconcile = nodeslo.controller.reconcile

    def counted(key: str) -> Any:
        m.reconciled.append(key)
        return reconcile(key)

    nodeslo.controller.reconcile = counted
    factory.start()
    factory.wait_for_cache_sync(10)
    wait_for(lambda: len(nodeslo.nodes.lister.list()) == NODES, 10, what="nodes registered")
    yield m
    nodeslo.controller.queue.shut_down()
    factory.shutdown()
    broadcaster.shutdown(5)
    controller_client.close()


def expected(threshold: dict[str, Any], burst: dict[str, Any],
             threshold_b: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    out = {}
    for pool in ("a", "b"):
        for i in range(NODES // 2):
            out[f"{pool}-{i}"] = {
                "resourceUsedThresholdWithBE": threshold_b if pool == "b" and threshold_b
                else threshold,
                "resourceQOSStrategy": {},
                "cpuBurstStrategy": burst,
                "systemStrategy": {"totalNetworkBandwidth": "0"},
            }
    return out


def test_configmap_change_rerenders_every_nodeslo_in_one_reconcile(manager: Manager) -> None:
    manager.settle()
    threshold = {**THRESHOLD_DEFAULTS, "enable": True}
    assert manager.specs() == expected(threshold, BURST_DEFAULTS)

    manager.write_config({
        "resource-threshold-config": {
            "clusterStrategy": {"enable": True, "cpuSuppressThresholdPercent": 55},
            "nodeStrategies": [{"name": "pool-b", "nodeSelector": {"matchLabels": {"pool": "b"}},
                                "memoryEvictThresholdPercent": 85}]},
        "cpu-burst-config": {"clusterStrategy": {"policy": "auto", "cpuBurstPercent": 500}},
    })
    queue = manager.nodeslo.controller.queue
    wait_for(lambda: len(queue) == NODES, 10, what="every node enqueued by the change")
    keys = manager.reconcile_pass()[:NODES]
    assert sorted(keys) == sorted(expected({}, {}))  # each node exactly once

    threshold = {**THRESHOLD_DEFAULTS, "enable": True, "cpuSuppressThresholdPercent": 55}
    burst = {**BURST_DEFAULTS, "policy": "auto", "cpuBurstPercent": 500}
    assert manager.specs() == expected(threshold, burst,
                                       {**threshold, "memoryEvictThresholdPercent": 85})


def test_malformed_key_keeps_the_last_good_config_and_an_event_names_it(
        manager: Manager) -> None:
    manager.settle()
    manager.write_config({
        "resource-threshold-config": '{"clusterStrategy": {"enable": "yes"}}',
        "cpu-burst-config": {"clusterStrategy": {"policy": "cfsQuotaBurstOnly"}},
    })
    queue = manager.nodeslo.controller.queue
    wait_for(lambda: len(queue) == NODES, 10, what="every node enqueued by the good key")
    assert len(set(manager.reconcile_pass()[:NODES])) == NODES

    last_good = {**THRESHOLD_DEFAULTS, "enable": True}
    burst = {**BURST_DEFAULTS, "policy": "cfsQuotaBurstOnly"}
    assert manager.specs() == expected(last_good, burst)
    assert set(manager.cache.errors()) == {"resource-threshold-config"}

    manager.broadcaster.flush(5)
    events = wait_for(lambda: [
        e for e in manager.client.list(EVENTS, NS)["items"]
        if e["reason"] == "SLOCfgUnmarshalFailed" and e["involvedObject"]["name"] == NAME], 10,
        what="Warning Event on the ConfigMap")
    assert events[0]["type"] == "Warning"
    assert events[0]["involvedObject"]["kind"] == "ConfigMap"
    assert "resource-threshold-config" in events[0]["message"]
    assert "clusterStrategy.enable" in events[0]["message"]
