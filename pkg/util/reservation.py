"""Reservations as the scheduler sees them: the reserve pod, activity and owner matching.

Corresponds to upstream ``pkg/util/reservation/reservation.go`` (``NewReservePod``,
``IsReservePod``, ``IsReservationActive``/``Available``/``Failed``/``Succeeded``,
``ValidateReservation``, ``ReservationRequests``, ``MatchReservationOwners``,
``IsReservationExpired``, ``SetReservationExpired``, ``SetReservationSucceeded``; scheduler.md
§7.1-7.2, §7.9). A Reservation is scheduled as a *reserve pod*: a fake pod named by the
Reservation's UID, built from ``spec.template``, that goes through the ordinary scheduling
cycle and, once the Reservation is Available, stands in the scheduler cache for the reserved
resources on its node. Reserve pods never exist in the API server.

The status transitions the Reservation controller writes work on the Ready condition only:
Expired makes it Ready=False (a fresh condition when it was Ready=True or missing, else only
the reason and probe time change, so the transition time stays when the Reservation was
already not ready); Succeeded sets Ready=False, reason Succeeded, keeping the transition time
of an existing Ready condition. Upstream writes no message on either.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from api.core import QuantityFormat, format_quantity, quantity_format
from api.extension.constants import SCHEDULING_DOMAIN_PREFIX
from api.extension.objects import annotations_of
from api.extension.priority import LABEL_POD_PRIORITY
from api.meta import format_timestamp
from api.scheduling.v1alpha1.reservation import (
    REASON_RESERVATION_EXPIRED,
    REASON_RESERVATION_SUCCEEDED,
    ConditionStatus,
    Reservation,
    ReservationCondition,
    ReservationConditionType,
    ReservationOwner,
    ReservationPhase,
    ReservationStatus,
)
from pkg.util.labels import InvalidSelectorError, selector_matches
from pkg.util.podresources import CPU, pod_requests, resource_list

ANNOTATION_RESERVE_POD = SCHEDULING_DOMAIN_PREFIX + "/reserve-pod"
ANNOTATION_RESERVATION_NAME = SCHEDULING_DOMAIN_PREFIX + "/reservation-name"
ANNOTATION_RESERVATION_NODE = SCHEDULING_DOMAIN_PREFIX + "/reservation-node"
ANNOTATION_PRE_ALLOCATION = SCHEDULING_DOMAIN_PREFIX + "/is-pre-allocation"
# On a Reservation: ``{"resources": {...}}`` overriding what Bind makes its allocatable.
ANNOTATION_RESERVATION_RESIZE_ALLOCATABLE = (
    SCHEDULING_DOMAIN_PREFIX + "/reservation-resize-allocatable")

# The container a reserve pod gets when its Reservation's allocatable differs from the
# template's requests.
FAKE_CONTAINER = "__internal_fake_container__"
# Reserve pods without a priority of their own are never preempted by ordinary pods.
DEFAULT_RESERVE_POD_PRIORITY = 2147483647
DEFAULT_SCHEDULER_NAME = "default-scheduler"

REASON_RESERVATION_FAILED = "reservation is not active"


def is_reserve_pod(pod: Mapping[str, Any] | None) -> bool:
    return annotations_of(pod).get(ANNOTATION_RESERVE_POD) == "true"


def reservation_name_of(reserve_pod: Mapping[str, Any]) -> str:
    """The Reservation a reserve pod stands for."""
    return annotations_of(reserve_pod).get(ANNOTATION_RESERVATION_NAME, "")


# Phases -----------------------------------------------------------------------------------


def is_reservation_failed(r: Reservation) -> bool:
    return r.phase == ReservationPhase.FAILED


def is_reservation_succeeded(r: Reservation) -> bool:
    return r.phase == ReservationPhase.SUCCEEDED


def is_reservation_available(r: Reservation) -> bool:
    """Available and scheduled to a node: its resources are reserved there."""
    return r.phase == ReservationPhase.AVAILABLE and bool(r.status and r.status.node_name)


def is_reservation_active(r: Reservation) -> bool:
    """Pending or Available (not yet finished)."""
    return r.phase in (ReservationPhase.PENDING, ReservationPhase.AVAILABLE)


def is_unassigned_active(r: Reservation) -> bool:
    """To be scheduled: active, no node yet."""
    return is_reservation_active(r) and not (r.status and r.status.node_name)


def is_finished(r: Reservation) -> bool:
    """Failed or Succeeded: nothing more happens to it but GC."""
    return r.phase in (ReservationPhase.FAILED, ReservationPhase.SUCCEEDED)


def _ready_condition(r: Reservation) -> ReservationCondition | None:
    # Upstream takes the last Ready condition should there be several.
    found = None
    for c in (r.status.conditions if r.status else None) or ():
        if c.type == ReservationConditionType.READY:
            found = c
    return found


def is_reservation_expired(r: Reservation) -> bool:
    """Failed with the (first) Ready condition False, reason Expired."""
    if r.phase != ReservationPhase.FAILED:
        return False
    for c in (r.status.conditions if r.status else None) or ():
        if c.type == ReservationConditionType.READY:
            return c.status == ConditionStatus.FALSE and c.reason == REASON_RESERVATION_EXPIRED
    return False


def set_reservation_expired(r: Reservation, now: float) -> None:
    status = r.status = r.status or ReservationStatus()
    status.phase = ReservationPhase.FAILED
    ts = format_timestamp(now)
    ready = _ready_condition(r)
    fresh = ReservationCondition(type=ReservationConditionType.READY,
                                 status=ConditionStatus.FALSE, reason=REASON_RESERVATION_EXPIRED,
                                 last_probe_time=ts, last_transition_time=ts)
    conditions = status.conditions = list(status.conditions or ())
    if ready is None:
        conditions.append(fresh)
    elif ready.status == ConditionStatus.TRUE:
        conditions[_index(conditions, ready)] = fresh
    else:
        ready.reason = REASON_RESERVATION_EXPIRED
        ready.last_probe_time = ts


def set_reservation_succeeded(r: Reservation, now: float) -> None:
    status = r.status = r.status or ReservationStatus()
    status.phase = ReservationPhase.SUCCEEDED
    ts = format_timestamp(now)
    ready = _ready_condition(r)
    conditions = status.conditions = list(status.conditions or ())
    if ready is None:
        conditions.append(ReservationCondition(
            type=ReservationConditionType.READY, status=ConditionStatus.FALSE,
            reason=REASON_RESERVATION_SUCCEEDED, last_probe_time=ts, last_transition_time=ts))
    else:
        ready.status = ConditionStatus.FALSE
        ready.reason = REASON_RESERVATION_SUCCEEDED
        ready.last_probe_time = ts


def _index(conditions: list[ReservationCondition], condition: ReservationCondition) -> int:
    return next(i for i, c in enumerate(conditions) if c is condition)


def validate_reservation(r: Reservation) -> str | None:
    """Why the Reservation cannot be scheduled (``ValidateReservation``), None when it can."""
    if r.spec.template is None:
        return "the reservation misses the template spec"
    if not r.spec.owners:
        return "the reservation misses the owner spec"
    if r.spec.ttl is None and r.spec.expires is None:
        return "the reservation misses the expiration spec"
    return None


# Requests ---------------------------------------------------------------------------------


def _template_pod(r: Reservation) -> dict[str, Any]:
    return copy.deepcopy(dict(r.spec.template or {}))


def template_requests(r: Reservation) -> dict[str, int]:
    """The template pod's requests (integers, cpu in millicores)."""
    return pod_requests(_template_pod(r))


def template_requests_quantities(r: Reservation) -> dict[str, str]:
    """The template pod's requests as quantities (``ReservationRequests``), each in the format
    the template wrote it in (Go's quantity sums keep the first operand's)."""
    formats: dict[str, QuantityFormat] = {}
    for c in ((r.spec.template or {}).get("spec") or {}).get("containers") or ():
        for name, q in ((c.get("resources") or {}).get("requests") or {}).items():
            formats.setdefault(name, quantity_format(str(q)))
    out = {}
    for name, value in template_requests(r).items():
        amount = Decimal(value) / 1000 if name == CPU else Decimal(value)
        out[name] = format_quantity(amount, formats.get(name, QuantityFormat.DECIMAL_SI))
    return out


def allocatable_at_bind(r: Reservation) -> dict[str, str]:
    """What Bind writes as ``status.allocatable``: the template's requests, each overridden
    by the ``reservation-resize-allocatable`` annotation. Raises ValueError when the
    annotation does not parse."""
    allocatable = template_requests_quantities(r)
    raw = (r.metadata.annotations or {}).get(ANNOTATION_RESERVATION_RESIZE_ALLOCATABLE)
    if raw:
        try:
            resize = json.loads(raw)
            resources = resize.get("resources") or {}
            for name, q in resources.items():
                allocatable[name] = format_quantity(str(q))
        except (ValueError, AttributeError, TypeError) as err:
            raise ValueError(f"invalid {ANNOTATION_RESERVATION_RESIZE_ALLOCATABLE} "
                             f"annotation: {err}") from err
    return allocatable


def requests_as_quantities(requests: Mapping[str, int]) -> dict[str, str]:
    """Integers (cpu in millicores) as quantities for a pod's container."""
    return {name: (f"{v}m" if name == CPU else str(v)) for name, v in requests.items()}


def with_requests(reserve_pod: dict[str, Any], requests: Mapping[str, int]) -> dict[str, Any]:
    """The reserve pod with its containers' resources replaced by one fake container that
    requests (and is limited to) ``requests``."""
    spec = dict(reserve_pod.get("spec") or {})
    quantities = requests_as_quantities(requests)
    spec["containers"] = [
        *({**c, "resources": {}} for c in spec.get("containers") or ()),
        {"name": FAKE_CONTAINER,
         "resources": {"requests": quantities, "limits": dict(quantities)}}]
    spec.pop("initContainers", None)
    spec.pop("overhead", None)
    spec.pop("resources", None)
    return {**reserve_pod, "spec": spec}


# The reserve pod --------------------------------------------------------------------------


def _priority(r: Reservation, spec: Mapping[str, Any]) -> int:
    if spec.get("priority") is not None:
        return int(spec["priority"])
    raw = (r.metadata.labels or {}).get(LABEL_POD_PRIORITY)
    if raw:
        try:
            return int(raw)
        except ValueError:
            pass
    return DEFAULT_RESERVE_POD_PRIORITY


def new_reserve_pod(r: Reservation) -> dict[str, Any]:
    """The fake pod scheduled for (and, once Available, standing for) the Reservation."""
    template = _template_pod(r)
    meta = dict(template.get("metadata") or {})
    spec = dict(template.get("spec") or {})
    uid = r.metadata.uid or ""
    labels = {**(meta.get("labels") or {}), **(r.metadata.labels or {})}
    annotations = {**(meta.get("annotations") or {}), **(r.metadata.annotations or {}),
                   ANNOTATION_RESERVE_POD: "true",
                   ANNOTATION_RESERVATION_NAME: r.metadata.name or ""}
    if spec.get("nodeName"):
        annotations[ANNOTATION_RESERVATION_NODE] = spec["nodeName"]
    if r.spec.pre_allocation:
        annotations[ANNOTATION_PRE_ALLOCATION] = "true"
    spec["nodeName"] = (r.status.node_name if r.status else None) or ""
    spec["priority"] = _priority(r, spec)
    spec["schedulerName"] = spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME
    pod: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {**meta, "name": uid, "namespace": meta.get("namespace") or "default",
                     "uid": uid, "labels": labels, "annotations": annotations,
                     "creationTimestamp": r.metadata.creation_timestamp,
                     "resourceVersion": r.metadata.resource_version},
        "spec": spec, "status": {}}
    if is_reservation_succeeded(r):
        pod["status"] = {"phase": "Succeeded"}
    elif is_reservation_failed(r):
        pod["status"] = {"phase": "Failed"}
    if is_reservation_available(r):
        assert r.status is not None
        allocatable = resource_list(r.status.allocatable)
        if allocatable and pod_requests(pod) != allocatable:
            pod = with_requests(pod, allocatable)
    return pod


# Owners -----------------------------------------------------------------------------------


def _object_matches(owner: ReservationOwner, meta: Mapping[str, Any],
                    api_version: str) -> bool:
    ref = owner.object
    assert ref is not None
    return ((not ref.uid or ref.uid == meta.get("uid"))
            and (not ref.name or ref.name == meta.get("name"))
            and (not ref.namespace or ref.namespace == meta.get("namespace"))
            and (not ref.api_version or ref.api_version == api_version))


def _controller_matches(owner: ReservationOwner, meta: Mapping[str, Any]) -> bool:
    ref = owner.controller
    assert ref is not None
    if ref.namespace and ref.namespace != meta.get("namespace"):
        return False
    for o in meta.get("ownerReferences") or ():
        if ((ref.controller is None or bool(o.get("controller")) == ref.controller)
                and (not ref.uid or ref.uid == o.get("uid"))
                and (not ref.name or ref.name == o.get("name"))
                and (not ref.kind or ref.kind == o.get("kind"))
                and (not ref.api_version or ref.api_version == o.get("apiVersion"))):
            return True
    return False


def owner_matches(owner: ReservationOwner, pod: Mapping[str, Any]) -> bool:
    """One ``spec.owners`` entry: every part it sets matches the pod."""
    meta = pod.get("metadata") or {}
    if owner.object is not None and not _object_matches(owner, meta,
                                                        pod.get("apiVersion") or "v1"):
        return False
    if owner.controller is not None and not _controller_matches(owner, meta):
        return False
    if owner.label_selector is not None:
        try:
            if not selector_matches(owner.label_selector, meta.get("labels") or {}):
                return False
        except InvalidSelectorError:
            return False
    return owner.object is not None or owner.controller is not None or \
        owner.label_selector is not None


def match_reservation_owners(pod: Mapping[str, Any], owners: Sequence[ReservationOwner]) -> bool:
    """The pod may consume the Reservation: some owner entry matches it."""
    return any(owner_matches(o, pod) for o in owners)


__all__ = [
    "ANNOTATION_PRE_ALLOCATION", "ANNOTATION_RESERVATION_NAME", "ANNOTATION_RESERVATION_NODE",
    "ANNOTATION_RESERVATION_RESIZE_ALLOCATABLE", "ANNOTATION_RESERVE_POD",
    "allocatable_at_bind", "DEFAULT_RESERVE_POD_PRIORITY", "FAKE_CONTAINER",
    "REASON_RESERVATION_FAILED", "is_reservation_active", "is_reservation_available",
    "is_reservation_failed", "is_reservation_succeeded", "is_reserve_pod",
    "is_unassigned_active", "match_reservation_owners", "new_reserve_pod", "owner_matches",
    "requests_as_quantities", "reservation_name_of", "template_requests",
    "template_requests_quantities", "validate_reservation", "with_requests",
]
