"""``NodeUsageGauges``: exports what a node collector (NodeResourceCollector or the simulated
source) reports as ``koordlet_node_used_{cpu_cores,memory_bytes}``, which upstream records in
``pkg/koordlet/metricsadvisor/collectors/noderesource``.

Apart from the collector so that the collector alone (and the collection benchmark) does not
load prometheus_client.
"""

from __future__ import annotations

from koordlet.metriccache import metric_types as mt
from koordlet.metriccache.metric_cache import MetricSample
from koordlet.metrics import metrics
from koordlet.metricsadvisor.framework import Collector


class NodeUsageGauges:
    """Wraps a node collector to set ``koordlet_node_used_{cpu_cores,memory_bytes}`` from its
    samples; the series appear with the first collection."""

    def __init__(self, inner: Collector) -> None:
        self.inner = inner
        self.name = inner.name

    def collect(self, now: float) -> list[MetricSample]:
        samples = self.inner.collect(now)
        for s in samples:
            if s.kind == mt.NODE_CPU_USAGE:
                metrics.record_node_used_cpu_cores(s.value)
            elif s.kind == mt.NODE_MEMORY_USAGE:
                metrics.record_node_used_memory_bytes(s.value)
        return samples
