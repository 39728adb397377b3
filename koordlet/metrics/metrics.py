"""koordlet's Prometheus metrics: upstream `pkg/koordlet/metrics`.

Subsystem `koordlet`, so series are named `koordlet_<name>` as upstream's; every series carries
the `node` label. Upstream keeps two registries: internal (`/internal-metrics`) and external
(`/external-metrics`); `/metrics` serves both. Counters that upstream names without a `_total`
suffix are Gauges here, because prometheus-client always appends `_total` to a Counter and the
series name is what dashboards and alerts match on. A labelled series is created by its first
`record_*` call, as upstream's `WithLabelValues(...).Set`, so none is exported before it has a
value.

Performance series (upstream ``psi.go``, ``cpi.go``, registered external): ``pod_psi`` and
``container_psi`` per resource type, precision and degree (the ``full`` degree only where the
kernel has it), ``container_cpi`` per ``cpi_field``; each collection round resets them first, as
upstream, so a pod that is gone loses its series. NodeMetric series (``node_metric.go``, gate
``NodeMetricPromMetrics``): the node and system usage the last NodeMetric status reported,
reset on every report; upstream's per-NUMA ones are not, as the status here has no NUMA usage.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Gauge

SUBSYSTEM = "koordlet"
NODE_KEY = "node"

INTERNAL = CollectorRegistry()
EXTERNAL = CollectorRegistry()

START_TIME = Gauge("start_time", "the start time of koordlet", [NODE_KEY],
                   namespace=SUBSYSTEM, registry=INTERNAL)
NODE_USED_CPU_CORES = Gauge("node_used_cpu_cores", "Number of cpu cores used by node in realtime",
                            [NODE_KEY], namespace=SUBSYSTEM, registry=INTERNAL)
NODE_USED_MEMORY_BYTES = Gauge("node_used_memory_bytes",
                               "Number of memory used by node in realtime", [NODE_KEY],
                               namespace=SUBSYSTEM, registry=INTERNAL)
BE_SUPPRESS_CPU_CORES = Gauge("be_suppress_cpu_cores", "Number of cores suppress by koordlet",
                              [NODE_KEY, "type"], namespace=SUBSYSTEM, registry=INTERNAL)
BE_SUPPRESS_LS_USED_CPU_CORES = Gauge("be_suppress_ls_used_cpu_cores",
                                      "Number of cpu cores used by LS", [NODE_KEY],
                                      namespace=SUBSYSTEM, registry=INTERNAL)
BE_SUPPRESS_BE_USED_CPU_CORES = Gauge("be_suppress_be_used_cpu_cores",
                                      "Number of cpu cores used by BE", [NODE_KEY],
                                      namespace=SUBSYSTEM, registry=INTERNAL)
POD_EVICTION = Gauge("pod_eviction", "Number of eviction launched by koordlet",
                     [NODE_KEY, "reason"], namespace=SUBSYSTEM, registry=INTERNAL)
POD_EVICTION_DETAIL = Gauge("pod_eviction_detail", "evict detail launched by koordlet",
                            [NODE_KEY, "namespace", "pod", "strategy", "reason"],
                            namespace=SUBSYSTEM, registry=INTERNAL)
HOST_APPLICATION_RESOURCE_USAGE = Gauge(
    "host_application_resource_usage", "Host application resource usage collected by koordlet",
    [NODE_KEY, "host_application_name", "resource", "priority_class", "qos"],
    namespace=SUBSYSTEM, registry=INTERNAL)


CONTAINER_ID = "container_id"
CONTAINER_NAME = "container_name"
POD_UID = "pod_uid"
POD_NAME = "pod_name"
POD_NAMESPACE = "pod_namespace"
RESOURCE_KEY = "resource"
UNIT_KEY = "unit"
UNIT_CORE = "core"
UNIT_BYTE = "byte"
_PSI_LABELS = ["psi_resource_type", "psi_precision", "psi_degree", "cpu_full_supported"]
_CONTAINER = [CONTAINER_ID, CONTAINER_NAME, POD_UID, POD_NAME, POD_NAMESPACE]

CONTAINER_PSI = Gauge("container_psi", "Container psi collected by koordlet",
                      [NODE_KEY, *_CONTAINER, *_PSI_LABELS], namespace=SUBSYSTEM,
                      registry=EXTERNAL)
POD_PSI = Gauge("pod_psi", "Pod psi collected by koordlet",
                [NODE_KEY, POD_UID, POD_NAME, POD_NAMESPACE, *_PSI_LABELS],
                namespace=SUBSYSTEM, registry=EXTERNAL)
CONTAINER_CPI = Gauge("container_cpi", "Container cpi collected by koordlet",
                      [NODE_KEY, CONTAINER_ID, CONTAINER_NAME, POD_UID, POD_NAME, POD_NAMESPACE,
                       "cpi_field"], namespace=SUBSYSTEM, registry=EXTERNAL)
NODE_METRIC_NODE_USAGE = Gauge("node_metric_node_usage",
                               "the node usage reported in the NodeMetric",
                               [NODE_KEY, RESOURCE_KEY, UNIT_KEY], namespace=SUBSYSTEM,
                               registry=INTERNAL)
NODE_METRIC_SYSTEM_USAGE = Gauge("node_metric_system_usage",
                                 "the system usage reported in the NodeMetric",
                                 [NODE_KEY, RESOURCE_KEY, UNIT_KEY], namespace=SUBSYSTEM,
                                 registry=INTERNAL)

_node_name = ""


def register(node_name: str) -> None:
    """Sets the `node` label for every series (upstream `metrics.Register(node)`)."""
    global _node_name
    _node_name = node_name


def node_name() -> str:
    return _node_name


def record_node_used_cpu_cores(cores: float) -> None:
    NODE_USED_CPU_CORES.labels(_node_name).set(cores)


def record_node_used_memory_bytes(value: float) -> None:
    NODE_USED_MEMORY_BYTES.labels(_node_name).set(value)


def record_be_suppress_cpu_cores(policy_type: str, cores: float) -> None:
    BE_SUPPRESS_CPU_CORES.labels(_node_name, policy_type).set(cores)


def record_pod_eviction(namespace: str, pod: str, strategy: str, reason: str) -> None:
    POD_EVICTION.labels(_node_name, reason).inc()
    POD_EVICTION_DETAIL.labels(_node_name, namespace, pod, strategy, reason).inc()


def reset_host_application_resource_usage() -> None:
    """Drops every application's series, so one gone from NodeSLO is no longer exported."""
    HOST_APPLICATION_RESOURCE_USAGE.clear()


def record_host_application_resource_usage(resource: str, name: str, priority: str, qos: str,
                                           value: float) -> None:
    HOST_APPLICATION_RESOURCE_USAGE.labels(_node_name, name, resource, priority, qos).set(value)


@dataclass(slots=True, frozen=True)
class PodLabels:
    """Who a pod-level series is about."""

    uid: str
    name: str
    namespace: str


@dataclass(slots=True, frozen=True)
class PSIRecord:
    """One PSI value: ``resource_type`` cpu/mem/io, ``precision`` avg10/avg60/avg300,
    ``degree`` some/full; ``full_supported`` is that resource's (upstream's label name says
    cpu because only the cpu file lacks the full line on some kernels)."""

    resource_type: str
    precision: str
    degree: str
    value: float
    full_supported: bool

    def labels(self) -> tuple[str, str, str, str]:
        return (self.resource_type, self.precision, self.degree,
                "true" if self.full_supported else "false")


def reset_psi() -> None:
    POD_PSI.clear()
    CONTAINER_PSI.clear()


def record_pod_psi(pod: PodLabels, records: Iterable[PSIRecord]) -> None:
    for r in records:
        POD_PSI.labels(_node_name, pod.uid, pod.name, pod.namespace, *r.labels()).set(r.value)


def record_container_psi(pod: PodLabels, container_id: str, container_name: str,
                         records: Iterable[PSIRecord]) -> None:
    for r in records:
        CONTAINER_PSI.labels(_node_name, container_id, container_name, pod.uid, pod.name,
                             pod.namespace, *r.labels()).set(r.value)


def reset_container_cpi() -> None:
    CONTAINER_CPI.clear()


def record_container_cpi(pod: PodLabels, container_id: str, container_name: str,
                         cycles: float, instructions: float) -> None:
    base = (_node_name, container_id, container_name, pod.uid, pod.name, pod.namespace)
    CONTAINER_CPI.labels(*base, "cycles").set(cycles)
    CONTAINER_CPI.labels(*base, "instructions").set(instructions)


def reset_node_metric_usages() -> None:
    NODE_METRIC_NODE_USAGE.clear()
    NODE_METRIC_SYSTEM_USAGE.clear()


def record_node_metric_node_usage(resource: str, unit: str, value: float) -> None:
    NODE_METRIC_NODE_USAGE.labels(_node_name, resource, unit).set(value)


def record_node_metric_system_usage(resource: str, unit: str, value: float) -> None:
    NODE_METRIC_SYSTEM_USAGE.labels(_node_name, resource, unit).set(value)
