import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from api.core import quantity_value
from api.slo.v1alpha1.host_application import HostApplicationSpec
from koordlet.metriccache import aggregate
from koordlet.metriccache import metric_types as mt
from koordlet.metriccache.metric_cache import MetricCache, MetricCacheConfig, MetricSample
from koordlet.metrics import metrics
from koordlet.reporter.nodemetric_reporter import NodeMetricReporter, resource_map
from koordlet.statesinformer.states_informer import StatesInformer
from pkg.client.informers import SharedInformerFactory
from pkg.client.resources import NODE_METRICS, NODES, PODS
from pkg.client.rest import Client
from pkg.util.clock import FakeClock
from test.apiserver import start
from test.e2e.cluster import install_crds

NOW = 1_700_000_000.0


def fill(cache: MetricCache, seconds: int, uid: str) -> None:
    """A fake collector: one sample a second with a saw-tooth so percentiles differ."""
    for i in range(seconds):
        t = NOW - seconds + 1 + i
        cache.append([
            MetricSample(mt.NODE_CPU_USAGE, {}, t, 1.0 + (i % 10) / 10),
            MetricSample(mt.NODE_MEMORY_USAGE, {}, t, float((4 << 30) + (i % 7) * (1 << 20))),
            MetricSample(mt.POD_CPU_USAGE, {mt.POD_UID: uid}, t, 0.5),
            MetricSample(mt.POD_MEMORY_USAGE, {mt.POD_UID: uid}, t, float(1 << 30))])


@pytest.fixture()
def env() -> Iterator[tuple[Client, StatesInformer]]:
    with start() as srv:
        client = Client.from_kubeconfig(srv.kubeconfig, qps=-1)
        install_crds(client)
        srv.add_nodes(1, cpu="8", memory="32Gi")
        node = client.list(NODES)["items"][0]["metadata"]["name"]
        client.create(NODE_METRICS, {"metadata": {"name": node}, "spec": {
            "metricCollectPolicy": {"reportIntervalSeconds": 45}}})
        client.create(PODS, {"metadata": {"name": "a", "namespace": "default"},
                             "spec": {"nodeName": node, "containers": [{"name": "c",
                                                                        "image": "x"}]}},
                      "default")
        factory = SharedInformerFactory(client)
        states = StatesInformer(factory, node)
        factory.start()
        deadline = time.time() + 20
        while not (states.has_synced() and states.get_all_pods()) and time.time() < deadline:
            time.sleep(0.05)
        try:
            yield client, states
        finally:
            factory.shutdown()


def test_status_equals_cache_aggregates(env: tuple[Client, StatesInformer]) -> None:
    client, states = env
    cache = MetricCache(MetricCacheConfig(metric_expire_seconds=3600))
    # 15 minutes: 5m and 10m windows covered, 30m under half → blank
    fill(cache, 900, states.get_all_pods()[0].uid)
    reporter = NodeMetricReporter(client, states, cache, clock=FakeClock(NOW))
    assert reporter.report(NOW)
    status: dict[str, Any] = client.get(NODE_METRICS, states.node_name)["status"]
    node = status["nodeMetric"]
    win = cache.query(mt.NODE_CPU_USAGE, {}, NOW - 300, NOW)
    mem = cache.query(mt.NODE_MEMORY_USAGE, {}, NOW - 300, NOW)
    assert node["nodeUsage"] == resource_map(win.value(aggregate.AVG), mem.value(aggregate.AVG))
    aggs = {a["duration"]: a["usage"] for a in node["aggregatedNodeUsages"]}
    assert set(aggs) == {"5m0s", "10m0s", "30m0s"}
    assert aggs["30m0s"] == {}
    w10 = cache.query(mt.NODE_CPU_USAGE, {}, NOW - 600, NOW)
    m10 = cache.query(mt.NODE_MEMORY_USAGE, {}, NOW - 600, NOW)
    assert aggs["10m0s"]["p90"] == resource_map(w10.value("P90"), m10.value("P90"))
    assert aggs["10m0s"]["p50"] != aggs["10m0s"]["p99"]
    [pod] = status["podsMetric"]
    assert (pod["name"], pod["priority"], pod["qos"]) == ("a", "koord-batch", "BE")
    assert pod["podUsage"] == {"resources": {"cpu": "500m", "memory": "1Gi"}}


def test_report_interval_from_spec_is_honoured(env: tuple[Client, StatesInformer]) -> None:
    client, states = env
    cache = MetricCache(MetricCacheConfig(metric_expire_seconds=3600))
    fill(cache, 900, states.get_all_pods()[0].uid)
    clock = FakeClock(NOW)
    reporter = NodeMetricReporter(client, states, cache, clock=clock)
    assert reporter.interval() == 45
    stop = threading.Event()
    t = threading.Thread(target=reporter.run, args=(stop,), daemon=True)
    t.start()
    try:
        assert clock.wait_for_waiters(1)
        clock.step(44)
        time.sleep(0.3)
        assert "status" not in client.get(NODE_METRICS, states.node_name)  # not yet
        clock.step(1)
        deadline = time.time() + 10
        while time.time() < deadline and "status" not in client.get(
                NODE_METRICS, states.node_name):
            time.sleep(0.05)
        assert "status" in client.get(NODE_METRICS, states.node_name)
    finally:
        stop.set()
        t.join(5)


def test_host_application_metric_per_app_with_samples_sorted_by_name(
        env: tuple[Client, StatesInformer]) -> None:
    """Upstream's collectHostAppMetric: avg CPU and memory of each NodeSLO host application,
    with its priority and QoS; an application without samples is left out."""
    client, states = env
    cache = MetricCache(MetricCacheConfig(metric_expire_seconds=3600))
    fill(cache, 900, states.get_all_pods()[0].uid)
    readings = ((mt.HOST_APPLICATION_CPU_USAGE, "yarn", 2.0),
                (mt.HOST_APPLICATION_MEMORY_USAGE, "yarn", float(3 << 30)),
                (mt.HOST_APPLICATION_CPU_USAGE, "nginx", 0.25),
                (mt.HOST_APPLICATION_MEMORY_USAGE, "nginx", float(512 << 20)))
    for i in range(300):
        cache.append([MetricSample(kind, {mt.HOST_APP_NAME: name}, NOW - 299 + i, value)
                      for kind, name, value in readings])
    apps = [HostApplicationSpec.model_validate(a) for a in (
        {"name": "yarn", "qos": "BE", "priority": "koord-batch"},
        {"name": "nginx", "qos": "LS"},
        {"name": "no-samples", "qos": "LS"})]
    reporter = NodeMetricReporter(client, states, cache, clock=FakeClock(NOW),
                                  host_apps=lambda: apps)
    assert reporter.report(NOW)
    status = client.get(NODE_METRICS, states.node_name)["status"]
    assert status["hostApplicationMetric"] == [
        {"name": "nginx", "qos": "LS",
         "usage": {"resources": {"cpu": "250m", "memory": "512Mi"}}},
        {"name": "yarn", "qos": "BE", "priority": "koord-batch",
         "usage": {"resources": {"cpu": "2", "memory": "3Gi"}}},
    ]
    apps.clear()  # no applications: the field is left out
    assert reporter.report(NOW)
    assert "hostApplicationMetric" not in client.get(NODE_METRICS, states.node_name)["status"]


def _node_metric_series() -> dict[tuple[str, str, str], float]:
    return {(s.name, s.labels["resource"], s.labels["unit"]): s.value
            for family in metrics.INTERNAL.collect() for s in family.samples
            if s.name.startswith("koordlet_node_metric_") and s.labels["node"] == "nm-node"}


def test_written_status_is_exported_with_node_metric_prom_metrics(
        env: tuple[Client, StatesInformer]) -> None:
    """Upstream's NodeMetricPromMetrics: the gauges say what the written status says; without
    the gate nothing is exported."""
    client, states = env
    cache = MetricCache(MetricCacheConfig(metric_expire_seconds=3600))
    fill(cache, 900, states.get_all_pods()[0].uid)
    registered = metrics.node_name()
    metrics.register("nm-node")
    try:
        metrics.reset_node_metric_usages()
        assert NodeMetricReporter(client, states, cache, clock=FakeClock(NOW)).report(NOW)
        assert _node_metric_series() == {}
        reporter = NodeMetricReporter(client, states, cache, clock=FakeClock(NOW),
                                      prom_metrics=True)
        assert reporter.report(NOW)
        usage = client.get(NODE_METRICS, states.node_name)["status"]["nodeMetric"]["nodeUsage"]
        assert _node_metric_series() == {
            ("koordlet_node_metric_node_usage", "cpu", "core"):
                float(quantity_value(usage["resources"]["cpu"])),
            ("koordlet_node_metric_node_usage", "memory", "byte"):
                float(quantity_value(usage["resources"]["memory"])),
        }
    finally:
        metrics.reset_node_metric_usages()
        metrics.register(registered)
