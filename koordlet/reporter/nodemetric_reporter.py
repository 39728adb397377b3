"""The NodeMetric reporter (upstream ``pkg/koordlet/statesinformer/impl/states_nodemetric.go``,
``nodeMetricInformer.sync`` and ``collectMetric``).

``NodeMetricReporter(client, states, cache, predictor=None, clock=...)``: ``run(stop)`` waits
one ``reportIntervalSeconds`` (re-read from the NodeMetric spec every round, default 60,
floor 30), then ``report(now)``: builds the status from the metric cache and writes it with
``update_status`` to the NodeMetric named after the node as the informer holds it (never
created, never read from the API: a missing one skips the round; a conflict retries on the
informer's newer copy), rate limited to 0.1 QPS burst 2 (a limited round is dropped). A failed
write is logged with the API server's message once per distinct error, not every round.

Status: ``nodeUsage`` (avg over ``aggregateDurationSeconds``), ``aggregatedNodeUsages`` (avg,
p50, p90, p95, p99 per ``nodeAggregatePolicy.durations``; an empty map when the samples span
under half the window), ``systemUsage``/``aggregatedSystemUsages`` from ``sys_*``,
``podsMetric`` (avg per pod, sorted by namespace and name; a pod with no samples is left out),
``hostApplicationMetric`` (avg per NodeSLO host application with samples, sorted by name, with
the application's priority and QoS; left out when none has samples), and
``prodReclaimableMetric``/``prodPeakMetric`` from the peak predictor when one is given.

With ``prom_metrics`` (gate ``NodeMetricPromMetrics``), each written status also replaces the
``koordlet_node_metric_{node,system}_usage`` series (upstream ``metrics/node_metric.go``): cpu
in cores, memory in bytes, as the status says them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from api.core import QuantityFormat, format_quantity, quantity_value
from api.extension.priority import get_pod_priority_class_with_default
from api.extension.qos import get_pod_qos_class_with_default
from api.meta import format_time, parse_duration
from api.slo.v1alpha1.host_application import HostApplicationSpec
from koordlet.metriccache import aggregate
from koordlet.metriccache import metric_types as mt
from koordlet.metriccache.metric_cache import MetricCache
from koordlet.metrics import metrics
from koordlet.prediction.peak_predictor import PeakPredictServer, prod_reclaimable
from koordlet.statesinformer.states_informer import (
    DEFAULT_REPORT_INTERVAL_SECONDS,
    NODE_METRICS,
    StatesInformer,
)
from pkg.client.errors import ApiError
from pkg.client.rest import Client
from pkg.util.clock import REAL_CLOCK, Clock
from pkg.util.flowcontrol import TokenBucket

log = logging.getLogger(__name__)

_UPDATE_TRIES = 5
_RETRY_BACKOFF = 0.01  # seconds, doubled each try (client-go's DefaultRetry starts at 10 ms)

# Cache aggregation type → NodeMetric key (the cache spells P90/P95 in upper case).
AGGREGATIONS = {"avg": aggregate.AVG, "p50": aggregate.P50, "p90": aggregate.P90,
                "p95": aggregate.P95, "p99": aggregate.P99}
_NODE_MEMORY = {"usageWithPageCache": mt.NODE_MEMORY_USAGE_WITH_PAGE_CACHE}
_POD_MEMORY = {"usageWithPageCache": mt.POD_MEMORY_USAGE_WITH_PAGE_CACHE}
_HOST_APP_MEMORY = {"usageWithPageCache": mt.HOST_APPLICATION_MEMORY_USAGE_WITH_PAGE_CACHE}


def resource_map(cpu_cores: float, memory_bytes: float) -> dict[str, Any]:
    """``{cpu: milli(int(cores×1000)), memory: int(bytes)}`` as Go writes the quantities."""
    return {"resources": {
        "cpu": format_quantity(f"{int(cpu_cores * 1000)}m"),
        "memory": format_quantity(Decimal(int(memory_bytes)), QuantityFormat.BINARY_SI)}}


_UNITS = {"cpu": metrics.UNIT_CORE, "memory": metrics.UNIT_BYTE}


def record_prom_metrics(node_metric: dict[str, Any]) -> None:
    """The node and system usage of a written status as gauges, stale series cleared."""
    metrics.reset_node_metric_usages()
    for key, record in (("nodeUsage", metrics.record_node_metric_node_usage),
                        ("systemUsage", metrics.record_node_metric_system_usage)):
        for resource, value in ((node_metric.get(key) or {}).get("resources") or {}).items():
            if resource in _UNITS:
                record(resource, _UNITS[resource], float(quantity_value(value)))


class NodeMetricReporter:
    """``host_apps`` returns the NodeSLO's host applications (statesinformer's view)."""

    def __init__(self, client: Client, states: StatesInformer, cache: MetricCache,
                 predictor: PeakPredictServer | None = None, clock: Clock = REAL_CLOCK,
                 host_apps: Callable[[], Sequence[HostApplicationSpec]] = tuple,
                 prom_metrics: bool = False) -> None:
        self.client = client
        self.prom_metrics = prom_metrics
        self.states = states
        self.cache = cache
        self.host_apps = host_apps
        self.predictor = predictor
        self.clock = clock
        self.limiter = TokenBucket(0.1, 2, clock)
        self._last_error = ""  # the last failed round's API error, logged once

    def _query(self, kind: str, props: dict[str, str], start: float, end: float,
               agg: str) -> float | None:
        try:
            return self.cache.query(kind, props, start, end).value(agg)
        except aggregate.EmptyResultError:
            return None

    def _usage(self, cpu_kind: str, mem_kind: str, props: dict[str, str], start: float,
               end: float) -> dict[str, Any] | None:
        cpu = self._query(cpu_kind, props, start, end, aggregate.AVG)
        memory = self._query(mem_kind, props, start, end, aggregate.AVG)
        return None if cpu is None or memory is None else resource_map(cpu, memory)

    def _aggregated(self, cpu_kind: str, mem_kind: str, durations: list[str],
                    now: float) -> list[dict[str, Any]]:
        out = []
        for d in durations:
            window = parse_duration(d)
            cpu = self.cache.query(cpu_kind, {}, now - window, now)
            memory = self.cache.query(mem_kind, {}, now - window, now)
            usage: dict[str, Any] = {}
            # Cold-start filter: under half the window of samples reports nothing.
            if min(cpu.time_range_seconds(), memory.time_range_seconds()) >= window / 2:
                usage = {key: resource_map(cpu.value(agg), memory.value(agg))
                         for key, agg in AGGREGATIONS.items()}
            out.append({"duration": d, "usage": usage})
        return out

    def collect(self, now: float) -> dict[str, Any] | None:
        """The status to write, or None when node usage cannot be computed."""
        policy = self.states.get_node_metric_spec()["metricCollectPolicy"]
        start = now - policy["aggregateDurationSeconds"]
        mem_policy = policy["nodeMemoryCollectPolicy"]
        node_mem = _NODE_MEMORY.get(mem_policy, mt.NODE_MEMORY_USAGE)
        node_usage = self._usage(mt.NODE_CPU_USAGE, node_mem, {}, start, now)
        if node_usage is None:
            return None
        durations = policy["nodeAggregatePolicy"]["durations"]
        node_metric: dict[str, Any] = {
            "nodeUsage": node_usage,
            "aggregatedNodeUsages": self._aggregated(mt.NODE_CPU_USAGE, node_mem, durations,
                                                     now)}
        sys_usage = self._usage(mt.SYS_CPU_USAGE, mt.SYS_MEMORY_USAGE, {}, start, now)
        if sys_usage is not None:
            node_metric["systemUsage"] = sys_usage
            node_metric["aggregatedSystemUsages"] = self._aggregated(
                mt.SYS_CPU_USAGE, mt.SYS_MEMORY_USAGE, durations, now)
        pods_metric = []
        pods = [m.pod for m in self.states.get_all_pods()]
        for pod in pods:
            usage = self._usage(mt.POD_CPU_USAGE, _POD_MEMORY.get(mem_policy, mt.POD_MEMORY_USAGE),
                                {mt.POD_UID: pod["metadata"].get("uid", "")}, start, now)
            if usage is None:
                continue
            pods_metric.append({
                "namespace": pod["metadata"].get("namespace"), "name": pod["metadata"]["name"],
                "podUsage": usage, "priority": get_pod_priority_class_with_default(pod).value,
                "qos": get_pod_qos_class_with_default(pod).value})
        pods_metric.sort(key=lambda p: (p["namespace"] or "", p["name"]))
        status: dict[str, Any] = {"nodeMetric": node_metric, "podsMetric": pods_metric}
        host_apps_metric = []
        host_app_memory = _HOST_APP_MEMORY.get(mem_policy, mt.HOST_APPLICATION_MEMORY_USAGE)
        for app in self.host_apps():
            name = app.name or ""
            usage = self._usage(mt.HOST_APPLICATION_CPU_USAGE, host_app_memory,
                                {mt.HOST_APP_NAME: name}, start, now)
            if usage is None:
                continue
            # Go's omitempty strings: an unset priority or QoS is left out.
            host_apps_metric.append({k: v for k, v in (
                ("name", name), ("usage", usage), ("priority", app.priority), ("qos", app.qos))
                if v})
        if host_apps_metric:
            status["hostApplicationMetric"] = sorted(host_apps_metric,
                                                     key=lambda m: m.get("name", ""))
        node = self.states.get_node()
        if self.predictor is not None and node is not None:
            reclaimable, peak = prod_reclaimable(self.predictor, node, pods, now)
            status["prodReclaimableMetric"] = {
                "resource": resource_map(reclaimable["cpu"] / 1000, reclaimable["memory"])}
            status["prodPeakMetric"] = {
                "resource": resource_map(peak["cpu"] / 1000, peak["memory"])}
        return status

    def report(self, now: float) -> bool:
        """One round; True when the status was written."""
        status = self.collect(now)
        if status is None:
            log.warning("node metrics not ready, skip reporting NodeMetric")
            return False
        if not self.limiter.try_accept():
            log.info("NodeMetric update rate limited, dropped this round")
            return False
        status["updateTime"] = format_time(datetime.fromtimestamp(now, UTC))
        # As upstream's RetryOnConflictOrTooManyRequests over the lister: the object comes from
        # the informer, so a round costs one request (and needs no get permission).
        for attempt in range(_UPDATE_TRIES):
            obj = self.states.get_node_metric()
            if obj is None:
                return False
            try:
                self.client.update_status(NODE_METRICS, {**obj, "status": status})
                if self.prom_metrics:
                    record_prom_metrics(status["nodeMetric"])
                return True
            except ApiError as e:
                if e.status not in (409, 429) or attempt == _UPDATE_TRIES - 1:
                    raise
            time.sleep(_RETRY_BACKOFF * 2 ** attempt)  # the informer catches up meanwhile
        return False

    def interval(self) -> float:
        return float(self.states.get_node_metric_spec()["metricCollectPolicy"]
                     ["reportIntervalSeconds"])

    def run(self, stop: threading.Event) -> None:
        while True:
            try:
                interval = self.interval()
            except (TypeError, ValueError) as e:
                log.error("NodeMetric %s spec.metricCollectPolicy.reportIntervalSeconds is "
                          "malformed, using %ds: %s", self.states.node_name,
                          DEFAULT_REPORT_INTERVAL_SECONDS, e)
                interval = DEFAULT_REPORT_INTERVAL_SECONDS
            if self.clock.sleep(interval, stop):
                return
            try:
                self.report(self.clock.now())
                self._last_error = ""
            except ApiError as e:
                # The server's words (a 403 names the verb and resource), once until they change.
                if str(e) != self._last_error:
                    self._last_error = str(e)
                    log.error("update NodeMetric %s status failed: %s", self.states.node_name, e)
            except Exception:  # a bad round (cache, malformed spec) must not end reporting
                log.exception("update NodeMetric %s status failed", self.states.node_name)
