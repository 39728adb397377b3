"""Test helpers for the MigrationController's parts: pods and PodMigrationJobs as upstream's
tests build them, in namespace ``NS`` (``namespace()`` creates it), and an event recorder that
keeps what it records."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pkg.client.resources import POD_MIGRATION_JOBS, PODS
from pkg.client.rest import Client

NS = "migration"
NODE = "node-a"


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


__all__ = ["NODE", "NS", "FakeRecorder", "create_job", "create_pod", "namespace"]
