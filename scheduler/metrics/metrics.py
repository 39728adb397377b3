"""kube-scheduler's metrics, under their upstream names, labels and buckets.

Corresponds to kube-scheduler ``pkg/scheduler/metrics/metrics.go`` (v1.35). The metrics live
in one ``SchedulerMetrics`` object per registry, so tests build theirs on a fresh
``CollectorRegistry`` instead of colliding on the process-wide one. Owners of the values:

* the scheduling loop: ``observe_attempt`` (``schedule_attempts_total``,
  ``scheduling_attempt_duration_seconds`` and, for scheduled pods, ``pod_scheduling_attempts``
  and ``pod_scheduling_sli_duration_seconds``), ``scheduling_algorithm_duration_seconds``,
  ``permit_wait_duration_seconds``;
* the framework: ``observe_plugin`` (sampled) and ``observe_extension_point``;
* the scheduling queue: ``pending_pods`` (read from the queue at scrape time),
  ``queue_incoming_pods_total`` and ``unschedulable_pods``;
* preemption: ``preemption_attempts_total`` and ``preemption_victims``;
* the cache: ``scheduler_cache_size`` (upstream's name really is
  ``scheduler_scheduler_cache_size``);
* Koordinator's Reservation controller: ``reservation_status_phase`` and
  ``reservation_resource_allocated`` (koordinator ``pkg/scheduler/metrics``).

Durations are seconds. The SLI duration runs from the pod's first entry into activeQ on the
queue's monotonic clock, so ``clock`` must be the clock the queue uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

from pkg.util.clock import REAL_CLOCK, Clock

if TYPE_CHECKING:
    from scheduler.framework.queue import QueuedPodInfo
    from scheduler.framework.status import Status

# Results of a scheduling attempt (label ``result``).
SCHEDULED = "scheduled"
UNSCHEDULABLE = "unschedulable"
ERROR = "error"

# Attempts from this many on share one SLI label, as upstream's getAttemptsLabel.
_MAX_ATTEMPTS_LABEL = 15


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Upstream ``metrics.ExponentialBuckets``: start, start*factor, ... (count bounds)."""
    return tuple(start * factor ** i for i in range(count))


def _status_label(status: Status | None) -> str:
    return "Success" if status is None else status.code.display()


class SchedulerMetrics:
    """Every scheduler metric, registered once on ``registry``."""

    def __init__(self, registry: CollectorRegistry = REGISTRY,
                 clock: Clock = REAL_CLOCK) -> None:
        self._clock = clock
        r = registry
        self.schedule_attempts = Counter(
            "scheduler_schedule_attempts_total",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod "
            "could not be scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"], registry=r)
        self.scheduling_attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"], buckets=exponential_buckets(0.001, 2, 15), registry=r)
        self.scheduling_algorithm_duration = Histogram(
            "scheduler_scheduling_algorithm_duration_seconds",
            "Scheduling algorithm latency in seconds",
            buckets=exponential_buckets(0.001, 2, 15), registry=r)
        self.pending_pods = Gauge(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in "
            "activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means "
            "number of pods in unschedulablePods that the scheduler attempted to schedule and "
            "failed; 'gated' is the number of unschedulable pods that the scheduler never "
            "attempted to schedule because they are gated.",
            ["queue"], registry=r)
        self.plugin_execution_duration = Histogram(
            "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            ["plugin", "extension_point", "status"],
            buckets=exponential_buckets(0.00001, 1.5, 20), registry=r)
        self.framework_extension_point_duration = Histogram(
            "scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ["extension_point", "status", "profile"],
            buckets=exponential_buckets(0.0001, 2, 12), registry=r)
        self.queue_incoming_pods = Counter(
            "scheduler_queue_incoming_pods_total",
            "Number of pods added to scheduling queues by event and queue type.",
            ["queue", "event"], registry=r)
        self.pod_scheduling_attempts = Histogram(
            "scheduler_pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            buckets=exponential_buckets(1, 2, 5), registry=r)
        self.pod_scheduling_sli_duration = Histogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the "
            "scheduling queue and might involve multiple scheduling attempts.",
            ["attempts"], buckets=exponential_buckets(0.01, 2, 20), registry=r)
        self.preemption_attempts = Counter(
            "scheduler_preemption_attempts_total",
            "Total preemption attempts in the cluster till now", registry=r)
        # More than 64 victims is rare: [64, +Inf) is one bucket.
        self.preemption_victims = Histogram(
            "scheduler_preemption_victims", "Number of selected preemption victims",
            buckets=exponential_buckets(1, 2, 7), registry=r)
        self.permit_wait_duration = Histogram(
            "scheduler_permit_wait_duration_seconds", "Duration of waiting on permit.",
            ["result"], buckets=exponential_buckets(0.001, 2, 15), registry=r)
        self.cache_size = Gauge(
            "scheduler_scheduler_cache_size",
            "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
            ["type"], registry=r)
        self.unschedulable_pods = Gauge(
            "scheduler_unschedulable_pods",
            "The number of unschedulable pods broken down by plugin name. A pod will "
            "increment the gauge for all plugins that caused it to not schedule and so this "
            "metric have meaning only when broken down by plugin.",
            ["plugin", "profile"], registry=r)
        self.plugin_evaluation = Counter(
            "scheduler_plugin_evaluation_total",
            "Number of attempts to schedule pods by each plugin and the extension point "
            "(available only in PreFilter and Filter.).",
            ["plugin", "extension_point", "profile"], registry=r)
        # Koordinator's (pkg/scheduler/metrics), written by the Reservation controller.
        self.reservation_status_phase = Gauge(
            "scheduler_reservation_status_phase",
            "The current number of reservations in each status phase (e.g. Pending, "
            "Available, Succeeded, Failed)", ["name", "phase"], registry=r)
        self.reservation_resource_allocated = Gauge(
            "scheduler_reservation_resource_allocated",
            "Utilization of a specific resource in a reservation (allocated / allocatable).",
            ["name", "resource"], registry=r)

    def observe_attempt(self, result: str, profile: str, duration: float,
                        qpi: QueuedPodInfo | None = None) -> None:
        """One scheduling attempt ended with ``result`` (scheduled|unschedulable|error).

        For a scheduled pod, also its number of attempts and its end-to-end latency.
        """
        self.schedule_attempts.labels(result, profile).inc()
        self.scheduling_attempt_duration.labels(result, profile).observe(duration)
        if result != SCHEDULED or qpi is None:
            return
        self.pod_scheduling_attempts.observe(qpi.attempts)
        if qpi.initial_attempt_timestamp is not None:
            attempts = (str(qpi.attempts) if qpi.attempts < _MAX_ATTEMPTS_LABEL
                        else f"{_MAX_ATTEMPTS_LABEL}+")
            self.pod_scheduling_sli_duration.labels(attempts).observe(
                self._clock.monotonic() - qpi.initial_attempt_timestamp)

    def observe_plugin(self, plugin: str, extension_point: str, status: Status | None,
                       duration: float) -> None:
        self.plugin_execution_duration.labels(plugin, extension_point,
                                              _status_label(status)).observe(duration)

    def observe_extension_point(self, extension_point: str, status: Status | None,
                                profile: str, duration: float) -> None:
        self.framework_extension_point_duration.labels(
            extension_point, _status_label(status), profile).observe(duration)


__all__ = ["ERROR", "SCHEDULED", "UNSCHEDULABLE", "SchedulerMetrics", "exponential_buckets"]
