"""The NodeResourceTopology report (upstream
``pkg/koordlet/statesinformer/impl/states_noderesourcetopology.go``, ``nodeTopoInformer``, with
the zone helpers of ``pkg/util/node_resource_topology.go`` and the reserved-CPU choice of
``pkg/koordlet/util/kubelet/cpu_assignment.go``).

``NodeTopologyReporter.run(stop)`` reports every ``--node-topology-sync-interval`` (default 3s;
``<= 0`` reports nothing). One round (``report_once``) computes the node's topology status
(``calc_node_topology``) from the metric cache's ``node_cpu_info`` and ``node_numa_info``, the
Node, its pods and the kubelet settings, and with gate ``NodeTopologyReport`` (Beta, on) writes
it to the NodeResourceTopology named after the node: created when missing (label
``app.kubernetes.io/managed-by: Koordinator``, controller owner reference to the Node,
``topologyPolicies: [None]``, no zones), then updated only when a managed annotation (compared
as JSON), the managed label, the topology policy or a zone's name, type or managed resources
changed; a conflict retries on the informer's newer copy. With the gate off nothing is written.
Either way the local copy (``get_node_topo``) is kept and a change fires ``on_change`` (the
``NodeTopology`` callback upstream).

Status: annotations ``node.koordinator.sh/cpu-basic-info``, ``cpu-topology`` (every CPU's
core, socket and NUMA node), ``cpu-shared-pools`` (CPUs of no pod's
``scheduling.koordinator.sh/resource-status`` cpuset, per NUMA node), ``be-cpu-shared-pools``
(only LSE cpusets taken out), both without the node's reserved CPUs and exclusive system-QoS
CPUs, ``pod-cpu-allocs`` (kubelet static-policy pods from ``cpu_manager_state``; ``null``
otherwise), ``kubelet.koordinator.sh/cpu-manager-policy``, and the node's
``node.koordinator.sh/reservation`` and ``system-qos-resource`` (``{}`` when unset); label
``node.koordinator.sh/enable-numa-reservation`` copied from the node; one zone ``node-<id>`` of
type ``Node`` per NUMA node with ``cpu``, ``memory`` (without huge pages), ``hugepages-2Mi`` and
``hugepages-1Gi`` (zero unless gate ``HugePageReport``), available = allocatable; with the
NUMA-reservation label ``"true"`` each zone's allocatable loses ``ceil(reserved / zones)`` of the
node's capacity − allocatable. Zones the old object has beyond the computed ones are dropped;
resources other components wrote on a zone are kept.

Kubelet settings: from kubelet's ``/configz`` (``KubeletConfigz``) where koordlet has a kubelet
stub (``--pod-source=kubelet``; a round whose query fails reports nothing, as upstream), else
kubelet's defaults (``KubeletDefaults``: CPU manager policy ``none``, topology manager
``none``); with ``--disable-query-kubelet-config`` policy, options and reserved CPUs stay unset.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from api.core import QuantityFormat, format_quantity, quantity_value
from api.errors import MalformedValueError
from api.extension.constants import LABEL_MANAGED_BY
from api.extension.cpu_normalization import ANNOTATION_CPU_BASIC_INFO, format_cpu_basic_info
from api.extension.device_share import RESOURCE_GPU
from api.extension.node import (
    ANNOTATION_NODE_RESERVATION,
    ANNOTATION_NODE_SYSTEM_QOS_RESOURCE,
    NodeReservation,
    SystemQOSResource,
    format_node_reservation,
    format_system_qos_resource,
    get_reserved_cpus,
    parse_node_reservation,
    parse_system_qos_resource,
)
from api.extension.node_topology import (
    ANNOTATION_KUBELET_CPU_MANAGER_POLICY,
    ANNOTATION_NODE_BE_CPU_SHARED_POOLS,
    ANNOTATION_NODE_CPU_ALLOCS,
    ANNOTATION_NODE_CPU_SHARED_POOLS,
    ANNOTATION_NODE_CPU_TOPOLOGY,
    KUBELET_CPU_MANAGER_POLICY_NONE,
    KUBELET_CPU_MANAGER_POLICY_STATIC,
    CPUInfo,
    CPUSharedPool,
    CPUTopology,
    KubeletCPUManagerPolicy,
    PodCPUAlloc,
    format_cpu_shared_pools,
    format_cpu_topology,
    format_kubelet_cpu_manager_policy,
    format_pod_cpu_allocs,
)
from api.extension.numa import LABEL_NODE_ENABLE_NUMA_RESERVATION, parse_resource_status
from api.extension.qos import QoSClass, get_pod_qos_class_raw
from api.thirdparty.noderesourcetopology.v1alpha1 import GROUP, VERSION
from api.thirdparty.noderesourcetopology.v1alpha1.node_resource_topology import ZONE_TYPE_NODE
from koordlet.metriccache import metric_types as mt
from koordlet.statesinformer.kubelet_pods import KubeletError
from koordlet.statesinformer.states_informer import PodMeta
from pkg.client.errors import ApiError
from pkg.client.resources import NODE_RESOURCE_TOPOLOGIES
from pkg.client.rest import Client
from pkg.features import koordlet_features
from pkg.features.featuregate import FeatureGate
from pkg.util.cpuset import format_cpuset, parse_cpuset

if TYPE_CHECKING:  # metricsadvisor imports statesinformer: types only, no import cycle
    from koordlet.metricsadvisor.nodeinfo import CPUTopology as NodeCPUInfo
    from koordlet.metricsadvisor.nodeinfo import NUMAInfo, ProcessorInfo

log = logging.getLogger(__name__)

DEFAULT_NODE_TOPOLOGY_SYNC_INTERVAL = 3.0
CPU_MANAGER_STATE_FILE = "cpu_manager_state"
MANAGED_BY_KOORDINATOR = "Koordinator"
HUGE_PAGE_REPORT = "HugePageReport"

# v1alpha1 TopologyManagerPolicy values.
TOPOLOGY_POLICY_NONE = "None"
_TOPOLOGY_POLICIES = {
    ("container", "single-numa-node"): "SingleNUMANodeContainerLevel",
    ("container", "restricted"): "RestrictedContainerLevel",
    ("container", "best-effort"): "BestEffortContainerLevel",
    ("pod", "single-numa-node"): "SingleNUMANodePodLevel",
    ("pod", "restricted"): "RestrictedPodLevel",
    ("pod", "best-effort"): "BestEffortPodLevel",
}

RESOURCE_HUGEPAGES_2MI = "hugepages-2Mi"
RESOURCE_HUGEPAGES_1GI = "hugepages-1Gi"
# What this reporter owns on the object; the rest belongs to other components.
MANAGED_RESOURCES = ("cpu", "memory", RESOURCE_GPU, RESOURCE_HUGEPAGES_2MI,
                     RESOURCE_HUGEPAGES_1GI)
MANAGED_ANNOTATIONS = (
    ANNOTATION_CPU_BASIC_INFO, ANNOTATION_KUBELET_CPU_MANAGER_POLICY,
    ANNOTATION_NODE_CPU_SHARED_POOLS, ANNOTATION_NODE_BE_CPU_SHARED_POOLS,
    ANNOTATION_NODE_CPU_TOPOLOGY, ANNOTATION_NODE_CPU_ALLOCS, ANNOTATION_NODE_RESERVATION,
    ANNOTATION_NODE_SYSTEM_QOS_RESOURCE,
)
MANAGED_LABELS = (LABEL_NODE_ENABLE_NUMA_RESERVATION,)

_UPDATE_TRIES = 5
_RETRY_BACKOFF = 0.01  # seconds, doubled each try (client-go's DefaultRetry starts at 10 ms)


class TopologyError(Exception):
    """The node's topology cannot be computed this round (cache not filled, data disagree)."""


# --- kubelet settings ------------------------------------------------------------------------


class KubeletConfiguration(BaseModel):
    """The fields of kubelet's ``KubeletConfiguration`` (``/configz``'s ``kubeletconfig``) the
    report uses, with kubelet's defaults for those it leaves out."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    cpu_manager_policy: str = Field(KUBELET_CPU_MANAGER_POLICY_NONE, alias="cpuManagerPolicy")
    cpu_manager_policy_options: dict[str, str] | None = Field(
        None, alias="cpuManagerPolicyOptions")
    reserved_system_cpus: str = Field("", alias="reservedSystemCPUs")
    kube_reserved: dict[str, str] = Field(default_factory=dict, alias="kubeReserved")
    system_reserved: dict[str, str] = Field(default_factory=dict, alias="systemReserved")
    topology_manager_policy: str = Field("none", alias="topologyManagerPolicy")
    topology_manager_scope: str = Field("container", alias="topologyManagerScope")


class KubeletConfigSource(Protocol):
    def kubelet_configuration(self) -> KubeletConfiguration: ...


class KubeletDefaults:
    """Stands in for kubelet's ``/configz`` where koordlet has no kubelet stub (pods from the
    API server)."""

    def kubelet_configuration(self) -> KubeletConfiguration:
        return KubeletConfiguration()


class ConfigzStub(Protocol):
    def get_kubelet_configuration(self, node: dict[str, Any]) -> dict[str, Any]: ...


class KubeletConfigz:
    """kubelet's ``/configz`` through the kubelet stub (upstream ``GetKubeletConfiguration``);
    raises KubeletError or TopologyError when kubelet cannot tell."""

    def __init__(self, stub: ConfigzStub,
                 get_node: Callable[[], dict[str, Any] | None]) -> None:
        self.stub = stub
        self.get_node = get_node

    def kubelet_configuration(self) -> KubeletConfiguration:
        node = self.get_node()
        if node is None:
            raise TopologyError("node not synced")
        raw = self.stub.get_kubelet_configuration(node)
        try:
            return KubeletConfiguration.model_validate(raw)
        except ValidationError as e:
            raise TopologyError(f"kubelet /configz is malformed: {e}") from None


def topology_policy(policy: str, scope: str) -> str:
    """Upstream ``getTopologyPolicy``: kubelet's topology manager policy and scope → NRT's."""
    return _TOPOLOGY_POLICIES.get((scope, policy), TOPOLOGY_POLICY_NONE)


def take_by_topology(processors: list[ProcessorInfo], count: int) -> frozenset[int]:
    """kubelet's ``takeByTopology`` on a node whose CPUs are all free: whole sockets while
    ``count`` covers one, then whole cores, then single CPUs, each in id order."""
    if count <= 0:
        return frozenset()
    if count > len(processors):
        raise ValueError(f"cannot take {count} CPUs of {len(processors)}")
    sockets: dict[int, list[int]] = {}
    cores: dict[int, list[int]] = {}
    for p in sorted(processors, key=lambda p: (p.socket_id, p.core_id, p.cpu_id)):
        sockets.setdefault(p.socket_id, []).append(p.cpu_id)
        cores.setdefault(p.core_id, []).append(p.cpu_id)
    taken: list[int] = []
    per_socket = len(processors) // len(sockets)
    per_core = len(processors) // len(cores)
    for group, size in ((sockets.values(), per_socket), (cores.values(), per_core)):
        for cpus in group:
            if count - len(taken) < size:
                break
            if not set(cpus) & set(taken):
                taken.extend(cpus)
    for cpus in cores.values():
        for cpu in cpus:
            if len(taken) == count:
                return frozenset(taken)
            if cpu not in taken:
                taken.append(cpu)
    return frozenset(taken)


def static_policy_reserved_cpus(processors: list[ProcessorInfo],
                                config: KubeletConfiguration) -> frozenset[int]:
    """Upstream ``GetStaticCPUManagerPolicyReservedCPUs``: ``reservedSystemCPUs``, else the
    kube- and system-reserved CPU rounded up and taken by topology."""
    if config.reserved_system_cpus:
        return parse_cpuset(config.reserved_system_cpus)
    reserved = sum((quantity_value(r["cpu"]) for r in (config.kube_reserved,
                                                        config.system_reserved) if "cpu" in r),
                   Decimal(0))
    return take_by_topology(processors, math.ceil(reserved))


# --- zones -----------------------------------------------------------------------------------


def zone_name(node_id: int) -> str:
    return f"node-{node_id}"


def _format(name: str, value: Decimal) -> str:
    fmt = QuantityFormat.DECIMAL_SI if name == "cpu" else QuantityFormat.BINARY_SI
    return format_quantity(value, fmt)


@dataclass(slots=True)
class ZoneResources:
    capacity: dict[str, Decimal]
    allocatable: dict[str, Decimal]

    def to_zone(self, name: str) -> dict[str, Any]:
        return {"name": name, "type": ZONE_TYPE_NODE, "resources": [
            {"name": r, "capacity": _format(r, self.capacity[r]),
             "allocatable": _format(r, self.allocatable[r]),
             "available": _format(r, self.allocatable[r])}
            for r in sorted(self.capacity)]}


def node_kubelet_reserved(node: Mapping[str, Any]) -> dict[str, Decimal]:
    """Capacity − allocatable of cpu and memory where positive."""
    status = node.get("status") or {}
    capacity, allocatable = status.get("capacity") or {}, status.get("allocatable") or {}
    reserved = {}
    for name in ("cpu", "memory"):
        if name in capacity and name in allocatable:
            value = quantity_value(capacity[name]) - quantity_value(allocatable[name])
            if value > 0:
                reserved[name] = value
    return reserved


def apply_numa_reservation(zones: dict[str, ZoneResources],
                           reserved: Mapping[str, Decimal]) -> None:
    """Each zone's allocatable loses ``ceil(reserved / zones)`` (in milli units), floored at 0;
    capacity stays."""
    if not zones:
        return
    for name, value in reserved.items():
        per_zone = Decimal(math.ceil(value * 1000 / len(zones))) / 1000
        for zone in zones.values():
            if name in zone.allocatable and per_zone > 0:
                zone.allocatable[name] = max(zone.allocatable[name] - per_zone, Decimal(0))


def calc_zones(cpu_info: NodeCPUInfo, numa: list[NUMAInfo], node: Mapping[str, Any],
               hugepages: bool) -> list[dict[str, Any]]:
    """One zone per NUMA node, sorted by name; raises TopologyError when the CPU and memory
    views disagree on the number of NUMA nodes."""
    cpu_nodes = cpu_info.numa_nodes()
    if len(cpu_nodes) != len(numa):
        raise TopologyError(f"NUMA node number not matched, cpu {len(cpu_nodes)}, "
                            f"NUMA {len(numa)}")
    zones: dict[str, ZoneResources] = {}
    for info in numa:
        hp2, hp1 = ((info.hugepages_2mi_bytes, info.hugepages_1gi_bytes) if hugepages
                    else (0, 0))
        capacity = {
            "cpu": Decimal(sum(1 for p in cpu_info.processors if p.node_id == info.node_id)),
            "memory": Decimal(info.mem_total_bytes - hp2 - hp1),
            RESOURCE_HUGEPAGES_2MI: Decimal(hp2),
            RESOURCE_HUGEPAGES_1GI: Decimal(hp1),
        }
        zones[zone_name(info.node_id)] = ZoneResources(capacity, dict(capacity))
    labels = (node.get("metadata") or {}).get("labels") or {}
    if labels.get(LABEL_NODE_ENABLE_NUMA_RESERVATION) == "true":
        apply_numa_reservation(zones, node_kubelet_reserved(node))
    return [zones[name].to_zone(name) for name in sorted(zones)]


def merge_zones(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Upstream ``MergeZoneList(TrimDifferentZone(old, new), new)``: the new zones, each with
    the old zone's other resources kept, zones and resources sorted by name."""
    old_by_name = {z.get("name"): z for z in old}
    merged = []
    for zone in sorted(new, key=lambda z: z["name"]):
        resources = {r["name"]: r for r in (old_by_name.get(zone["name"]) or {})
                     .get("resources") or []}
        resources.update({r["name"]: r for r in zone.get("resources") or []})
        merged.append({**zone, "resources": [resources[n] for n in sorted(resources)]})
    return merged


def _zone_quantities(zone: Mapping[str, Any]) -> dict[str, tuple[Decimal, Decimal]]:
    return {r["name"]: (quantity_value(r["capacity"]), quantity_value(r["allocatable"]))
            for r in zone.get("resources") or []}


def zones_equal(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> tuple[bool, str]:
    """Upstream ``isEqualNRTZones``: names and types in order, then the managed resources."""
    if len(old) != len(new):
        return False, "zones number"
    for i, (a, b) in enumerate(zip(old, new, strict=True)):
        if a.get("name") != b.get("name"):
            return False, f"zone {i} name"
        if a.get("type") != b.get("type"):
            return False, f"zone {i} type"
        qa, qb = _zone_quantities(a), _zone_quantities(b)
        if any(qa.get(r) != qb.get(r) for r in MANAGED_RESOURCES):
            return False, f"zone {i} resources"
    return True, ""


# --- CPUs ------------------------------------------------------------------------------------


def cpu_topology(cpu_info: NodeCPUInfo) -> CPUTopology:
    return CPUTopology(detail=[
        CPUInfo(id=p.cpu_id, core=p.core_id, socket=p.socket_id, node=p.node_id)
        for p in sorted(cpu_info.processors, key=lambda p: p.cpu_id)])


def share_pools(cpus: Mapping[int, CPUInfo]) -> list[CPUSharedPool]:
    """The CPUs per NUMA node, sorted by (socket, node)."""
    by_node: dict[int, list[CPUInfo]] = {}
    for info in cpus.values():
        by_node.setdefault(info.node, []).append(info)
    pools = [CPUSharedPool(socket=min(infos, key=lambda i: i.id).socket, node=node,
                           cpuset=format_cpuset({i.id for i in infos}))
             for node, infos in by_node.items()]
    return sorted(pools, key=lambda p: (p.socket, p.node))


def without_cpus(pools: list[CPUSharedPool], cpus: frozenset[int]) -> list[CPUSharedPool]:
    return [p.model_copy(update={"cpuset": format_cpuset(parse_cpuset(p.cpuset) - cpus)})
            for p in pools]


def _pod_cpuset(pod: Mapping[str, Any]) -> frozenset[int]:
    """The pod's allocated cpuset; a malformed status is logged and gives none."""
    meta = pod.get("metadata") or {}
    try:
        return parse_cpuset(parse_resource_status(meta.get("annotations")).cpuset or "")
    except (MalformedValueError, ValueError) as e:
        log.error("failed to get resource status of pod %s/%s, err: %s",
                  meta.get("namespace"), meta.get("name"), e)
        return frozenset()


def cpu_share_pools(cpus: Mapping[int, CPUInfo], pods: Iterable[Mapping[str, Any]]
                    ) -> tuple[list[CPUSharedPool], list[CPUSharedPool]]:
    """(LS pools, BE pools): every pod's cpuset leaves the LS pools, LSE ones the BE pools."""
    ls, be = dict(cpus), dict(cpus)
    for pod in pods:
        cpuset = _pod_cpuset(pod)
        for cpu in cpuset:
            ls.pop(cpu, None)
        if cpuset and get_pod_qos_class_raw(dict(pod)) == QoSClass.LSE:
            for cpu in cpuset:
                be.pop(cpu, None)
    return share_pools(ls), share_pools(be)


def kubelet_allocated_cpus(state_json: str, pods: Iterable[Mapping[str, Any]],
                           shared: dict[int, CPUInfo]) -> list[PodCPUAlloc]:
    """Upstream ``calGuaranteedCpu``: the cpusets of ``cpu_manager_state`` entries of pods
    Koordinator does not manage (LS, BE, or with a resource-status cpuset), taken out of
    ``shared``; raises ValueError on an empty or malformed state."""
    if not state_json:
        raise ValueError("empty state file")
    checkpoint = json.loads(state_json)
    if not isinstance(checkpoint, dict):
        raise ValueError("cpu_manager_state is not a checkpoint object")
    by_uid: dict[str, Mapping[str, Any]] = {}
    managed: set[str] = set()
    for pod in pods:
        uid = str((pod.get("metadata") or {}).get("uid", ""))
        by_uid[uid] = pod
        if get_pod_qos_class_raw(dict(pod)) in (QoSClass.LS, QoSClass.BE) or _pod_cpuset(pod):
            managed.add(uid)
    allocs = []
    for uid, containers in (checkpoint.get("entries") or {}).items():
        if uid in managed:
            continue
        cpus: set[int] = set()
        for container, text in (containers or {}).items():
            try:
                cpus |= parse_cpuset(text)
            except ValueError as e:
                log.error("could not parse cpuset %r for container %r in pod %r: %s", text,
                          container, uid, e)
        if not cpus:
            continue
        meta = (by_uid.get(uid) or {}).get("metadata") or {}
        allocs.append(PodCPUAlloc(namespace=meta.get("namespace", ""), name=meta.get("name", ""),
                                  uid=uid, cpuset=format_cpuset(cpus), managed_by_kubelet=True))
        for cpu in cpus:
            shared.pop(cpu, None)
    return sorted(allocs, key=lambda a: a.uid)


def read_kubelet_allocated_cpus(var_lib_kubelet: str, pods: Iterable[Mapping[str, Any]],
                                shared: dict[int, CPUInfo]) -> list[PodCPUAlloc]:
    """From ``<var-lib-kubelet>/cpu_manager_state``; none when it is missing or empty."""
    path = os.path.join(var_lib_kubelet, CPU_MANAGER_STATE_FILE)
    try:
        with open(path) as f:
            data = f.read()
    except FileNotFoundError:
        data = ""
    if not data:
        log.warning("cpu_manager_state %s empty or not exist", path)
        return []
    return kubelet_allocated_cpus(data, pods, shared)


def node_reservation(processors: list[ProcessorInfo],
                     annotations: Mapping[str, str] | None) -> NodeReservation:
    """Upstream ``getNodeReserved``: the node's reservation with ``reservedCPUs`` resolved (a
    CPU count is taken by topology); a malformed annotation gives an empty one."""
    try:
        reserved = parse_node_reservation(annotations)
    except MalformedValueError as e:
        log.warning("failed to GetNodeReservation, err: %s", e)
        reserved = NodeReservation()
    cpus, count = get_reserved_cpus(annotations)
    if cpus:
        try:
            reserved.reserved_cpus = format_cpuset(parse_cpuset(cpus))
        except ValueError:
            reserved.reserved_cpus = ""
    elif count > 0:
        try:
            reserved.reserved_cpus = format_cpuset(take_by_topology(processors, count))
        except ValueError as e:  # more CPUs than the node has: none are named
            log.warning("failed to take %d reserved CPUs: %s", count, e)
    return reserved


# --- the status ------------------------------------------------------------------------------


@dataclass(slots=True)
class NodeTopologyStatus:
    annotations: dict[str, str]
    labels: dict[str, str]
    topology_policy: str
    zones: list[dict[str, Any]]

    def is_changed(self, old: Mapping[str, Any] | None) -> tuple[bool, str]:
        """Upstream ``isChanged``: whether ``old`` differs in anything this status owns."""
        meta = (old or {}).get("metadata") or {}
        if old is None or meta.get("annotations") is None:
            return True, "metadata changed"
        if old.get("topologyPolicies") != [self.topology_policy]:
            return True, "TopologyPolicies changed"
        annotations = meta["annotations"]
        for key in MANAGED_ANNOTATIONS:
            if (key in annotations) != (key in self.annotations):
                return True, f"annotations changed, key {key}"
            if key in annotations and _json(annotations[key]) != _json(self.annotations[key]):
                return True, f"annotations changed, key {key}"
        labels = meta.get("labels") or {}
        for key in MANAGED_LABELS:
            if labels.get(key) != self.labels.get(key):
                return True, f"labels changed, key {key}"
        equal, msg = zones_equal(old.get("zones") or [], self.zones)
        if not equal:
            return True, f"Zones changed, item: {msg}"
        return False, ""

    def apply(self, nrt: dict[str, Any]) -> dict[str, Any]:
        """A copy of ``nrt`` with this status written on it (old zones merged)."""
        out = copy.deepcopy(nrt)
        meta = out.setdefault("metadata", {})
        meta["annotations"] = {**(meta.get("annotations") or {}), **self.annotations}
        meta["labels"] = {**(meta.get("labels") or {}), **self.labels}
        out["topologyPolicies"] = [self.topology_policy]
        out["zones"] = merge_zones(out.get("zones") or [], self.zones)
        return out


def _json(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return value


class TopologyStates(Protocol):
    """What the report reads of statesinformer."""

    def get_node(self) -> dict[str, Any] | None: ...

    def get_all_pods(self) -> list[PodMeta]: ...


class MetricCacheKV(Protocol):
    def get(self, key: str) -> Any: ...


def calc_node_topology(cpu_info: NodeCPUInfo | None, numa: list[NUMAInfo] | None,
                       node: Mapping[str, Any], pods: list[Mapping[str, Any]],
                       kubelet: KubeletConfiguration | None, var_lib_kubelet: str,
                       hugepages: bool = False) -> NodeTopologyStatus:
    """Upstream ``calcNodeTopo``; ``kubelet`` None when querying it is disabled. Raises
    TopologyError (or ValueError for a bad cpu_manager_state) when it cannot be computed."""
    if cpu_info is None:
        raise TopologyError("node cpu info not exist")
    if numa is None:
        raise TopologyError("node NUMA info not exist")
    zones = calc_zones(cpu_info, numa, node, hugepages)
    topo = cpu_topology(cpu_info)
    shared = {c.id: c for c in topo.detail or []}
    policy = TOPOLOGY_POLICY_NONE
    manager = KubeletCPUManagerPolicy()
    allocs: list[PodCPUAlloc] = []
    if kubelet is not None:
        manager = KubeletCPUManagerPolicy(policy=kubelet.cpu_manager_policy,
                                          options=kubelet.cpu_manager_policy_options)
        if kubelet.cpu_manager_policy == KUBELET_CPU_MANAGER_POLICY_STATIC:
            try:
                manager.reserved_cpus = format_cpuset(
                    static_policy_reserved_cpus(cpu_info.processors, kubelet))
            except ValueError as e:
                log.error("Failed to GetStaticCPUManagerPolicyReservedCPUs, err: %s", e)
            # The reserved CPUs stay in the share pools: Burstable pods limited beyond their
            # request still have them.
            allocs = read_kubelet_allocated_cpus(var_lib_kubelet, pods, shared)
        policy = topology_policy(kubelet.topology_manager_policy,
                                 kubelet.topology_manager_scope)
    meta = node.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    reserved = node_reservation(cpu_info.processors, annotations)
    try:
        system_qos = parse_system_qos_resource(annotations) or SystemQOSResource()
    except MalformedValueError as e:
        raise TopologyError(f"failed to get system qos resource from node annotation: {e}"
                            ) from None
    ls, be = cpu_share_pools(shared, pods)
    try:
        reserved_cpus = parse_cpuset(reserved.reserved_cpus)
    except ValueError:
        reserved_cpus = frozenset()
    ls, be = without_cpus(ls, reserved_cpus), without_cpus(be, reserved_cpus)
    if system_qos.cpuset and system_qos.is_cpuset_exclusive:
        try:
            system_cpus = parse_cpuset(system_qos.cpuset)
        except ValueError:
            system_cpus = frozenset()
        ls, be = without_cpus(ls, system_cpus), without_cpus(be, system_cpus)
    status = NodeTopologyStatus(
        annotations={
            ANNOTATION_CPU_BASIC_INFO: format_cpu_basic_info(cpu_info.basic_info),
            ANNOTATION_NODE_CPU_TOPOLOGY: format_cpu_topology(topo),
            ANNOTATION_NODE_CPU_SHARED_POOLS: format_cpu_shared_pools(ls),
            ANNOTATION_KUBELET_CPU_MANAGER_POLICY: format_kubelet_cpu_manager_policy(manager),
            ANNOTATION_NODE_BE_CPU_SHARED_POOLS: format_cpu_shared_pools(be),
            # Go marshals a nil slice as null.
            ANNOTATION_NODE_CPU_ALLOCS: format_pod_cpu_allocs(allocs) if allocs else "null",
            ANNOTATION_NODE_RESERVATION: format_node_reservation(reserved),
            ANNOTATION_NODE_SYSTEM_QOS_RESOURCE: format_system_qos_resource(system_qos),
        },
        labels={}, topology_policy=policy, zones=zones)
    labels = meta.get("labels") or {}
    if labels.get(LABEL_NODE_ENABLE_NUMA_RESERVATION):
        status.labels[LABEL_NODE_ENABLE_NUMA_RESERVATION] = labels[
            LABEL_NODE_ENABLE_NUMA_RESERVATION]
    return status


def new_node_topology(node: Mapping[str, Any]) -> dict[str, Any]:
    """Upstream ``newNodeTopo``: the object created for a node that has none."""
    meta = node.get("metadata") or {}
    return {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "NodeResourceTopology",
        "metadata": {
            "name": meta.get("name"),
            "labels": {LABEL_MANAGED_BY: MANAGED_BY_KOORDINATOR},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": meta.get("name"),
                                 "uid": meta.get("uid", ""), "controller": True,
                                 "blockOwnerDeletion": True}],
        },
        "topologyPolicies": [TOPOLOGY_POLICY_NONE], "zones": [],
    }


class NodeTopologyReporter:
    """``current`` returns this node's NodeResourceTopology as the informer holds it."""

    def __init__(self, client: Client, states: TopologyStates, cache: MetricCacheKV,
                 current: Callable[[], dict[str, Any] | None], *,
                 kubelet: KubeletConfigSource | None, var_lib_kubelet: str,
                 feature_gate: FeatureGate,
                 interval: float = DEFAULT_NODE_TOPOLOGY_SYNC_INTERVAL,
                 on_change: Callable[[], None] = lambda: None) -> None:
        self.client = client
        self.states = states
        self.cache = cache
        self.current = current
        self.kubelet = kubelet
        self.var_lib_kubelet = var_lib_kubelet
        self.feature_gate = feature_gate
        self.interval = interval
        self.on_change = on_change
        self._lock = threading.Lock()
        self._local: dict[str, Any] | None = None
        self._last_error = ""  # the last failed round's error, logged once

    def get_node_topo(self) -> dict[str, Any] | None:
        """The last computed NodeResourceTopology (written or not)."""
        with self._lock:
            return copy.deepcopy(self._local)

    def calc(self, node: Mapping[str, Any]) -> NodeTopologyStatus:
        kubelet = self.kubelet.kubelet_configuration() if self.kubelet is not None else None
        return calc_node_topology(
            self.cache.get(mt.NODE_CPU_INFO_KEY), self.cache.get(mt.NODE_NUMA_INFO_KEY), node,
            [m.pod for m in self.states.get_all_pods()], kubelet, self.var_lib_kubelet,
            hugepages=self.feature_gate.enabled(HUGE_PAGE_REPORT))

    def _update_local(self, status: NodeTopologyStatus, nrt: dict[str, Any]) -> None:
        with self._lock:
            changed, msg = status.is_changed(self._local)
            if changed:
                log.debug("local node topology changed: %s", msg)
                self._local = nrt
        if changed:
            self.on_change()

    def report_once(self) -> bool:
        """One round; True when the object was created or updated. Raises TopologyError,
        ValueError, KubeletError or ApiError when the round failed."""
        node = self.states.get_node()
        if node is None:
            raise TopologyError("node not synced")
        report = self.feature_gate.enabled(koordlet_features.NODE_TOPOLOGY_REPORT)
        written = False
        current = self.current() if report else None
        if report and current is None:
            try:
                current = self.client.create(NODE_RESOURCE_TOPOLOGIES, new_node_topology(node))
                written = True
            except ApiError as e:
                if e.status != 409:
                    raise
                # It exists but the informer has not listed it yet (a restart).
                current = self.client.get(NODE_RESOURCE_TOPOLOGIES, node["metadata"]["name"])
        status = self.calc(node)
        for attempt in range(_UPDATE_TRIES):
            base = current if current is not None else new_node_topology(node)
            updated = status.apply(base)
            self._update_local(status, updated)
            if not report:
                return False
            changed, msg = status.is_changed(current)
            if not changed:
                return written
            log.info("need to update node topology, node %s, reason: %s",
                     updated["metadata"]["name"], msg)
            try:
                self.client.update(NODE_RESOURCE_TOPOLOGIES, updated)
                return True
            except ApiError as e:
                if e.status not in (409, 429) or attempt == _UPDATE_TRIES - 1:
                    raise
            time.sleep(_RETRY_BACKOFF * 2 ** attempt)  # the informer catches up meanwhile
            current = self.current() or current
        return written

    def run(self, stop: threading.Event) -> None:
        if self.interval <= 0:
            log.info("--node-topology-sync-interval <= 0: NodeResourceTopology not reported")
            return
        while not stop.is_set():
            try:
                self.report_once()
                self._last_error = ""
            except (TopologyError, ValueError, OSError, ApiError, KubeletError) as e:
                # Until the collectors fill the cache this fails every round: once per cause.
                if str(e) != self._last_error:
                    self._last_error = str(e)
                    log.error("failed to report NodeResourceTopology: %s", e)
            if stop.wait(self.interval):
                return
