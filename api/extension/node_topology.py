"""CPU topology annotations koordlet writes on the NodeResourceTopology object.

Corresponds to the node-level part of upstream `apis/extension/numa_aware.go`:
``node.koordinator.sh/cpu-topology``, ``pod-cpu-allocs``, ``cpu-shared-pools``,
``be-cpu-shared-pools`` and ``kubelet.koordinator.sh/cpu-manager-policy``. A missing annotation
decodes to the empty result; invalid JSON is an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

from pydantic import Field, TypeAdapter

from api.extension.codec import decode_model, decode_value
from api.extension.constants import KUBELET_DOMAIN_PREFIX, NODE_DOMAIN_PREFIX
from api.extension.payload import ALWAYS, GoBool, GoInt32, GoPayload, StrMap, dump_json

ANNOTATION_NODE_CPU_TOPOLOGY = NODE_DOMAIN_PREFIX + "/cpu-topology"
ANNOTATION_NODE_CPU_ALLOCS = NODE_DOMAIN_PREFIX + "/pod-cpu-allocs"
ANNOTATION_NODE_CPU_SHARED_POOLS = NODE_DOMAIN_PREFIX + "/cpu-shared-pools"
ANNOTATION_NODE_BE_CPU_SHARED_POOLS = NODE_DOMAIN_PREFIX + "/be-cpu-shared-pools"
ANNOTATION_KUBELET_CPU_MANAGER_POLICY = KUBELET_DOMAIN_PREFIX + "/cpu-manager-policy"

KUBELET_CPU_MANAGER_POLICY_STATIC = "static"
KUBELET_CPU_MANAGER_POLICY_NONE = "none"
KUBELET_CPU_MANAGER_POLICY_FULL_PCPUS_ONLY_OPTION = "full-pcpus-only"
KUBELET_CPU_MANAGER_POLICY_DISTRIBUTE_CPUS_ACROSS_NUMA_OPTION = "distribute-cpus-across-numa"

_Int32 = Annotated[GoInt32, ALWAYS]


class CPUInfo(GoPayload):
    """One logical CPU: its id, physical core, socket and NUMA node (all always written)."""

    id: _Int32 = 0
    core: _Int32 = 0
    socket: _Int32 = 0
    node: _Int32 = 0


class CPUTopology(GoPayload):
    detail: list[CPUInfo] | None = None


class PodCPUAlloc(GoPayload):
    """The cpuset of a kubelet-managed Guaranteed pod."""

    namespace: str = ""
    name: str = ""
    uid: str = ""
    cpuset: str = ""
    managed_by_kubelet: GoBool = False


class CPUSharedPool(GoPayload):
    """A shared CPU pool of one NUMA node (socket and node always written)."""

    socket: _Int32 = 0
    node: _Int32 = 0
    cpuset: str = ""


class KubeletCPUManagerPolicy(GoPayload):
    """kubelet's CPU manager settings: ``policy`` is ``static`` or ``none``."""

    policy: str = ""
    options: StrMap | None = None
    reserved_cpus: str = Field("", alias="reservedCPUs")


_CPU_ALLOCS = TypeAdapter(list[PodCPUAlloc])
_SHARED_POOLS = TypeAdapter(list[CPUSharedPool])


def parse_cpu_topology(annotations: Mapping[str, str] | None) -> CPUTopology:
    raw = (annotations or {}).get(ANNOTATION_NODE_CPU_TOPOLOGY)
    if raw is None:
        return CPUTopology()
    return decode_model(ANNOTATION_NODE_CPU_TOPOLOGY, raw, CPUTopology)


def format_cpu_topology(topology: CPUTopology) -> str:
    return topology.to_go_json()


def parse_pod_cpu_allocs(annotations: Mapping[str, str] | None) -> list[PodCPUAlloc]:
    raw = (annotations or {}).get(ANNOTATION_NODE_CPU_ALLOCS)
    if raw is None:
        return []
    return decode_value(ANNOTATION_NODE_CPU_ALLOCS, raw, _CPU_ALLOCS) or []


def format_pod_cpu_allocs(allocs: list[PodCPUAlloc]) -> str:
    return dump_json(_CPU_ALLOCS, allocs)


def _parse_pools(annotations: Mapping[str, str] | None, key: str) -> list[CPUSharedPool]:
    raw = (annotations or {}).get(key)
    if raw is None:
        return []
    return decode_value(key, raw, _SHARED_POOLS) or []


def parse_cpu_shared_pools(annotations: Mapping[str, str] | None) -> list[CPUSharedPool]:
    """The LS share pools."""
    return _parse_pools(annotations, ANNOTATION_NODE_CPU_SHARED_POOLS)


def parse_be_cpu_shared_pools(annotations: Mapping[str, str] | None) -> list[CPUSharedPool]:
    """The BE share pools."""
    return _parse_pools(annotations, ANNOTATION_NODE_BE_CPU_SHARED_POOLS)


def format_cpu_shared_pools(pools: list[CPUSharedPool]) -> str:
    """Value of either share-pool annotation."""
    return dump_json(_SHARED_POOLS, pools)


def parse_kubelet_cpu_manager_policy(
        annotations: Mapping[str, str] | None) -> KubeletCPUManagerPolicy:
    raw = (annotations or {}).get(ANNOTATION_KUBELET_CPU_MANAGER_POLICY)
    if raw is None:
        return KubeletCPUManagerPolicy()
    return decode_model(ANNOTATION_KUBELET_CPU_MANAGER_POLICY, raw, KubeletCPUManagerPolicy)


def format_kubelet_cpu_manager_policy(policy: KubeletCPUManagerPolicy) -> str:
    return policy.to_go_json()


__all__ = [
    "ANNOTATION_KUBELET_CPU_MANAGER_POLICY", "ANNOTATION_NODE_BE_CPU_SHARED_POOLS",
    "ANNOTATION_NODE_CPU_ALLOCS", "ANNOTATION_NODE_CPU_SHARED_POOLS",
    "ANNOTATION_NODE_CPU_TOPOLOGY",
    "KUBELET_CPU_MANAGER_POLICY_DISTRIBUTE_CPUS_ACROSS_NUMA_OPTION",
    "KUBELET_CPU_MANAGER_POLICY_FULL_PCPUS_ONLY_OPTION", "KUBELET_CPU_MANAGER_POLICY_NONE",
    "KUBELET_CPU_MANAGER_POLICY_STATIC", "CPUInfo", "CPUSharedPool", "CPUTopology",
    "KubeletCPUManagerPolicy", "PodCPUAlloc", "format_cpu_shared_pools", "format_cpu_topology",
    "format_kubelet_cpu_manager_policy", "format_pod_cpu_allocs", "parse_be_cpu_shared_pools",
    "parse_cpu_shared_pools", "parse_cpu_topology", "parse_kubelet_cpu_manager_policy",
    "parse_pod_cpu_allocs",
]
