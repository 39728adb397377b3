from __future__ import annotations

from prometheus_client import generate_latest

from koordlet.metriccache import metric_types as mt
from koordlet.metriccache.metric_cache import MetricSample
from koordlet.metrics import metrics
from koordlet.metricsadvisor.gauges import NodeUsageGauges


class _Fixed:
    name = "fixed"

    def collect(self, now: float) -> list[MetricSample]:
        return [MetricSample(mt.NODE_CPU_USAGE, {}, now, 1.5),
                MetricSample(mt.NODE_MEMORY_USAGE, {}, now, 2048.0)]


def _series(node: str) -> list[str]:
    text = generate_latest(metrics.INTERNAL).decode()
    return [line for line in text.splitlines()
            if line.startswith("koordlet_node_used_") and f'node="{node}"' in line]


def test_no_node_usage_series_before_the_first_collection() -> None:
    registered = metrics.node_name()
    metrics.register("gauges-test-node")
    try:
        gauges = NodeUsageGauges(_Fixed())
        assert _series("gauges-test-node") == []
        gauges.collect(0.0)
        assert sorted(_series("gauges-test-node")) == [
            'koordlet_node_used_cpu_cores{node="gauges-test-node"} 1.5',
            'koordlet_node_used_memory_bytes{node="gauges-test-node"} 2048.0']
    finally:
        metrics.register(registered)
