"""Nodes a pod could move to: readiness and the scheduler-like fit check.

Corresponds to koordinator ``pkg/descheduler/node`` (``IsReady``, ``NodeFit``,
``PodFitsAnyNode``, ``PodFitsAnyOtherNode``, mirroring sigs.k8s.io/descheduler's), used by
LowNodeLoad's and the evictors' ``nodeFit`` and by the wrapped plugins: the node selector and
required node affinity, NoSchedule/NoExecute taints, the pod's requests against what the node's
running pods leave free, and the node being schedulable. Quantities are integers: cpu in
milli-units, everything else in units; ``pods`` counts pods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from api.extension.objects import KubeDict, is_pod_terminated, metadata_of, spec_of
from pkg.util.nodeaffinity import (
    DO_NOT_SCHEDULE_EFFECTS,
    RequiredNodeAffinity,
    find_untolerated_taint,
)
from pkg.util.podresources import pod_requests, resource_list

CPU, MEMORY, PODS = "cpu", "memory", "pods"
Resources = dict[str, int]

PodsOnNode = Callable[[str], Sequence[KubeDict]]


def node_ready(node: KubeDict) -> bool:
    """Ready unless a ``Ready`` condition says otherwise (unschedulable nodes count)."""
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready" and condition.get("status") != "True":
            return False
    return True


class NodeFit:
    """Whether pods fit nodes, for one descheduling cycle: each node's requested resources
    are summed once (nothing is scheduled by the descheduler within a cycle), so checking a
    candidate against many nodes costs no more than its own requests."""

    def __init__(self, pods_on_node: PodsOnNode) -> None:
        self._pods_on_node = pods_on_node
        self._requested: dict[str, Resources] = {}

    def requested(self, node_name: str) -> Resources:
        """What the node's running pods request, with ``pods`` their count."""
        used = self._requested.get(node_name)
        if used is None:
            used = {}
            running = [p for p in self._pods_on_node(node_name) if not is_pod_terminated(p)]
            for other in running:
                for r, q in pod_requests(other).items():
                    used[r] = used.get(r, 0) + q
            used[PODS] = len(running)
            self._requested[node_name] = used
        return used

    def errors(self, pod: KubeDict, node: KubeDict,
               requests: Resources | None = None) -> list[str]:
        """Why ``pod`` (requesting ``requests``, computed when None) would not fit ``node``
        (empty: it fits): node selector and required affinity, NoSchedule/NoExecute taints,
        requests against what the node's pods leave free (but on the pod's own node), and the
        node being schedulable."""
        errors = []
        spec = spec_of(pod)
        if not RequiredNodeAffinity.from_pod(pod).matches_node(node):
            errors.append("pod node selector does not match the node label")
        taint = find_untolerated_taint(spec_of(node).get("taints"), spec.get("tolerations"),
                                       DO_NOT_SCHEDULE_EFFECTS)
        if taint is not None:
            errors.append(f"pod does not tolerate taints on the node: {taint.get('key')}")
        name = metadata_of(node).get("name") or ""
        # On its own node the pod's requests are already among the node's (upstream skips it).
        if spec.get("nodeName") != name:
            if requests is None:
                requests = pod_requests(pod)
            allocatable = resource_list((node.get("status") or {}).get("allocatable"))
            used = self.requested(name)
            for r, q in [*requests.items(), (PODS, 1)]:
                if (r in (CPU, MEMORY, PODS) or q > 0) and \
                        q > allocatable.get(r, 0) - used.get(r, 0):
                    errors.append(f"insufficient {r}")
        if spec_of(node).get("unschedulable"):
            errors.append("node is not schedulable")
        return errors


def node_fit(pod: KubeDict, node: KubeDict, pods_on_node: PodsOnNode) -> list[str]:
    """Why ``pod`` would not fit ``node`` (``NodeFit.errors`` outside a cycle)."""
    return NodeFit(pods_on_node).errors(pod, node)


def pod_fits_any_node(fit: NodeFit, pod: KubeDict, nodes: Iterable[KubeDict]) -> bool:
    """Whether ``pod`` fits one of ``nodes`` (``PodFitsAnyNode``)."""
    return any(not fit.errors(pod, node) for node in nodes)


def pod_fits_any_other_node(fit: NodeFit, pod: KubeDict, nodes: Iterable[KubeDict]) -> bool:
    """Whether ``pod`` fits one of ``nodes`` other than its own (``PodFitsAnyOtherNode``)."""
    own = spec_of(pod).get("nodeName")
    return pod_fits_any_node(fit, pod, (n for n in nodes if metadata_of(n).get("name") != own))
