"""Test helpers for the MigrationController's parts: pods, workloads and PodMigrationJobs as
parsed-JSON dicts, listers over plain stores indexed as the controller's informers are; for the
tests against the embedded API server, pods and jobs created in namespace ``NS``
(``namespace()`` creates it) and an event recorder that keeps what it records."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from descheduler.controllers.migration.controllerfinder import (
    POD_BY_OWNER_UID,
    ControllerFinder,
    WorkloadListers,
    pod_owner_uid_index,
)
from descheduler.controllers.migration.util import ANNOTATION_PASSED_ARBITRATION, job_indexers
from pkg.client.informers.listers import Lister
from pkg.client.informers.store import NODE_NAME_INDEX, Indexer, pod_node_name_index
from pkg.client.resources import POD_MIGRATION_JOBS, PODS
from pkg.client.rest import Client

Dict = dict[str, Any]
NODE = "node-a"
NS = "migration"
_ids = itertools.count(1)


def timestamp(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def owner(kind: str, name: str, uid: str | None = None, api_version: str = "apps/v1") -> Dict:
    return {"apiVersion": api_version, "kind": kind, "name": name,
            "uid": uid or f"{kind.lower()}-{name}", "controller": True}


def pod(name: str, namespace: str = "default", *, node: str = NODE, uid: str | None = None,
        owners: Iterable[Dict] = (), ready: bool = True, phase: str = "Running",
        annotations: dict[str, str] | None = None, labels: dict[str, str] | None = None,
        scheduler: str = "koord-scheduler", created: float = 0.0, **spec: Any) -> Dict:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": uid or f"uid-{name}",
                     "ownerReferences": list(owners), "annotations": dict(annotations or {}),
                     "labels": dict(labels or {}), "creationTimestamp": timestamp(created)},
        "spec": {"nodeName": node, "schedulerName": scheduler,
                 "containers": [{"name": "c", "image": "i"}], **spec},
        "status": {"phase": phase,
                   "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def workload(kind: str, name: str, replicas: int | None, namespace: str = "default",
             owners: Iterable[Dict] = (), api_version: str = "apps/v1") -> Dict:
    return {"apiVersion": api_version, "kind": kind,
            "metadata": {"name": name, "namespace": namespace,
                         "uid": f"{kind.lower()}-{name}", "ownerReferences": list(owners)},
            "spec": {} if replicas is None else {"replicas": replicas}}


def job(of: Dict, name: str | None = None, *, phase: str | None = None, passed: bool = False,
        created: float = 0.0, uid: str | None = None) -> Dict:
    """A PodMigrationJob for pod ``of``."""
    name = name or f"job-{next(_ids)}"
    md = of["metadata"]
    return {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "PodMigrationJob",
        "metadata": {"name": name, "uid": uid or f"uid-{name}",
                     "creationTimestamp": timestamp(created),
                     "annotations": {ANNOTATION_PASSED_ARBITRATION: "true"} if passed else {}},
        "spec": {"podRef": {"namespace": md["namespace"], "name": md["name"],
                            "uid": md["uid"]}},
        "status": {"phase": phase} if phase else {},
    }


@dataclass
class Stores:
    """Stores indexed as the controller's informers; ``finder`` and the listers read them."""

    pods: Indexer
    jobs: Indexer
    workloads: dict[str, Indexer]

    @classmethod
    def of(cls, pods: Iterable[Dict] = (), jobs: Iterable[Dict] = (),
           workloads: Iterable[Dict] = ()) -> Stores:
        stores = cls(Indexer(indexers={NODE_NAME_INDEX: pod_node_name_index,
                                       POD_BY_OWNER_UID: pod_owner_uid_index}),
                     Indexer(key_func=lambda o: o["metadata"]["name"], indexers=job_indexers()),
                     {k: Indexer() for k in ("ReplicaSet", "Deployment", "StatefulSet",
                                             "ReplicationController")})
        for p in pods:
            stores.pods.add(p)
        for j in jobs:
            stores.jobs.add(j)
        for w in workloads:
            stores.workloads[w["kind"]].add(w)
        return stores

    @property
    def listers(self) -> WorkloadListers:
        return WorkloadListers(
            pods=Lister(self.pods), replica_sets=Lister(self.workloads["ReplicaSet"]),
            deployments=Lister(self.workloads["Deployment"]),
            stateful_sets=Lister(self.workloads["StatefulSet"]),
            replication_controllers=Lister(self.workloads["ReplicationController"]))

    @property
    def job_lister(self) -> Lister[Dict]:
        return Lister(self.jobs, namespaced=False)

    @property
    def finder(self) -> ControllerFinder:
        return ControllerFinder(self.listers)


def namespace() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}


@dataclass
class FakeRecorder:
    """Keeps ``(kind, type, reason, message)`` of each event."""

    events: list[tuple[str, str, str, str]] = field(default_factory=list)

    def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        self.events.append((obj["kind"], type_, reason, message))


def create_pod(client: Client, name: str, node: str = NODE, *,
               labels: dict[str, str] | None = None, phase: str = "Running",
               conditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A ReplicaSet's pod (deleted at once: no grace period) with the given status."""
    spec: dict[str, Any] = {"schedulerName": "koord-scheduler",
                            "terminationGracePeriodSeconds": 0,
                            "containers": [{"name": "main", "image": "nginx"}]}
    if node:
        spec["nodeName"] = node
    pod = client.create(PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": name, "namespace": NS, "labels": labels or {"app": "web"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-rs",
                             "uid": "rs-uid", "controller": True}]}, "spec": spec})
    pod["status"] = {"phase": phase, "conditions": conditions or []}
    return client.update_status(PODS, pod)


def create_job(client: Client, name: str, pod: str, *, mode: str = "ReservationFirst",
               ttl: str | None = "5m0s", annotations: dict[str, str] | None = None,
               labels: dict[str, str] | None = None, spec: dict[str, Any] | None = None
               ) -> dict[str, Any]:
    """A job for ``NS/pod`` asked for by LowNodeLoad because the node is overutilized."""
    job_spec: dict[str, Any] = {"podRef": {"namespace": NS, "name": pod}, "mode": mode,
                                **(spec or {})}
    if ttl is not None:
        job_spec["ttl"] = ttl
    return client.create(POD_MIGRATION_JOBS, {
        "apiVersion": POD_MIGRATION_JOBS.api_version, "kind": "PodMigrationJob",
        "metadata": {"name": name, "labels": labels or {}, "annotations": {
            "koordinator.sh/evict-reason": "node is overutilized",
            "koordinator.sh/evict-trigger": "LowNodeLoad", **(annotations or {})}},
        "spec": job_spec})
