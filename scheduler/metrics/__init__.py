"""koord-scheduler's Prometheus metrics (kube-scheduler ``pkg/scheduler/metrics``)."""

from scheduler.metrics.metrics import SchedulerMetrics

__all__ = ["SchedulerMetrics"]
