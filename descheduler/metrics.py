"""koord-descheduler's Prometheus metrics: upstream ``pkg/descheduler/metrics`` (after
sigs.k8s.io/descheduler's ``metrics.PodsEvicted``), in the default registry.

``descheduler_pods_evicted`` counts eviction attempts by result (``success``/``error``), strategy
(the plugin that asked), namespace and node. Upstream names it without a ``_total`` suffix, so it
is a Gauge that only ever goes up: prometheus-client would append ``_total`` to a Counter, and
the series name is what dashboards and alerts match on (as koordlet's metrics do).
"""

from __future__ import annotations

from prometheus_client import Gauge

RESULT_SUCCESS = "success"
RESULT_ERROR = "error"

PODS_EVICTED = Gauge(
    "descheduler_pods_evicted",
    "Number of evicted pods, by the result, by the strategy, by the namespace, by the node name. "
    "'error' result means a pod could not be evicted",
    ["result", "strategy", "namespace", "node"])


def record_eviction(result: str, strategy: str, namespace: str, node: str) -> None:
    """One eviction attempt."""
    PODS_EVICTED.labels(result, strategy, namespace, node).inc()


__all__ = ["PODS_EVICTED", "RESULT_ERROR", "RESULT_SUCCESS", "record_eviction"]
