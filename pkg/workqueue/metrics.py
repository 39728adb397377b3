"""Prometheus metrics of named workqueues.

Corresponds to client-go ``util/workqueue/metrics.go`` as controller-runtime registers it
(``workqueue_depth``, ``workqueue_adds_total``, ``workqueue_queue_duration_seconds``,
``workqueue_work_duration_seconds``, ``workqueue_retries_total``, each labelled with the
queue's ``name``). Unnamed queues record nothing.
"""

from __future__ import annotations

import threading

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

_BUCKETS = tuple(1e-8 * 10 ** i for i in range(10))  # 10 ns .. 10 s, as client-go


class WorkqueueMetrics:
    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self.depth = Gauge("workqueue_depth", "Current depth of workqueue", ["name"],
                           registry=registry)
        self.adds = Counter("workqueue_adds_total", "Total number of adds handled by workqueue",
                            ["name"], registry=registry)
        self.queue_duration = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            ["name"], buckets=_BUCKETS, registry=registry)
        self.work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            ["name"], buckets=_BUCKETS, registry=registry)
        self.retries = Counter("workqueue_retries_total",
                               "Total number of retries handled by workqueue", ["name"],
                               registry=registry)


_default: WorkqueueMetrics | None = None
_lock = threading.Lock()


def default_metrics() -> WorkqueueMetrics:
    """The metrics on the process-wide prometheus registry (created on first use)."""
    global _default
    with _lock:
        if _default is None:
            _default = WorkqueueMetrics()
        return _default


__all__ = ["WorkqueueMetrics", "default_metrics"]
