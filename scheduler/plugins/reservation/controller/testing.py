"""Reservations and consumer pods as the controller's tests write them to an API server."""

from __future__ import annotations

from typing import Any

from api.extension.reservation import ANNOTATION_RESERVATION_ALLOCATED, format_reservation_allocated
from pkg.client.resources import PODS, RESERVATIONS
from pkg.client.rest import Client


def create_reservation(client: Client, name: str, *, status: dict[str, Any] | None = None,
                       **spec: Any) -> dict[str, Any]:
    """A Reservation owned by pod ``default/<name>-owner`` (``spec`` adds or overrides spec
    fields), then ``status`` written through the status subresource as the scheduler's Bind
    does. Returns the stored object."""
    obj = client.create(RESERVATIONS, {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Reservation",
        "metadata": {"name": name},
        "spec": {"template": {"spec": {"containers": [{"name": "main", "resources": {
                     "requests": {"cpu": "4", "memory": "8Gi"}}}]}},
                 "owners": [{"object": {"namespace": "default", "name": f"{name}-owner"}}],
                 **spec}})
    if status is not None:
        obj["status"] = status
        obj = client.update_status(RESERVATIONS, obj)
    return obj


def available(node: str, **allocatable: str) -> dict[str, Any]:
    """The status Bind writes: Available on ``node`` with Scheduled and Ready conditions."""
    ts = "2026-01-01T00:00:00Z"
    return {"phase": "Available", "nodeName": node,
            "allocatable": allocatable or {"cpu": "4", "memory": "8Gi"},
            "conditions": [
                {"type": "Scheduled", "status": "True", "reason": "Scheduled",
                 "lastProbeTime": ts, "lastTransitionTime": ts},
                {"type": "Ready", "status": "True", "reason": "Available",
                 "lastProbeTime": ts, "lastTransitionTime": ts}]}


def create_consumer(client: Client, name: str, reservation: dict[str, Any], node: str, *,
                    cpu: str = "1", memory: str = "2Gi") -> dict[str, Any]:
    """A pod bound to ``node`` carrying the reservation-allocated annotation of
    ``reservation``, as the scheduler's PreBind leaves it."""
    md = reservation["metadata"]
    return client.create(PODS, {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "annotations": {
            ANNOTATION_RESERVATION_ALLOCATED: format_reservation_allocated(md["name"],
                                                                          md["uid"])}},
        "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0, "containers": [
            {"name": "main", "image": "busybox", "resources": {
                "requests": {"cpu": cpu, "memory": memory, "ephemeral-storage": "10Gi"},
                "limits": {"cpu": cpu, "memory": memory}}}]}}, "default")
