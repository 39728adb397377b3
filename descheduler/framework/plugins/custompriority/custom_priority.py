"""CustomPriority: moves pods from nodes of an expensive level of ``evictionOrder`` to nodes of
the cheaper levels after it.

Corresponds to koordinator ``pkg/descheduler/framework/plugins/custompriority/
custom_priority.go``. A node belongs to the first level whose ``nodeSelector`` matches it;
levels without nodes are skipped. For each level but the last, its nodes are sources and the
nodes of every later level targets. ``BestEffort`` evicts each source pod (smallest requests
first) that fits some target (``nodeFit``; after 5 misses in a row the node's remaining pods
are not tried). ``DrainNode`` evicts a source node's pods only when all of them can be placed
on the targets, reserving the targets' free requests (cpu, memory) as it places them, and with
``autoCordon`` cordons the node first (uncordoned again when an eviction fails). As upstream,
``keepThreshold`` and ``rejectThreshold`` are validated but not used, and ``autoCordon``
cordons even in the plugin's ``dryRun``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from api.extension.objects import namespaced_name as pod_key
from descheduler.apis.config.args import CUSTOM_PRIORITY_DRAIN_NODE, CustomPriorityArgs
from descheduler.framework.plugins.selection import PodSelection, select_nodes
from descheduler.framework.types import EvictOptions, Handle, Obj, Status
from descheduler.utils.node import CPU, MEMORY, PODS, NodeFit
from pkg.client.errors import ApiError
from pkg.client.resources import NODES
from pkg.util.labels import parse_selector
from pkg.util.podresources import pod_requests, resource_list

log = logging.getLogger(__name__)

NAME = "CustomPriority"
# BestEffort stops trying a source node's pods after this many in a row fit no target.
MAX_CONSECUTIVE_MISSES = 5

Remaining = dict[str, int]


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def sort_pods_by_requests(pods: list[Obj]) -> None:
    """Smallest first: cpu, then memory requests, then namespace and name."""
    def key(pod: Obj) -> tuple[int, int, str, str]:
        requests = pod_requests(pod)
        md = pod.get("metadata") or {}
        return (requests.get(CPU, 0), requests.get(MEMORY, 0), md.get("namespace") or "",
                md.get("name") or "")
    pods.sort(key=key)


def requests_fit(requests: Mapping[str, int], remaining: Mapping[str, int]) -> bool:
    return all(q <= remaining[r] for r, q in requests.items() if r in remaining)


class CustomPriority:
    def __init__(self, args: CustomPriorityArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.pod_filter = PodSelection(handle.evictor, args.evictable_namespaces,
                                       args.pod_selectors)
        self.levels = [(level.name, parse_selector(level.node_selector))
                       for level in args.eviction_order if level.node_selector is not None]

    @classmethod
    def new(cls, args: Any, handle: Handle) -> CustomPriority:
        return cls(args if isinstance(args, CustomPriorityArgs) else CustomPriorityArgs(),
                   handle)

    def name(self) -> str:
        return NAME

    def balance(self, nodes: Sequence[Obj]) -> Status:
        if self.args.paused:
            log.info("CustomPriority is paused and will do nothing.")
            return Status()
        if len(self.args.eviction_order) < 2:
            log.debug("CustomPriority requires at least 2 resource priority levels to work")
            return Status()
        selected = select_nodes(nodes, self.args.node_selector)
        if not selected:
            log.debug("No nodes selected for CustomPriority")
            return Status()
        by_level: dict[str, list[Obj]] = {}
        for node in selected:
            labels = (node.get("metadata") or {}).get("labels") or {}
            for level, selector in self.levels:
                if selector.matches(labels):
                    by_level.setdefault(level, []).append(node)
                    break
        # High priority (expensive) first, as configured.
        levels = [level for level, _ in self.levels if by_level.get(level)]
        if len(levels) < 2:
            log.debug("CustomPriority requires at least 2 priority levels with nodes")
            return Status()
        fit = NodeFit(self.handle.pods_on_node)
        for i, source in enumerate(levels[:-1]):
            targets = [n for level in levels[i + 1:] for n in by_level[level]]
            if self.args.mode == CUSTOM_PRIORITY_DRAIN_NODE:
                self._drain_nodes(source, by_level[source], targets, fit)
            else:
                self._evict_to_targets(source, by_level[source], targets, fit)
        return Status()

    def _candidates(self, node: Obj) -> list[Obj]:
        pods = [p for p in self.handle.pods_on_node(_name(node)) if self.pod_filter(p)]
        sort_pods_by_requests(pods)
        return pods

    def _evict_to_targets(self, source: str, sources: list[Obj], targets: list[Obj],
                          fit: NodeFit) -> None:
        log.debug("Processing evictions: sourcePriority %s, sourceNodes %d, targetNodes %d",
                  source, len(sources), len(targets))
        for node in sources:
            evictable = []
            misses = 0
            for pod in self._candidates(node):
                if self.args.node_fit:
                    if all(fit.errors(pod, target) for target in targets):
                        misses += 1
                        if misses >= MAX_CONSECUTIVE_MISSES:
                            break
                        continue
                    misses = 0
                evictable.append(pod)
            for pod in evictable:
                if self.args.dry_run:
                    log.info("Would evict pod in dry run mode: pod %s, node %s, sourcePriority "
                             "%s", pod_key(pod), _name(node), source)
                    continue
                reason = f"evicting from {source} priority resource to lower priority resource"
                if not self.handle.evictor.evict(pod, EvictOptions(NAME, reason)):
                    log.error("Pod eviction failed: pod %s, node %s", pod_key(pod), _name(node))
                    continue
                log.info("Successfully evicted pod: pod %s, node %s, sourcePriority %s",
                         pod_key(pod), _name(node), source)

    def _remaining(self, node: Obj, fit: NodeFit) -> Remaining:
        """The target's allocatable cpu, memory and pods less what its pods request."""
        allocatable = resource_list((node.get("status") or {}).get("allocatable"))
        used = fit.requested(_name(node))
        return {r: allocatable.get(r, 0) - used.get(r, 0) for r in (CPU, MEMORY, PODS)}

    def _drain_nodes(self, source: str, sources: list[Obj], targets: list[Obj],
                     fit: NodeFit) -> None:
        log.debug("Processing drain-node evictions: sourcePriority %s, sourceNodes %d, "
                  "targetNodes %d", source, len(sources), len(targets))
        remaining = {_name(t): self._remaining(t, fit) for t in targets}
        for node in sources:
            pods = self._candidates(node)
            if not pods:
                continue
            working = {name: dict(r) for name, r in remaining.items()}
            if not all(self._place(pod, targets, working, fit) for pod in pods):
                log.debug("Skip draining node because not all pods can be placed: node %s",
                          _name(node))
                continue
            if self.args.auto_cordon:
                self._set_unschedulable(node, True)
            for pod in pods:
                if self.args.dry_run:
                    log.info("Would evict pod in drain-node mode (dry run): pod %s, node %s, "
                             "sourcePriority %s", pod_key(pod), _name(node), source)
                    continue
                reason = f"drain node {_name(node)} (sourcePriority={source})"
                if not self.handle.evictor.evict(pod, EvictOptions(NAME, reason)):
                    log.error("Pod eviction failed: pod %s, node %s", pod_key(pod), _name(node))
                    if self.args.auto_cordon:
                        log.info("uncordon node because pod eviction failed (drain-node): pod "
                                 "%s, node %s", pod_key(pod), _name(node))
                        self._set_unschedulable(node, False)
                    break
                log.info("Successfully evicted pod (drain-node): pod %s, node %s, "
                         "sourcePriority %s", pod_key(pod), _name(node), source)
            # Later source nodes see the targets' room this one's pods take.
            remaining = working

    def _place(self, pod: Obj, targets: list[Obj], working: dict[str, Remaining],
               fit: NodeFit) -> bool:
        """Reserves the pod's requests on the first target it fits."""
        requests = pod_requests(pod)
        for target in targets:
            if self.args.node_fit and fit.errors(pod, target):
                continue
            room = working[_name(target)]
            if requests_fit(requests, room):
                for r, q in requests.items():
                    if r in room:
                        room[r] -= q
                return True
        return False

    def _set_unschedulable(self, node: Obj, unschedulable: bool) -> None:
        """Cordons (uncordons) the node; failures are logged."""
        try:
            self.handle.services.kube_client.patch(
                NODES, _name(node), {"spec": {"unschedulable": unschedulable}})
        except ApiError as err:
            log.error("Failed to %s node %s: %s", "cordon" if unschedulable else "uncordon",
                      _name(node), err)
