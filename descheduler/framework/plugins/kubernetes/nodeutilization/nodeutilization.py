"""What HighNodeUtilization and LowNodeUtilization share: node usage from pod requests, the
percentages and thresholds nodes are classified by, and evicting from source nodes while the
destinations have room.

Corresponds to sigs.k8s.io/descheduler ``pkg/framework/plugins/nodeutilization``
(``nodeutilization.go``, ``usageclients.go``'s requested-usage client, ``classifier`` and
``normalizer``). Quantities are integers (cpu in milli-units, ``pods`` a count); percentages
are floats of the node's allocatable (capacity where it reports no allocatable).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from api.extension.objects import is_pod_terminated
from api.extension.objects import namespaced_name as pod_key
from api.extension.qos import get_kube_qos_class
from descheduler.apis.config.args import (
    EVICTION_MODE_ONLY_THRESHOLDING_RESOURCES,
    MAX_RESOURCE_PERCENTAGE,
    Namespaces,
)
from descheduler.framework.types import EvictOptions, Evictor, Obj
from descheduler.utils.node import CPU, MEMORY, PODS, Resources
from pkg.util.nodeaffinity import find_untolerated_taint
from pkg.util.podresources import pod_requests, resource_list

log = logging.getLogger(__name__)

Percentages = dict[str, float]
BASIC_RESOURCES = (CPU, MEMORY, PODS)


def with_basic_resources(names: Iterable[str]) -> list[str]:
    """``names`` and cpu, memory and pods, each once (upstream ``uniquifyResourceNames``)."""
    return list(dict.fromkeys([*names, *BASIC_RESOURCES]))


def node_name(node: Obj) -> str:
    return str((node.get("metadata") or {}).get("name") or "")


def node_capacity(node: Obj) -> Resources:
    """Allocatable, or capacity where the node reports no allocatable."""
    status = node.get("status") or {}
    return resource_list(status.get("allocatable") or status.get("capacity"))


def is_unschedulable(node: Obj) -> bool:
    return bool((node.get("spec") or {}).get("unschedulable"))


def pod_usage(pod: Obj, resource_names: Sequence[str]) -> Resources:
    """What evicting ``pod`` frees: its requests, and one pod."""
    requests = pod_requests(pod)
    return {r: 1 if r == PODS else requests.get(r, 0) for r in resource_names}


@dataclass(slots=True)
class NodeUsage:
    """A snapshot of one node: its running pods and what they request."""

    node: Obj
    name: str
    usage: Resources
    pods: list[Obj]


def node_usages(nodes: Iterable[Obj], resource_names: Sequence[str],
                pods_on_node: Callable[[str], list[Obj]]) -> dict[str, NodeUsage]:
    """Each node's requested usage of ``resource_names`` (``pods``: the count) from the pods
    that have not Succeeded or Failed."""
    out = {}
    for node in nodes:
        name = node_name(node)
        pods = [p for p in pods_on_node(name) if not is_pod_terminated(p)]
        usage = dict.fromkeys(resource_names, 0)
        for pod in pods:
            requests = pod_requests(pod)
            for r in resource_names:
                usage[r] += requests.get(r, 0)
        if PODS in usage:
            usage[PODS] = len(pods)
        out[name] = NodeUsage(node, name, usage, pods)
    return out


def usage_percentages(usage: Mapping[str, int], capacity: Mapping[str, int]) -> Percentages:
    """used / capacity × 100 for each resource the node has (0 where its capacity is 0)."""
    return {r: used / capacity[r] * 100 if capacity[r] > 0 else 0.0
            for r, used in usage.items() if r in capacity}


def average(percentages: Iterable[Mapping[str, float]],
            resource_names: Sequence[str]) -> Percentages:
    """Each resource's mean percentage over the nodes (``normalizer.Average``)."""
    nodes = list(percentages)
    if not nodes:
        return {}
    return {r: sum(p.get(r, 0.0) for p in nodes) / len(nodes) for r in resource_names
            if any(r in p for p in nodes)}


def deviation_thresholds(avg: Mapping[str, float], low: Mapping[str, float],
                         high: Mapping[str, float]) -> tuple[Percentages, Percentages]:
    """The average minus ``low`` and plus ``high``, clamped to [0, 100]."""
    def clamp(value: float) -> float:
        return min(max(value, 0.0), MAX_RESOURCE_PERCENTAGE)
    return ({r: clamp(avg.get(r, 0.0) - v) for r, v in low.items()},
            {r: clamp(avg.get(r, 0.0) + v) for r, v in high.items()})


def is_below(usage: Mapping[str, float], thresholds: Mapping[str, float]) -> bool:
    """Every thresholded resource at or below its threshold."""
    return all(usage.get(r, 0.0) <= t for r, t in thresholds.items())


def is_above(usage: Mapping[str, float], thresholds: Mapping[str, float]) -> bool:
    """Some thresholded resource above its threshold."""
    return any(usage.get(r, 0.0) > t for r, t in thresholds.items())


def cap_to_thresholds(capacity: Mapping[str, int], thresholds: Mapping[str, float],
                      resource_names: Sequence[str]) -> Resources:
    """The capacity each resource may be used up to: ``threshold% × capacity`` (truncated),
    the full capacity where no threshold is set, 0 where the node lacks the resource."""
    out = {}
    for r in resource_names:
        if r not in capacity:
            out[r] = 0
        elif r not in thresholds:
            out[r] = capacity[r]
        else:
            out[r] = int(thresholds[r] * 0.01 * float(capacity[r]))
    return out


@dataclass(slots=True)
class NodeInfo:
    """A classified node: its usage (lowered as pods leave) and the usage it may reach."""

    usage: NodeUsage
    available: Resources

    @property
    def name(self) -> str:
        return self.usage.name


def classify(usages: Mapping[str, NodeUsage], percentages: Mapping[str, Percentages],
             thresholds: Mapping[str, tuple[Percentages, Percentages]],
             resource_names: Sequence[str],
             criteria: Sequence[Callable[[NodeUsage, Percentages, Percentages], bool]]
             ) -> list[list[NodeInfo]]:
    """One group per criterion (taking the node's low then high thresholds); a node joins the
    first group whose criterion it meets, in node order. Each NodeInfo may use its capacity
    up to the high thresholds."""
    groups: list[list[NodeInfo]] = [[] for _ in criteria]
    for name, nu in usages.items():
        pct = percentages[name]
        for i, criterion in enumerate(criteria):
            if criterion(nu, pct, thresholds[name][i]):
                log.info("Node has been classified: category %s, node %s, usage %s, "
                         "usagePercentage %s", ("underutilized", "overutilized")[i], name,
                         nu.usage, rounded(pct))
                groups[i].append(NodeInfo(nu, cap_to_thresholds(
                    node_capacity(nu.node), thresholds[name][1], resource_names)))
                break
    return groups


def enough_underutilized(low: int, total: int, number_of_nodes: int) -> bool:
    """Upstream's gates before evicting anything: some node is underutilized, more than
    ``numberOfNodes`` of them, and not all nodes (logged as upstream when one fails)."""
    if not low:
        log.info("No node is underutilized, nothing to do here, you might tune your "
                 "thresholds further")
        return False
    if low <= number_of_nodes:
        log.info("Number of nodes underutilized is less or equal than NumberOfNodes, "
                 "nothing to do here: underutilizedNodes %d, numberOfNodes %d",
                 low, number_of_nodes)
        return False
    if low == total:
        log.info("All nodes are underutilized, nothing to do here")
        return False
    return True


def rounded(percentages: Mapping[str, float]) -> dict[str, float]:
    return {r: round(v) for r, v in percentages.items()}


def total_available(nodes: Iterable[NodeInfo], resource_names: Sequence[str]) -> Resources:
    """Σ (available − usage) over the destinations: what the evicted pods may take."""
    out = dict.fromkeys(resource_names, 0)
    for info in nodes:
        for r in resource_names:
            out[r] += info.available.get(r, 0) - info.usage.usage.get(r, 0)
    return out


def sort_nodes_by_usage(nodes: list[NodeInfo], ascending: bool) -> None:
    """By the sum of the node's usage values (cpu in milli-units), as upstream does."""
    nodes.sort(key=lambda n: sum(n.usage.usage.values()), reverse=not ascending)


def sort_pods_by_priority(pods: list[Obj]) -> None:
    """Lowest first: pods without a priority, then by priority, BestEffort before Burstable
    before Guaranteed among equals (``SortPodsBasedOnPriorityLowToHigh``)."""
    qos_rank = {"BestEffort": 0, "Burstable": 1}

    def key(pod: Obj) -> tuple[bool, int, int]:
        priority = (pod.get("spec") or {}).get("priority")
        return (priority is not None, priority or 0, qos_rank.get(get_kube_qos_class(pod), 2))

    pods.sort(key=key)


def candidate_filter(evictor: Evictor, resource_names: Iterable[str],
                     eviction_modes: Iterable[str]) -> Callable[[Obj], bool]:
    """Which pods a node-utilization plugin may move: those the evictor lets go and, with
    ``OnlyThresholdingResources``, whose containers request one of the thresholded
    resources."""
    names = set(resource_names)
    only_thresholding = EVICTION_MODE_ONLY_THRESHOLDING_RESOURCES in eviction_modes

    def requests_any(pod: Obj) -> bool:
        spec = pod.get("spec") or {}
        containers = [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
        return any(names & set((c.get("resources") or {}).get("requests") or {})
                   for c in containers)

    def candidate(pod: Obj) -> bool:
        return evictor.filter(pod) and (not only_thresholding or requests_any(pod))

    return candidate


def tolerates_some_node(pod: Obj, taints_of_nodes: Mapping[str, list[Obj]]) -> bool:
    """Whether the pod tolerates every taint of some destination (``PodToleratesTaints``)."""
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    return any(len(tolerations) >= len(taints)
               and find_untolerated_taint(taints, tolerations) is None
               for taints in taints_of_nodes.values())


ContinueEviction = Callable[[NodeInfo, Resources], bool]


@dataclass(slots=True)
class Eviction:
    """How a plugin evicts: its name, pod filter, namespaces kept and per-node limit."""

    plugin_name: str
    evictor: Evictor
    pod_filter: Callable[[Obj], bool]
    evictable_namespaces: Namespaces | None
    max_pods_per_node: int | None = None


def evict_pods_from_source_nodes(sources: Sequence[NodeInfo], destinations: Sequence[NodeInfo],
                                 eviction: Eviction, resource_names: Sequence[str],
                                 continue_eviction: ContinueEviction) -> None:
    """Evicts the sources' removable pods, lowest priority first, while ``continue_eviction``
    holds; each eviction lowers the source's usage and the destinations' room."""
    available = total_available(destinations, resource_names)
    log.info("Total capacity to be moved: %s", available)
    taints = {d.name: list((d.usage.node.get("spec") or {}).get("taints") or [])
              for d in destinations}
    for source in sources:
        log.debug("Evicting pods from node %s, usage %s", source.name, source.usage.usage)
        removable = [p for p in source.usage.pods if eviction.pod_filter(p)]
        log.debug("Pods on node %s: allPods %d, nonRemovablePods %d, removablePods %d",
                  source.name, len(source.usage.pods), len(source.usage.pods) - len(removable),
                  len(removable))
        if not removable:
            log.info("No removable pods on node, try next node: node %s", source.name)
            continue
        log.info("Evicting pods based on priority, if they have same priority, they'll be "
                 "evicted based on QoS tiers")
        sort_pods_by_priority(removable)
        _evict_pods(removable, source, available, taints, eviction, resource_names,
                    continue_eviction)


def _evict_pods(pods: Sequence[Obj], source: NodeInfo, available: Resources,
                taints: Mapping[str, list[Obj]], eviction: Eviction,
                resource_names: Sequence[str], continue_eviction: ContinueEviction) -> None:
    if not continue_eviction(source, available):
        return
    excluded = set(eviction.evictable_namespaces.exclude
                   if eviction.evictable_namespaces is not None else ())
    evicted = 0
    for pod in pods:
        if eviction.max_pods_per_node is not None and evicted >= eviction.max_pods_per_node:
            log.debug("Max number of evictions per node per plugin reached: limit %d",
                      eviction.max_pods_per_node)
            break
        if not tolerates_some_node(pod, taints):
            log.debug("Skipping eviction for pod, doesn't tolerate node taint: pod %s",
                      pod_key(pod))
            continue
        namespace = (pod.get("metadata") or {}).get("namespace") or ""
        if namespace in excluded or not eviction.evictor.pre_eviction_filter(pod):
            continue
        if not eviction.evictor.evict(pod, EvictOptions(eviction.plugin_name)):
            log.error("eviction failed: pod %s", pod_key(pod))
            continue
        evicted += 1
        log.debug("Evicted pods: pod %s", pod_key(pod))
        freed = pod_usage(pod, resource_names)
        for r in available:
            source.usage.usage[r] -= freed.get(r, 0)
            available[r] -= freed.get(r, 0)
        log.debug("Updated node usage: node %s, %s", source.name, source.usage.usage)
        if not continue_eviction(source, available):
            break


def destinations_have_room(available: Mapping[str, int]) -> bool:
    """Every resource still has room on the destinations."""
    return all(v > 0 for v in available.values())
