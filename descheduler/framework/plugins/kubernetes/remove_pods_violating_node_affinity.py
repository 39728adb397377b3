"""RemovePodsViolatingNodeAffinity: evicts pods whose node no longer satisfies their node
affinity when another node does.

Corresponds to sigs.k8s.io/descheduler ``pkg/framework/plugins/nodeaffinity`` as koordinator
wraps it (``pkg/descheduler/framework/plugins/kubernetes``). For each ``nodeAffinityType``:

* ``requiredDuringSchedulingIgnoredDuringExecution``: a pod with a required node affinity whose
  node fails its node selector or required affinity, when the pod fits some node
  (``nodeutil.NodeFit``);
* ``preferredDuringSchedulingIgnoredDuringExecution``: a pod with preferred terms that fits
  some node, when some node scores higher on those terms than its own.

Candidates are in the configured namespaces, match the label selector and pass both evictor
filters.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from descheduler.apis.config.args import (
    NODE_AFFINITY_PREFERRED,
    NODE_AFFINITY_REQUIRED,
    RemovePodsViolatingNodeAffinityArgs,
)
from descheduler.framework.plugins.kubernetes.podutil import node_name, pod_filter
from descheduler.framework.types import EvictOptions, Handle, Obj, Status
from descheduler.utils.node import NodeFit, pod_fits_any_node
from pkg.util.nodeaffinity import (
    InvalidSelectorError,
    RequiredNodeAffinity,
    preferred_node_affinity,
)

NAME = "RemovePodsViolatingNodeAffinity"

# (pod, its node, all nodes, this cycle's fit) → whether to evict the pod.
Violation = Callable[[Obj, Obj, Sequence[Obj], NodeFit], bool]


def _node_affinity(pod: Obj) -> Mapping[str, Any]:
    return ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}


def violates_required(pod: Obj, node: Obj, nodes: Sequence[Obj], fit: NodeFit) -> bool:
    if _node_affinity(pod).get(NODE_AFFINITY_REQUIRED) is None:
        return False
    return (not RequiredNodeAffinity.from_pod(pod).matches_node(node)
            and pod_fits_any_node(fit, pod, nodes))


def violates_preferred(pod: Obj, node: Obj, nodes: Sequence[Obj], fit: NodeFit) -> bool:
    if not _node_affinity(pod).get(NODE_AFFINITY_PREFERRED):
        return False
    try:
        terms = preferred_node_affinity(pod)
    except InvalidSelectorError:
        return False  # the API server refuses such pods; nothing to compare
    if terms is None or not pod_fits_any_node(fit, pod, nodes):
        return False
    best = max((terms.score_node(n) for n in nodes), default=0)
    return best > terms.score_node(node)


_VIOLATIONS: dict[str, Violation] = {NODE_AFFINITY_REQUIRED: violates_required,
                                     NODE_AFFINITY_PREFERRED: violates_preferred}


class RemovePodsViolatingNodeAffinity:
    def __init__(self, args: RemovePodsViolatingNodeAffinityArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self._accepts = pod_filter(args.namespaces, args.label_selector,
                                   handle.evictor.filter, handle.evictor.pre_eviction_filter)

    @classmethod
    def new(cls, args: Any, handle: Handle) -> RemovePodsViolatingNodeAffinity:
        return cls(args if isinstance(args, RemovePodsViolatingNodeAffinityArgs)
                   else RemovePodsViolatingNodeAffinityArgs(), handle)

    def name(self) -> str:
        return NAME

    def deschedule(self, nodes: Sequence[Obj]) -> Status:
        status = Status()
        fit = NodeFit(self.handle.pods_on_node)
        for kind in self.args.node_affinity_type:
            violates = _VIOLATIONS.get(kind)
            if violates is None:  # refused by validation
                status.errors.append(f"invalid nodeAffinityType: {kind}")
                continue
            for node in nodes:
                for pod in self.handle.pods_on_node(node_name(node)):
                    if self._accepts(pod) and violates(pod, node, nodes, fit):
                        self.handle.evictor.evict(pod, EvictOptions(
                            plugin_name=NAME, reason=f"pod violates node affinity {kind}"))
        return status
