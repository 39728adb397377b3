"""koordlet's Prometheus metrics: upstream `pkg/koordlet/metrics`.

Subsystem `koordlet`, so series are named `koordlet_<name>` as upstream's; every series carries
the `node` label. Upstream keeps two registries: internal (`/internal-metrics`) and external
(`/external-metrics`); `/metrics` serves both. Counters that upstream names without a `_total`
suffix are Gauges here, because prometheus-client always appends `_total` to a Counter and the
series name is what dashboards and alerts match on. A labelled series is created by its first
`record_*` call, as upstream's `WithLabelValues(...).Set`, so none is exported before it has a
value.
"""

from __future__ import annotations

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
