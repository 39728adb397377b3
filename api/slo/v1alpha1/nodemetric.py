"""NodeMetric: how koordlet collects a node's usage (spec) and what it reported (status).

Corresponds to upstream `apis/slo/v1alpha1/nodemetric_types.go` and ``ResourceMap`` of
`apis/slo/v1alpha1/resources.go`. One NodeMetric per node, named like the node: koord-manager
writes the spec from ``colocation-config``, koordlet writes the status.

Usage quantities are ``MeasuredResourceList``s: a negative, non-finite or beyond-int64 value
(``pkg.util.podresources.measured_quantity_int``: Go's MilliValue for cpu, Value otherwise) is
refused naming the field. kube-apiserver's schema accepts ``cpu: 1e30``, so the API server
stores such a NodeMetric and consumers reading raw JSON check it again.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, ClassVar

from pydantic import AfterValidator, Field

from api.base import CRD_REQUIRED, ApiModel, GoJSONModel, Int32, Int64
from api.core import ResourceList
from api.meta import Duration, KubeObject, Time
from api.scheduling.v1alpha1.device import DeviceInfo
from api.slo.v1alpha1.extensions import ExtensionsMap
from pkg.util.podresources import measured_quantity_int

GROUP = "slo.koordinator.sh"
VERSION = "v1alpha1"


def _check_measured(resources: dict[str, str]) -> dict[str, str]:
    for name, quantity in resources.items():
        measured_quantity_int(name, quantity)
    return resources


# A ResourceList a component measured: the same wire form, no absurd value.
MeasuredResourceList = Annotated[ResourceList, AfterValidator(_check_measured)]


class AggregationType(StrEnum):
    """Keys of ``AggregatedUsage.usage``."""

    AVG = "avg"
    P50 = "p50"
    P90 = "p90"
    P95 = "p95"
    P99 = "p99"


class MemoryCollectPolicy(StrEnum):
    """``nodeMemoryCollectPolicy``: what counts as a node's memory usage (CRD enum)."""

    USAGE_WITH_HOT_PAGE_CACHE = "usageWithHotPageCache"
    USAGE_WITHOUT_PAGE_CACHE = "usageWithoutPageCache"
    USAGE_WITH_PAGE_CACHE = "usageWithPageCache"  # not implemented upstream


class AggregatePolicy(GoJSONModel):
    """The windows over which node usage is aggregated (also used in colocation-config)."""

    durations: list[Duration] | None = None


class NodeMetricCollectPolicy(ApiModel):
    """How koordlet aggregates and reports; set by koord-manager from colocation-config."""

    # A pointer in Go: an explicit "" is written (and overwrites when configs are merged).
    go_pointer_strings: ClassVar[frozenset[str]] = frozenset({"node_memory_collect_policy"})

    # Window of the aggregated node usage, in seconds.
    aggregate_duration_seconds: Int64 | None = None
    # How often koordlet writes the status, in seconds.
    report_interval_seconds: Int64 | None = None
    # Windows reported in ``aggregatedNodeUsages``.
    node_aggregate_policy: AggregatePolicy | None = None
    node_memory_collect_policy: MemoryCollectPolicy | None = None


class NodeMetricSpec(ApiModel):
    """NodeMetricSpec defines the desired state of NodeMetric."""

    metric_collect_policy: NodeMetricCollectPolicy | None = None


class ResourceMap(ApiModel):
    """A usage: resource quantities plus per-device usage."""

    resources: MeasuredResourceList | None = None
    devices: list[DeviceInfo] | None = None


class AggregatedUsage(ApiModel):
    """Percentile usage over one window (keys of ``usage`` are AggregationType values)."""

    usage: dict[str, ResourceMap] | None = None
    # A struct in Go, so always written.
    duration: Duration = "0s"


class NUMAUsage(ApiModel):
    """Usage of one NUMA node."""

    numa_node_id: Int32 = Field(0, alias="numaNodeID", json_schema_extra=CRD_REQUIRED)
    node_usage: ResourceMap | None = None
    system_usage: ResourceMap | None = None


class NodeMetricInfo(ApiModel):
    """Node-level usage."""

    # Whole-node usage.
    node_usage: ResourceMap | None = None
    # Percentile usage per window; reported only with enough samples.
    aggregated_node_usages: list[AggregatedUsage] | None = None
    # Node usage minus pods minus host applications.
    system_usage: ResourceMap | None = None
    aggregated_system_usages: list[AggregatedUsage] | None = None
    numa_usages: list[NUMAUsage] | None = None


class PodMetricInfo(ApiModel):
    """Usage of one pod."""

    name: str | None = None
    namespace: str | None = None
    pod_usage: ResourceMap | None = None
    # Priority class name (``koord-prod`` ...) and QoS class (``LS`` ...).
    priority: str | None = None
    qos: str | None = None
    extensions: ExtensionsMap | None = None


class HostApplicationMetricInfo(ApiModel):
    """Usage of a host application declared in host-application-config."""

    name: str | None = None
    usage: ResourceMap | None = None
    priority: str | None = None
    qos: str | None = None


class ReclaimableMetric(ApiModel):
    """A predicted resource amount (``prodReclaimableMetric``, ``prodPeakMetric``)."""

    resource: ResourceMap | None = None


class NodeMetricStatus(ApiModel):
    """NodeMetricStatus defines the observed state of NodeMetric."""

    update_time: Time | None = None
    node_metric: NodeMetricInfo | None = None
    pods_metric: list[PodMetricInfo] | None = None
    host_application_metric: list[HostApplicationMetricInfo] | None = None
    # Predicted reclaimable resources of Prod pods.
    prod_reclaimable_metric: ReclaimableMetric | None = None
    # Predicted Prod peak, already including system usage and the safety margin.
    prod_peak_metric: ReclaimableMetric | None = None


class NodeMetric(KubeObject):
    """NodeMetric is the Schema for the nodemetrics API"""

    group: ClassVar[str] = GROUP
    version: ClassVar[str] = VERSION
    plural: ClassVar[str] = "nodemetrics"
    singular: ClassVar[str] = "nodemetric"
    namespaced: ClassVar[bool] = False

    # Optional here (upstream: a struct, so written as {}): upstream's own sample leaves the
    # spec null and must dump back unchanged.
    spec: NodeMetricSpec | None = None
    status: NodeMetricStatus | None = None


__all__ = [
    "GROUP", "VERSION", "AggregatePolicy", "AggregatedUsage", "AggregationType",
    "HostApplicationMetricInfo", "MemoryCollectPolicy", "NUMAUsage", "NodeMetric",
    "NodeMetricCollectPolicy", "NodeMetricInfo", "NodeMetricSpec", "NodeMetricStatus",
    "PodMetricInfo", "ReclaimableMetric", "ResourceMap",
]
