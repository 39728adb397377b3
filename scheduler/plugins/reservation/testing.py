"""Test helpers: Reservations (typed, as the informer delivers them), nodes and pods as dicts,
and a profile enabling the Reservation plugin where upstream's shipped profile does."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from api.scheduling.v1alpha1.reservation import Reservation

SCHEDULER = "koord-scheduler"


def make_reservation(name: str, *, node: str = "", cpu: str = "4", memory: str = "8Gi",
                     owner_labels: Mapping[str, str] | None = None,
                     allocate_once: bool | None = None, allocate_policy: str | None = None,
                     order: int | None = None, phase: str | None = None,
                     template_node: str = "", scheduler: str = SCHEDULER,
                     ttl: str | None = "1h") -> Reservation:
    """Owned by pods labelled ``owner_labels`` (default ``app: <name>``); Available on
    ``node`` when one is given (allocatable = the template's requests)."""
    labels = {"scheduling.koordinator.sh/reservation-order": str(order)} if order else {}
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [
        {"name": "main", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
    if template_node:
        spec["nodeName"] = template_node
    obj: dict[str, Any] = {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Reservation",
        "metadata": {"name": name, "uid": f"r-{name}", "labels": labels,
                     "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"template": {"metadata": {"namespace": "default"}, "spec": spec},
                 "owners": [{"labelSelector": {"matchLabels": dict(owner_labels or
                                                                   {"app": name})}}]}}
    if ttl is not None:
        obj["spec"]["ttl"] = ttl
    if allocate_once is not None:
        obj["spec"]["allocateOnce"] = allocate_once
    if allocate_policy is not None:
        obj["spec"]["allocatePolicy"] = allocate_policy
    if node:
        obj["status"] = {"phase": phase or "Available", "nodeName": node,
                         "allocatable": {"cpu": cpu, "memory": memory}}
    elif phase:
        obj["status"] = {"phase": phase}
    return Reservation.model_validate(obj)


def make_node(name: str, cpu: str = "8", memory: str = "16Gi") -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}}


def make_pod(name: str, cpu: str = "2", memory: str = "4Gi", *,
             labels: Mapping[str, str] | None = None, node: str = "",
             annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                         "labels": dict(labels or {}), "annotations": dict(annotations or {})},
            "spec": {"schedulerName": SCHEDULER, "nodeName": node, "containers": [
                {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]},
            "status": {"phase": "Pending"}}


def reservation_config(*, enable_preemption: bool = False) -> str:
    """A KubeSchedulerConfiguration whose profile runs Reservation at upstream's points. With
    ``enable_preemption`` the Reservation plugin preempts (``enablePreemption: true``) in
    place of DefaultPreemption, which would evict the pods it spares."""
    points = "\n".join(f"    {p}: {{enabled: [{{name: Reservation}}]}}" for p in (
        "preFilter", "filter", "preScore", "reserve", "preBind"))
    disabled = "disabled: [{name: DefaultPreemption}], " if enable_preemption else ""
    plugin_config = ("  pluginConfig:\n  - name: Reservation\n    args: {enablePreemption: true}\n"
                     if enable_preemption else "")
    return f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: {SCHEDULER}
  plugins:
{points}
    postFilter: {{{disabled}enabled: [{{name: Reservation}}]}}
    score: {{enabled: [{{name: Reservation, weight: 5000}}]}}
    bind: {{disabled: [{{name: "*"}}], enabled: [{{name: Reservation}}, {{name: DefaultBinder}}]}}
{plugin_config}"""
