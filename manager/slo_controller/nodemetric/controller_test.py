"""The nodemetric controller against the embedded API server: NodeMetric lifecycle and the
collect policy written from colocation-config."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import pytest

from manager.slo_controller.config import SLOConfigCache
from manager.slo_controller.nodemetric import NodeMetricController
from pkg.client.informers import SharedInformerFactory
from pkg.client.resources import CONFIGMAPS, NAMESPACES, NODE_METRICS, NODES
from pkg.client.rest import Client
from test.apiserver import ServerHandle, start
from test.e2e.cluster import install_crds, wait_for

NS = "koordinator-system"
NAME = "slo-controller-config"

DEFAULT_POLICY = {
    "aggregateDurationSeconds": 300,
    "reportIntervalSeconds": 60,
    "nodeAggregatePolicy": {"durations": ["5m0s", "10m0s", "30m0s"]},
    "nodeMemoryCollectPolicy": "usageWithoutPageCache",
}


@dataclass
class Env:
    srv: ServerHandle
    client: Client
    cache: SLOConfigCache
    controller: NodeMetricController

    def policy(self, node: str) -> dict[str, Any] | None:
        try:
            return self.client.get(NODE_METRICS, node)["spec"]["metricCollectPolicy"]
        except Exception:  # noqa: BLE001 - not there (yet)
            return None

    def reconcile_now(self, node: str) -> None:
        """Reconcile once the controller's cache holds the stored NodeMetric."""
        def cached() -> bool:
            held = self.controller.node_metrics.lister.get(node)
            stored = self.client.get(NODE_METRICS, node)["metadata"]["resourceVersion"]
            return held is not None and held.metadata.resource_version == stored
        wait_for(cached, 10, what=f"NodeMetric {node} in the informer cache")
        self.controller.reconcile(node)

    def set_config(self, colocation: Any) -> None:
        text = colocation if isinstance(colocation, str) else json.dumps(colocation)
        cm = {"metadata": {"name": NAME, "namespace": NS}, "data": {"colocation-config": text}}
        try:
            current = self.client.get(CONFIGMAPS, NAME, NS)
        except Exception:  # noqa: BLE001 - first write
            self.client.create(CONFIGMAPS, cm)
            return
        current["data"] = cm["data"]
        self.client.update(CONFIGMAPS, current)


@pytest.fixture
def env() -> Iterator[Env]:
    srv = start()
    client = Client.from_kubeconfig(srv.kubeconfig, qps=-1)  # no client-side throttling
    install_crds(client)
    client.create(NAMESPACES, {"metadata": {"name": NS}})
    factory = SharedInformerFactory(client)
    cache = SLOConfigCache(factory, None, NS, NAME)
    controller = NodeMetricController(client, factory, cache, workers=2)
    factory.start()
    assert controller.start(sync_timeout=10)
    yield Env(srv, client, cache, controller)
    controller.stop(5)
    factory.shutdown()
    srv.stop()


def test_every_node_gets_a_nodemetric_with_the_default_policy(env: Env) -> None:
    names = env.srv.add_nodes(3)
    for name in names:
        assert wait_for(partial(env.policy, name), 10, what=f"NodeMetric {name}") \
            == DEFAULT_POLICY
    nm = env.client.get(NODE_METRICS, names[0])
    assert nm["metadata"]["name"] == names[0]
    assert "namespace" not in nm["metadata"]


def test_enabled_config_and_node_overrides_are_written(env: Env) -> None:
    env.srv.add_nodes(1, prefix="plain-")
    env.srv.add_nodes(1, prefix="pool-", labels={"pool": "batch"})
    env.set_config({
        "enable": True,
        "metricAggregateDurationSeconds": 600,
        "metricReportIntervalSeconds": 30,
        "metricAggregatePolicy": {"durations": ["5m0s", "1h0m0s"]},
        "nodeConfigs": [{
            "name": "batch-pool",
            "nodeSelector": {"matchLabels": {"pool": "batch"}},
            "metricReportIntervalSeconds": 10,
            "metricMemoryCollectPolicy": "usageWithHotPageCache",
        }],
    })
    cluster = {"aggregateDurationSeconds": 600, "reportIntervalSeconds": 30,
               "nodeAggregatePolicy": {"durations": ["5m0s", "1h0m0s"]},
               "nodeMemoryCollectPolicy": "usageWithoutPageCache"}
    wait_for(lambda: env.policy("plain-0") == cluster, 10, what="cluster policy")
    wait_for(lambda: env.policy("pool-0") == {
        **cluster, "reportIntervalSeconds": 10,
        "nodeMemoryCollectPolicy": "usageWithHotPageCache"}, 10, what="node override")


def test_disabled_colocation_ignores_the_configured_policy(env: Env) -> None:
    env.srv.add_nodes(1, labels={"pool": "batch"})
    env.set_config({
        "enable": False, "metricReportIntervalSeconds": 5,
        "nodeConfigs": [{"nodeSelector": {"matchLabels": {"pool": "batch"}}, "enable": True}],
    })
    wait_for(lambda: env.cache.current().colocation.metric_report_interval_seconds == 5, 5)
    wait_for(lambda: env.policy("node-0"), 10)
    # The reconcile after the config change wrote the defaults (node configs cannot enable).
    env.reconcile_now("node-0")
    assert env.policy("node-0") == DEFAULT_POLICY


def test_node_labels_change_the_policy(env: Env) -> None:
    env.srv.add_nodes(1)
    env.set_config({"enable": True, "nodeConfigs": [
        {"nodeSelector": {"matchLabels": {"fast": "true"}}, "metricReportIntervalSeconds": 15}]})
    wait_for(lambda: env.policy("node-0") == DEFAULT_POLICY, 10)
    node = env.client.get(NODES, "node-0")
    node["metadata"].setdefault("labels", {})["fast"] = "true"
    env.client.update(NODES, node)
    wait_for(lambda: (env.policy("node-0") or {}).get("reportIntervalSeconds") == 15, 10,
             what="relabelled node's policy")


def test_refused_config_leaves_existing_specs_and_creates_with_the_last_good(env: Env) -> None:
    env.srv.add_nodes(1)
    env.set_config({"enable": True, "metricReportIntervalSeconds": 20})
    wait_for(lambda: (env.policy("node-0") or {}).get("reportIntervalSeconds") == 20, 10)
    env.set_config({"enable": True, "metricReportIntervalSeconds": 0})
    wait_for(lambda: env.cache.is_error("colocation-config"), 5)
    env.srv.add_nodes(1, start=1)
    wait_for(lambda: env.policy("node-1"), 10)
    assert (env.policy("node-1") or {}).get("reportIntervalSeconds") == 20
    env.reconcile_now("node-0")
    assert (env.policy("node-0") or {}).get("reportIntervalSeconds") == 20


def test_spec_edited_by_hand_is_restored(env: Env) -> None:
    env.srv.add_nodes(1)
    wait_for(lambda: env.policy("node-0"), 10)
    nm = env.client.get(NODE_METRICS, "node-0")
    nm["spec"]["metricCollectPolicy"]["reportIntervalSeconds"] = 1
    env.client.update(NODE_METRICS, nm)
    wait_for(lambda: env.policy("node-0") == DEFAULT_POLICY, 10, what="spec restored")


def test_nodemetric_goes_with_its_node_and_orphans_are_removed(env: Env) -> None:
    env.srv.add_nodes(2)
    wait_for(lambda: env.policy("node-1"), 10)
    env.client.delete(NODES, "node-1")
    env.client.create(NODE_METRICS, {"apiVersion": "slo.koordinator.sh/v1alpha1",
                                     "kind": "NodeMetric", "metadata": {"name": "ghost"}})
    names = lambda: {i["metadata"]["name"]  # noqa: E731
                     for i in env.client.list(NODE_METRICS)["items"]}
    wait_for(lambda: names() == {"node-0"}, 10, what="only node-0's NodeMetric left")


def test_an_unreadable_nodemetric_is_left_alone(env: Env, caplog) -> None:
    # cpu 1e30 is refused by the NodeMetric model, so a controller that starts after such a
    # report has no copy of it: it must not retry creating it forever.
    env.srv.add_nodes(1)
    wait_for(lambda: env.policy("node-0"), 30, what="NodeMetric node-0")
    nm = env.client.get(NODE_METRICS, "node-0")
    nm["status"] = {"nodeMetric": {"nodeUsage": {"resources": {"cpu": "1e30"}}}}
    env.client.update_status(NODE_METRICS, nm)
    factory = SharedInformerFactory(env.client)
    fresh = NodeMetricController(env.client, factory, SLOConfigCache(factory, None, NS, NAME))
    factory.start()
    try:
        assert factory.wait_for_cache_sync(30)
        wait_for(lambda: fresh.nodes.lister.get("node-0"), 30, what="node-0 cached")
        assert fresh.node_metrics.lister.get("node-0") is None
        assert fresh.reconcile("node-0") is None  # no AlreadyExists raised
        assert "NodeMetric node-0 exists but cannot be read" in caplog.text
        # koordlet's next report is readable: the controller sees it again.
        nm = env.client.get(NODE_METRICS, "node-0")
        nm["status"]["nodeMetric"]["nodeUsage"]["resources"]["cpu"] = "2"
        env.client.update_status(NODE_METRICS, nm)
        wait_for(lambda: fresh.node_metrics.lister.get("node-0"), 30,
                 what="the readable NodeMetric cached")
    finally:
        factory.shutdown()
