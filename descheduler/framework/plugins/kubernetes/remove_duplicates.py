"""RemoveDuplicates: spreads the pods of one owner running the same images evenly over the
nodes they can run on.

Corresponds to sigs.k8s.io/descheduler ``pkg/framework/plugins/removeduplicates`` as koordinator
wraps it (``pkg/descheduler/framework/plugins/kubernetes``). On each node, among the pods in the
configured namespaces that both evictor filters accept and that have owners (none of an
``excludeOwnerKinds`` kind), a pod is a duplicate of an earlier one when both have the same
namespace/owner kind/owner name/image keys. Per owner and image set, the pods count towards
an "upper average": all of them divided by the feasible nodes (those where some duplicate
tolerates the NoSchedule/NoExecute taints and matches the node selector and required
affinity, counted only when a duplicate can go to two or more), rounded up. With fewer than two
feasible nodes nothing moves; otherwise each node keeps up to the upper average of them and the
duplicates beyond it are evicted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from descheduler.apis.config.args import RemoveDuplicatesArgs
from descheduler.framework.plugins.kubernetes.podutil import (
    has_owner_kind,
    node_name,
    owner_refs,
    pod_filter,
)
from descheduler.framework.types import EvictOptions, Handle, Obj, Status
from pkg.util.nodeaffinity import (
    DO_NOT_SCHEDULE_EFFECTS,
    RequiredNodeAffinity,
    find_untolerated_taint,
)

NAME = "RemoveDuplicates"


@dataclass(frozen=True, slots=True)
class OwnerKey:
    """One owner of a pod, with the pod's sorted images joined by ``#``."""

    namespace: str
    kind: str
    name: str
    images: str


def _images(pod: Obj) -> list[str]:
    return sorted(c.get("image") or "" for c in (pod.get("spec") or {}).get("containers") or [])


def _placement(pod: Obj) -> tuple[Any, ...]:
    """What decides where a pod may run, for telling identical ones apart (tolerations, node
    selector, required node affinity)."""
    spec = pod.get("spec") or {}
    return (repr(spec.get("tolerations") or []), RequiredNodeAffinity.from_pod(pod))


def feasible_nodes(duplicates: Mapping[str, list[Obj]], nodes: Sequence[Obj]) -> list[Obj]:
    """The nodes where some duplicate could run, counting only duplicates that could run on two
    or more nodes (upstream ``getTargetNodes``)."""
    distinct: dict[tuple[Any, ...], Obj] = {}
    for pods in duplicates.values():
        for pod in pods:
            distinct.setdefault(_placement(pod), pod)
    targets: dict[str, Obj] = {}
    for pod in distinct.values():
        spec = pod.get("spec") or {}
        affinity = RequiredNodeAffinity.from_pod(pod)
        matching = [node for node in nodes
                    if find_untolerated_taint((node.get("spec") or {}).get("taints"),
                                              spec.get("tolerations"),
                                              DO_NOT_SCHEDULE_EFFECTS) is None
                    and affinity.matches_node(node)]
        if len(matching) > 1:
            targets.update((node_name(node), node) for node in matching)
    return list(targets.values())


class RemoveDuplicates:
    def __init__(self, args: RemoveDuplicatesArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self._accepts = pod_filter(args.namespaces, None, handle.evictor.filter,
                                   handle.evictor.pre_eviction_filter)

    @classmethod
    def new(cls, args: Any, handle: Handle) -> RemoveDuplicates:
        return cls(args if isinstance(args, RemoveDuplicatesArgs) else RemoveDuplicatesArgs(),
                   handle)

    def name(self) -> str:
        return NAME

    def balance(self, nodes: Sequence[Obj]) -> Status:
        # owner → node name → the duplicates on that node (not the first such pod there)
        duplicates: dict[OwnerKey, dict[str, list[Obj]]] = {}
        occurrences: dict[OwnerKey, int] = {}
        for node in nodes:
            name = node_name(node)
            seen: set[tuple[str, ...]] = set()
            for pod in self.handle.pods_on_node(name):
                owners = owner_refs(pod)
                if not owners or (self.args.exclude_owner_kinds and has_owner_kind(
                        pod, self.args.exclude_owner_kinds)) or not self._accepts(pod):
                    continue
                namespace = (pod.get("metadata") or {}).get("namespace") or ""
                images = _images(pod)
                keys = [OwnerKey(namespace, o.get("kind") or "", o.get("name") or "",
                                 "#".join(images)) for o in owners]
                for key in keys:
                    occurrences[key] = occurrences.get(key, 0) + 1
                signature = tuple(sorted(f"{k.namespace}/{k.kind}/{k.name}/{image}"
                                         for k in keys for image in images))
                if signature not in seen:
                    seen.add(signature)
                    continue
                for key in keys:
                    duplicates.setdefault(key, {}).setdefault(name, []).append(pod)
        for key, by_node in duplicates.items():
            targets = feasible_nodes(by_node, nodes)
            if len(targets) < 2:
                continue
            upper_avg = math.ceil(occurrences[key] / len(targets))
            for pods in by_node.values():
                # the first pod of the owner on the node is not in the list
                if len(pods) + 1 <= upper_avg:
                    continue
                for pod in pods[upper_avg - 1:]:
                    self.handle.evictor.evict(pod, EvictOptions(
                        plugin_name=NAME, reason=f"duplicate of {key.kind}/{key.name} above "
                        f"the {upper_avg} per node its pods' feasible nodes allow"))
        return Status()
