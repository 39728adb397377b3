"""The selector default constraints spread a pod by: its Services' and controller's.

Corresponds to kube-scheduler ``plugins/helper/spread.go`` (``DefaultSelector``,
``GetPodServices``) with the listers PodTopologySpread's ``setListers`` takes from the shared
informer factory: the selectors of the Services of the pod's namespace that select it, plus
the selector of its controlling ReplicationController, ReplicaSet or StatefulSet. An empty
result means the pod gets no default constraints.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pkg.client.informers.listers import Lister
from pkg.client.resources import (
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    SERVICES,
    STATEFUL_SETS,
    Resource,
)
from pkg.util.labels import InvalidSelectorError, Selector, parse_selector
from scheduler.framework.plugins.podtopologyspread.common import selector_from_set
from scheduler.frameworkext.interface import InformerFactory

_RC = ("", "v1", "ReplicationController")
_LABEL_SELECTOR_KINDS = {("apps", "v1", "ReplicaSet"), ("apps", "v1", "StatefulSet")}


class Listers:
    """Service, ReplicationController, ReplicaSet and StatefulSet caches of one factory."""

    def __init__(self, informer_factory: InformerFactory) -> None:
        def lister(resource: Resource) -> Lister[Any]:
            return informer_factory.informer_for(resource, typed=False).lister

        self.services = lister(SERVICES)
        self.replication_controllers = lister(REPLICATION_CONTROLLERS)
        self.replica_sets = lister(REPLICA_SETS)
        self.stateful_sets = lister(STATEFUL_SETS)


def _controller(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref
    return None


def _group_version(api_version: str) -> tuple[str, str] | None:
    """``schema.ParseGroupVersion``: "v1" → ("", "v1"); None when malformed."""
    if api_version.count("/") > 1:
        return None
    group, _, version = api_version.rpartition("/")
    return group, version


def default_selector(pod: Mapping[str, Any], listers: Listers) -> Selector:
    meta = pod.get("metadata") or {}
    namespace = meta.get("namespace", "")
    labels = meta.get("labels") or {}
    label_set: dict[str, str] = {}
    for service in listers.services.namespace(namespace).list():
        chosen = (service.get("spec") or {}).get("selector")
        # A Service with a nil selector selects nothing, not everything.
        if chosen is None:
            continue
        if all(labels.get(k) == v for k, v in chosen.items()):
            label_set.update(chosen)
    selector = selector_from_set(label_set)
    owner = _controller(pod)
    gv = None if owner is None else _group_version(owner.get("apiVersion") or "")
    if owner is None or gv is None:
        return selector
    gvk = (*gv, owner.get("kind") or "")
    name = owner.get("name") or ""
    if gvk == _RC:
        rc = listers.replication_controllers.get(name, namespace)
        if rc is not None:
            label_set.update((rc.get("spec") or {}).get("selector") or {})
            selector = selector_from_set(label_set)
    elif gvk in _LABEL_SELECTOR_KINDS:
        lister = (listers.replica_sets if gvk[2] == "ReplicaSet" else listers.stateful_sets)
        obj = lister.get(name, namespace)
        if obj is not None:
            try:
                other = parse_selector((obj.get("spec") or {}).get("selector"))
            except InvalidSelectorError:
                return selector
            if other.requirements is not None:
                selector = Selector((selector.requirements or ()) + other.requirements)
    return selector
