"""A pod's controlling workload: its desired replicas and its sibling pods.

Corresponds to koordinator ``pkg/descheduler/controllers/migration/controllerfinder``
(``GetPodsForRef``, ``GetExpectedScaleForPod``) for the built-in workloads: a ReplicaSet (or the
Deployment owning it), a StatefulSet and a ReplicationController. Workloads without a lister here
(Kruise CloneSets, anything reached through the scale subresource) have no known replicas.
Siblings are found through the pod informer's index on the controller owner's UID, never by
listing every pod.

ReplicationControllers are read from the API server when a pod names one (``WorkloadGetter``),
not through an informer: the chart's ClusterRole (upstream's) grants koord-descheduler nothing on
them, and upstream's cached client starts watching a kind only when it is first asked for one,
so an informer here would be denied and keep the process from ever syncing.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from api.extension.objects import metadata_of, spec_of
from descheduler.framework.types import Obj, ObjectLister
from pkg.client.errors import ApiError, is_not_found
from pkg.client.resources import Resource

log = logging.getLogger(__name__)

# Pod index: the UID of the pod's controller owner reference.
POD_BY_OWNER_UID = "ownerRefUID"

_APPS = "apps"


def controller_of(obj: Obj | None) -> Mapping[str, Any] | None:
    """The owner reference marked ``controller: true`` (``metav1.GetControllerOf``)."""
    for ref in metadata_of(obj).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref
    return None


def pod_owner_uid_index(pod: Obj) -> list[str]:
    """Index function for ``POD_BY_OWNER_UID``."""
    ref = controller_of(pod)
    uid = ref.get("uid") if ref is not None else None
    return [uid] if uid else []


def _group(ref: Mapping[str, Any]) -> str:
    api_version = ref.get("apiVersion") or ""
    return api_version.rpartition("/")[0] if "/" in api_version else ""


def _replicas(workload: Obj) -> int:
    # spec.replicas defaults to 1 when unset.
    replicas = spec_of(workload).get("replicas")
    return 1 if replicas is None else int(replicas)


class WorkloadGetter(Protocol):
    """Reads one workload by name (an informer's lister is one)."""

    def get(self, name: str, namespace: str | None = None) -> Any: ...


class ObjectReader(Protocol):
    """The API client's GET (``pkg.client.rest.Client``)."""

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Any: ...


@dataclass(frozen=True, slots=True)
class ApiWorkloadGetter:
    """A ``WorkloadGetter`` asking the API server each time; None when the object is missing
    or cannot be read (logged), so the pod's workload is unknown."""

    client: ObjectReader
    resource: Resource

    def get(self, name: str, namespace: str | None = None) -> Obj | None:
        try:
            obj: Obj = self.client.get(self.resource, name, namespace)
        except ApiError as err:
            if not is_not_found(err):
                log.warning("Failed to get %s %s/%s: %s", self.resource.kind, namespace, name,
                            err)
            return None
        return obj


@dataclass(frozen=True, slots=True)
class WorkloadListers:
    """The informers the finder reads; ``pods`` must carry the ``POD_BY_OWNER_UID`` index."""

    pods: ObjectLister
    replica_sets: ObjectLister
    deployments: ObjectLister
    stateful_sets: ObjectLister
    replication_controllers: WorkloadGetter


class ControllerFinder:
    def __init__(self, listers: WorkloadListers) -> None:
        self.listers = listers
        self._by_kind: dict[tuple[str, str], WorkloadGetter] = {
            (_APPS, "ReplicaSet"): listers.replica_sets,
            (_APPS, "Deployment"): listers.deployments,
            (_APPS, "StatefulSet"): listers.stateful_sets,
            ("", "ReplicationController"): listers.replication_controllers,
        }

    def _get(self, ref: Mapping[str, Any], namespace: str) -> Obj | None:
        """The object ``ref`` names, when its kind is known and its UID (if given) matches."""
        lister = self._by_kind.get((_group(ref), ref.get("kind") or ""))
        if lister is None:
            return None
        obj = lister.get(ref.get("name") or "", namespace)
        if obj is None or (ref.get("uid") and metadata_of(obj).get("uid") != ref["uid"]):
            return None
        return obj

    def workload_of(self, pod: Obj) -> Obj | None:
        """The object whose replicas govern ``pod``: the Deployment above a ReplicaSet, else the
        pod's controller itself; None for no controller, an unknown kind or a missing object."""
        ref = controller_of(pod)
        if ref is None:
            return None
        namespace = metadata_of(pod).get("namespace") or ""
        workload = self._get(ref, namespace)
        if workload is not None and ref.get("kind") == "ReplicaSet":
            parent = controller_of(workload)
            if parent is not None and parent.get("kind") == "Deployment":
                return self._get(parent, namespace)
        return workload

    def expected_replicas(self, pod: Obj) -> int | None:
        """The desired replicas of the pod's workload (None: no controller or not found)."""
        workload = self.workload_of(pod)
        return None if workload is None else _replicas(workload)

    def workload_pods(self, pod: Obj) -> list[Obj]:
        """The pods sharing ``pod``'s controller (the pod itself included)."""
        ref = controller_of(pod)
        if ref is None or not ref.get("uid"):
            return []
        return self.listers.pods.by_index(POD_BY_OWNER_UID, ref["uid"])
