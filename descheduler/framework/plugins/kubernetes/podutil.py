"""What the wrapped sigs.k8s.io/descheduler plugins share: which pods a plugin looks at, pod
ages, owners, container states and the orders pods are evicted in.

Corresponds to sigs.k8s.io/descheduler ``pkg/descheduler/pod`` (``Options.BuildFilterFunc``:
included/excluded namespaces, a label selector, then the evictor's filters; ``OwnerRef``,
``SortPodsBasedOnAge``, ``SortPodsBasedOnPriorityLowToHigh``) and ``pkg/utils`` (the QoS
helpers). Pods are parsed-JSON dicts as the informers hold them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from api.extension.qos import get_kube_qos_class
from api.meta import LabelSelector, parse_timestamp
from descheduler.apis.config.args import Namespaces
from descheduler.framework.types import Obj
from pkg.util.labels import parse_selector

PodFilter = Callable[[Obj], bool]


def pod_filter(namespaces: Namespaces | None, label_selector: LabelSelector | None,
               *evictor_checks: PodFilter) -> PodFilter:
    """Pods in the included (not in the excluded) namespaces, matching ``label_selector`` when
    given, that every check in ``evictor_checks`` accepts (checked last: they cost most)."""
    include = frozenset(namespaces.include) if namespaces is not None else frozenset()
    exclude = frozenset(namespaces.exclude) if namespaces is not None else frozenset()
    # Validated when the configuration was loaded.
    selector = parse_selector(label_selector) if label_selector is not None else None

    def accepts(pod: Obj) -> bool:
        md = pod.get("metadata") or {}
        namespace = md.get("namespace") or ""
        if include and namespace not in include or namespace in exclude:
            return False
        if selector is not None and not selector.matches(md.get("labels") or {}):
            return False
        return all(check(pod) for check in evictor_checks)

    return accepts


def pods_on_nodes(pods_on_node: Callable[[str], list[Obj]], nodes: Iterable[Obj],
                  accepts: PodFilter | None = None) -> list[Obj]:
    """The pods on ``nodes`` that ``accepts`` lets through (all when None), node by node."""
    return [pod for node in nodes
            for pod in pods_on_node((node.get("metadata") or {}).get("name") or "")
            if accepts is None or accepts(pod)]


def owner_refs(pod: Obj) -> list[Mapping[str, Any]]:
    return (pod.get("metadata") or {}).get("ownerReferences") or []


def has_owner_kind(pod: Obj, kinds: Iterable[str]) -> bool:
    wanted = set(kinds)
    return any(owner.get("kind") in wanted for owner in owner_refs(pod))


def creation_time(pod: Obj) -> float:
    """The pod's creationTimestamp in seconds; one without reads as Go's zero time does, as
    long ago."""
    created = parse_timestamp((pod.get("metadata") or {}).get("creationTimestamp"))
    return created if created is not None else 0.0


def age_seconds(pod: Obj, now: float) -> int:
    """Whole seconds since the pod was created (negative for a clock behind the API's)."""
    return int(now - creation_time(pod))


def container_statuses(pod: Obj, *, init: bool = False,
                       ephemeral: bool = False) -> list[Mapping[str, Any]]:
    """``status.containerStatuses``, then the init and ephemeral ones when asked."""
    status = pod.get("status") or {}
    out = list(status.get("containerStatuses") or [])
    if init:
        out += status.get("initContainerStatuses") or []
    if ephemeral:
        out += status.get("ephemeralContainerStatuses") or []
    return out


def state_reason(status: Mapping[str, Any], state: str) -> str:
    """The reason of a container status' ``waiting`` or ``terminated`` state ("" if not in
    it)."""
    return ((status.get("state") or {}).get(state) or {}).get("reason") or ""


def sort_by_age(pods: list[Obj]) -> None:
    """Oldest first (``SortPodsBasedOnAge``)."""
    pods.sort(key=creation_time)


_QOS_RANK = {"BestEffort": 0, "Burstable": 1, "Guaranteed": 2}


def sort_by_priority_low_to_high(pods: list[Obj]) -> None:
    """Pods without a priority first, then by ascending priority; equal priorities put
    BestEffort before Burstable before Guaranteed (``SortPodsBasedOnPriorityLowToHigh``)."""
    def key(pod: Obj) -> tuple[bool, int, int]:
        priority = (pod.get("spec") or {}).get("priority")
        return (priority is not None, priority or 0,
                _QOS_RANK.get(get_kube_qos_class(pod), 2))

    pods.sort(key=key)


def node_name(obj: Obj) -> str:
    return (obj.get("metadata") or {}).get("name") or ""


def node_map(nodes: Sequence[Obj]) -> dict[str, Obj]:
    return {node_name(node): node for node in nodes}
