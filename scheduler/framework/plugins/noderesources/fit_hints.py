"""NodeResourcesFit's queueing hints: may this event make a pod it rejected fit?

Corresponds to kubernetes ``pkg/scheduler/framework/plugins/noderesources/fit.go``
(``isSchedulableAfterPodEvent``, ``isSchedulableAfterPodScaleDown``,
``isSchedulableAfterNodeChange``, ``haveAnyRequestedResourcesIncreased``), v1.35 with
SchedulerQueueingHints and InPlacePodVerticalScaling on. Requests are read from pod specs (no
resize status is modelled).

* A deleted pod helps when it was bound or nominated somewhere.
* A scaled-down pod helps when it is the pod itself, or a bound pod that now requests less of
  something the pod requests.
* A new node helps when the pod fits it empty; an updated node also needs more allocatable of
  something the pod requests (or more pods).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pkg.util.podresources import CPU, EPHEMERAL_STORAGE, MEMORY, pod_requests
from scheduler.framework.events import QueueingHint
from scheduler.framework.plugins.noderesources.fits import (
    compute_pod_request,
    insufficient_resources,
)
from scheduler.framework.plugins.noderesources.resource_names import is_scalar_resource_name
from scheduler.framework.types import NodeInfo


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def _uid(obj: Mapping[str, Any]) -> str:
    return (obj.get("metadata") or {}).get("uid", "")


def is_schedulable_after_pod_event(pod: dict[str, Any], old: Any, new: Any) -> QueueingHint:
    if new is None:
        nominated = (old.get("status") or {}).get("nominatedNodeName")
        if not _spec(old).get("nodeName") and not nominated:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE
    if _uid(new) == _uid(pod):
        return QueueingHint.QUEUE
    if not _spec(new).get("nodeName"):
        return QueueingHint.QUEUE_SKIP
    before, after = pod_requests(old), pod_requests(new)
    for name, quantity in pod_requests(pod).items():
        if quantity == 0:
            continue
        if name in (CPU, MEMORY, EPHEMERAL_STORAGE) or is_scalar_resource_name(name):
            if before.get(name, 0) > after.get(name, 0):
                return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def is_schedulable_after_node_change(pod: dict[str, Any], old: Any, new: Any) -> QueueingHint:
    request = compute_pod_request(pod_requests(pod))
    modified = NodeInfo(new)
    if insufficient_resources(request, modified):
        return QueueingHint.QUEUE_SKIP
    if old is None:
        return QueueingHint.QUEUE
    original = NodeInfo(old)
    if modified.allowed_pod_number > original.allowed_pod_number:
        return QueueingHint.QUEUE
    if any(modified.allocatable.get(name, 0) > original.allocatable.get(name, 0)
           for name, _ in request.checks):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
