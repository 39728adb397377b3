"""FragmentationAware: on nodes whose pods request uneven shares of the tracked resources
(say most of the cpu but little of the memory), evicts the pod whose leaving evens them out
most, so the freed resources can be used together again.

Corresponds to koordinator ``pkg/descheduler/framework/plugins/fragmentationaware/
fragmentation_aware.go``. Per selected node: the imbalance is the population standard
deviation of requested/allocatable over ``resources``; above ``imbalanceThreshold`` the
evictable pod with the largest gain (imbalance before − after its eviction, more than
``minImprovementThreshold``) that fits another selected node (``nodeFit``) is evicted, at most
one pod per node and pass.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from api.extension.objects import is_pod_terminated
from api.extension.objects import namespaced_name as pod_key
from descheduler.apis.config.args import FragmentationAwareArgs
from descheduler.framework.plugins.fragmentationaware.scoring import NodeImbalance
from descheduler.framework.plugins.selection import PodSelection, select_nodes
from descheduler.framework.types import EvictOptions, Handle, Obj, Status
from descheduler.utils.node import NodeFit

log = logging.getLogger(__name__)

NAME = "FragmentationAware"


@dataclass(frozen=True, slots=True)
class Candidate:
    pod: Obj
    gain: float
    std_before: float
    std_after: float

    def reason(self) -> str:
        return (f"fragmentation reduction: stdBefore={self.std_before:.4f} "
                f"stdAfter={self.std_after:.4f} gain={self.gain:.4f}")


class FragmentationAware:
    def __init__(self, args: FragmentationAwareArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.pod_filter = PodSelection(handle.evictor, args.evictable_namespaces,
                                       args.pod_selectors)

    @classmethod
    def new(cls, args: Any, handle: Handle) -> FragmentationAware:
        return cls(args if isinstance(args, FragmentationAwareArgs)
                   else FragmentationAwareArgs(), handle)

    def name(self) -> str:
        return NAME

    def balance(self, nodes: Sequence[Obj]) -> Status:
        if self.args.paused:
            log.info("FragmentationAware is paused and will do nothing.")
            return Status()
        candidates = select_nodes(nodes, self.args.node_selector)
        fit = NodeFit(self.handle.pods_on_node)
        for node in candidates:
            name = (node.get("metadata") or {}).get("name") or ""
            pods = [p for p in self.handle.pods_on_node(name) if not is_pod_terminated(p)]
            state = NodeImbalance.of(node, pods, self.args.resources)
            before = state.score()
            if before <= self.args.imbalance_threshold:
                continue
            best = self._best([p for p in pods if self.pod_filter(p)], state, candidates,
                              before, fit)
            if best is None or not self.handle.evictor.pre_eviction_filter(best.pod):
                continue
            if self.args.dry_run:
                log.info("Evict pod in dry run mode: pod %s, reason %s", pod_key(best.pod),
                         best.reason())
                continue
            self.handle.evictor.evict(best.pod, EvictOptions(NAME, best.reason()))
        return Status()

    def _best(self, evictable: list[Obj], state: NodeImbalance, nodes: Sequence[Obj],
              before: float, fit: NodeFit) -> Candidate | None:
        best: Candidate | None = None
        for pod in evictable:
            if self.args.node_fit and not self._fits_other_node(pod, nodes, fit):
                continue
            after = state.score_without(pod)
            gain = before - after
            if gain <= self.args.min_improvement_threshold:
                continue
            if best is None or gain > best.gain:
                best = Candidate(pod, gain, before, after)
        return best

    @staticmethod
    def _fits_other_node(pod: Obj, nodes: Sequence[Obj], fit: NodeFit) -> bool:
        own = (pod.get("spec") or {}).get("nodeName")
        return any((n.get("metadata") or {}).get("name") != own and not fit.errors(pod, n)
                   for n in nodes)
