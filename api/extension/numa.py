"""CPU and NUMA orchestration of a pod (resource-spec, resource-status, numa-topology-spec) and
the node labels that constrain it.

Corresponds to the pod-level part of upstream `apis/extension/numa_aware.go`. Policy fields are kept
as the strings written (Go does not check them on decoding); the enums list the values upstream
knows. A missing annotation decodes to the empty struct; invalid JSON is an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated

from pydantic import Field

from api.extension.codec import decode_model
from api.extension.constants import NODE_DOMAIN_PREFIX, SCHEDULING_DOMAIN_PREFIX
from api.extension.node_topology import (
    KUBELET_CPU_MANAGER_POLICY_FULL_PCPUS_ONLY_OPTION,
    KUBELET_CPU_MANAGER_POLICY_STATIC,
    KubeletCPUManagerPolicy,
)
from api.extension.payload import ALWAYS, GoInt32, GoPayload, GoResourceList

ANNOTATION_RESOURCE_SPEC = SCHEDULING_DOMAIN_PREFIX + "/resource-spec"
ANNOTATION_RESOURCE_STATUS = SCHEDULING_DOMAIN_PREFIX + "/resource-status"
ANNOTATION_NUMA_TOPOLOGY_SPEC = SCHEDULING_DOMAIN_PREFIX + "/numa-topology-spec"

LABEL_NODE_CPU_BIND_POLICY = NODE_DOMAIN_PREFIX + "/cpu-bind-policy"
LABEL_NODE_NUMA_ALLOCATE_STRATEGY = NODE_DOMAIN_PREFIX + "/numa-allocate-strategy"
LABEL_NUMA_TOPOLOGY_POLICY = NODE_DOMAIN_PREFIX + "/numa-topology-policy"
LABEL_NODE_ENABLE_NUMA_RESERVATION = NODE_DOMAIN_PREFIX + "/enable-numa-reservation"


class CPUBindPolicy(StrEnum):
    DEFAULT = "Default"  # the scheduler's configured default
    FULL_PCPUS = "FullPCPUs"  # pack into as few physical cores as possible
    SPREAD_BY_PCPUS = "SpreadByPCPUs"  # spread logical CPUs evenly across physical cores
    CONSTRAINED_BURST = "ConstrainedBurst"  # constrain the shared pool of a burstable pod


class CPUExclusivePolicy(StrEnum):
    NONE = "None"
    PCPU_LEVEL = "PCPULevel"
    NUMA_NODE_LEVEL = "NUMANodeLevel"


class NodeCPUBindPolicy(StrEnum):
    NONE = "None"
    FULL_PCPUS_ONLY = "FullPCPUsOnly"
    SPREAD_BY_PCPUS = "SpreadByPCPUs"


class NUMAAllocateStrategy(StrEnum):
    MOST_ALLOCATED = "MostAllocated"
    LEAST_ALLOCATED = "LeastAllocated"
    DISTRIBUTE_EVENLY = "DistributeEvenly"


class NUMATopologyPolicy(StrEnum):
    NONE = ""
    BEST_EFFORT = "BestEffort"
    RESTRICTED = "Restricted"
    SINGLE_NUMA_NODE = "SingleNUMANode"


class NumaTopologyExclusive(StrEnum):
    PREFERRED = "Preferred"
    REQUIRED = "Required"


class ResourceSpec(GoPayload):
    """``scheduling.koordinator.sh/resource-spec``: the CPU bind/exclusive policy requested."""

    required_cpu_bind_policy: str = Field("", alias="requiredCPUBindPolicy")
    preferred_cpu_bind_policy: str = Field("", alias="preferredCPUBindPolicy")
    preferred_cpu_exclusive_policy: str = Field("", alias="preferredCPUExclusivePolicy")


class NUMANodeResource(GoPayload):
    """Resources a pod takes from one NUMA node."""

    node: Annotated[GoInt32, ALWAYS] = 0
    resources: GoResourceList | None = None


class ResourceStatus(GoPayload):
    """``scheduling.koordinator.sh/resource-status``: the CPUs and NUMA resources allocated."""

    cpuset: str = ""
    numa_node_resources: list[NUMANodeResource] | None = Field(None, alias="numaNodeResources")


class NUMATopologySpec(GoPayload):
    """``scheduling.koordinator.sh/numa-topology-spec``: the pod-level NUMA policy."""

    numa_topology_policy: str = Field("", alias="numaTopologyPolicy")
    single_numa_node_exclusive: str = Field("", alias="singleNUMANodeExclusive")


def _raw(annotations: Mapping[str, str] | None, key: str) -> str | None:
    return (annotations or {}).get(key)


def parse_resource_spec(annotations: Mapping[str, str] | None) -> ResourceSpec:
    """The pod's ResourceSpec; missing → empty spec."""
    raw = _raw(annotations, ANNOTATION_RESOURCE_SPEC)
    return ResourceSpec() if raw is None else decode_model(
        ANNOTATION_RESOURCE_SPEC, raw, ResourceSpec)


def format_resource_spec(spec: ResourceSpec) -> str:
    return spec.to_go_json()


def parse_resource_status(annotations: Mapping[str, str] | None) -> ResourceStatus:
    """The pod's ResourceStatus; missing → empty status."""
    raw = _raw(annotations, ANNOTATION_RESOURCE_STATUS)
    return ResourceStatus() if raw is None else decode_model(
        ANNOTATION_RESOURCE_STATUS, raw, ResourceStatus)


def format_resource_status(status: ResourceStatus) -> str:
    """As the scheduler writes it before binding, e.g. ``{"cpuset":"0-3"}``."""
    return status.to_go_json()


def parse_numa_topology_spec(annotations: Mapping[str, str] | None) -> NUMATopologySpec:
    """The pod's NUMATopologySpec; missing → empty spec."""
    raw = _raw(annotations, ANNOTATION_NUMA_TOPOLOGY_SPEC)
    return NUMATopologySpec() if raw is None else decode_model(
        ANNOTATION_NUMA_TOPOLOGY_SPEC, raw, NUMATopologySpec)


def format_numa_topology_spec(spec: NUMATopologySpec) -> str:
    return spec.to_go_json()


def get_node_cpu_bind_policy(labels: Mapping[str, str] | None,
                             kubelet_policy: KubeletCPUManagerPolicy | None = None
                             ) -> NodeCPUBindPolicy:
    """The node's CPU bind constraint: the label, where kubelet's static policy with
    ``full-pcpus-only=true`` also means ``FullPCPUsOnly``; unknown values are ``None``."""
    policy = (labels or {}).get(LABEL_NODE_CPU_BIND_POLICY, "")
    kubelet_full_pcpus = (
        kubelet_policy is not None
        and kubelet_policy.policy == KUBELET_CPU_MANAGER_POLICY_STATIC
        and (kubelet_policy.options or {}).get(KUBELET_CPU_MANAGER_POLICY_FULL_PCPUS_ONLY_OPTION)
        == "true")
    if policy == NodeCPUBindPolicy.FULL_PCPUS_ONLY or kubelet_full_pcpus:
        return NodeCPUBindPolicy.FULL_PCPUS_ONLY
    if policy == NodeCPUBindPolicy.SPREAD_BY_PCPUS:
        return NodeCPUBindPolicy.SPREAD_BY_PCPUS
    return NodeCPUBindPolicy.NONE


def get_node_numa_topology_policy(labels: Mapping[str, str] | None) -> str:
    """The node's NUMA topology policy label, as written (``""`` when absent)."""
    return (labels or {}).get(LABEL_NUMA_TOPOLOGY_POLICY, "")


def get_node_numa_allocate_strategy(labels: Mapping[str, str] | None) -> str:
    """The node's NUMA allocate strategy label, as written (``""`` when absent)."""
    return (labels or {}).get(LABEL_NODE_NUMA_ALLOCATE_STRATEGY, "")


def is_numa_reservation_enabled(labels: Mapping[str, str] | None) -> bool:
    """Only exactly ``"true"`` enables splitting kubelet-reserved resources across NUMA zones."""
    return (labels or {}).get(LABEL_NODE_ENABLE_NUMA_RESERVATION) == "true"


__all__ = [
    "ANNOTATION_NUMA_TOPOLOGY_SPEC", "ANNOTATION_RESOURCE_SPEC", "ANNOTATION_RESOURCE_STATUS",
    "LABEL_NODE_CPU_BIND_POLICY", "LABEL_NODE_ENABLE_NUMA_RESERVATION",
    "LABEL_NODE_NUMA_ALLOCATE_STRATEGY", "LABEL_NUMA_TOPOLOGY_POLICY", "CPUBindPolicy",
    "CPUExclusivePolicy", "NUMAAllocateStrategy", "NUMANodeResource", "NUMATopologyPolicy",
    "NUMATopologySpec", "NodeCPUBindPolicy", "NumaTopologyExclusive", "ResourceSpec",
    "ResourceStatus", "format_numa_topology_spec", "format_resource_spec",
    "format_resource_status", "get_node_cpu_bind_policy", "get_node_numa_allocate_strategy",
    "get_node_numa_topology_policy", "is_numa_reservation_enabled", "parse_numa_topology_spec",
    "parse_resource_spec", "parse_resource_status",
]
