"""The Reservation a ReservationFirst PodMigrationJob reserves the pod's new place with.

Corresponds to koordinator ``pkg/descheduler/controllers/migration/reservation`` (``util.go``:
``CreateOrUpdateReservationOptions``, ``GenerateReserveResourceOwners``; ``reservation.go``: the
status questions the controller asks; ``interpreter.go``: create, get, delete). The Reservation is
named by the job's UID unless the job's template names it; its template is the pod (node name
cleared, the current node excluded by a required ``metadata.name NotIn`` term); its owner is the
pod itself while the pod waits to be scheduled, else the pod's controller; it is consumed once,
lives as long as the job (``ttl``) unless the template says otherwise, and carries the labels
``app.kubernetes.io/created-by: koord-descheduler`` and ``reservation-order`` (creation time in
ms). A Reservation that already exists under that name is used as it is. Objects are the API
server's JSON dicts.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from api.extension.objects import metadata_of, spec_of
from api.extension.reservation import LABEL_RESERVATION_ORDER
from api.meta import parse_duration
from api.scheduling.v1alpha1.reservation import (
    REASON_RESERVATION_EXPIRED,
    REASON_RESERVATION_SCHEDULED,
    REASON_RESERVATION_UNSCHEDULABLE,
    ReservationConditionType,
    ReservationPhase,
)
from pkg.client.errors import ApiError, is_already_exists
from pkg.client.resources import RESERVATIONS
from pkg.client.rest import Client
from pkg.features import default_feature_gate
from pkg.features.features import DISABLE_PVC_RESERVATION

Obj = Mapping[str, Any]

LABEL_CREATED_BY = "app.kubernetes.io/created-by"
DEFAULT_CREATOR = "koord-descheduler"


def pod_condition(pod: Obj, condition_type: str) -> Mapping[str, Any] | None:
    """The pod's condition of that type (``podutil.GetPodCondition``)."""
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == condition_type:
            return cond
    return None


def reserve_resource_owners(pod: Obj) -> list[dict[str, Any]]:
    """Who may use the Reservation: the pod itself when it is Pending and unschedulable (so
    the Reservation schedules that very pod), else the pod's controller; none for a bare pod."""
    md = metadata_of(pod)
    scheduled = pod_condition(pod, "PodScheduled")
    if ((pod.get("status") or {}).get("phase") == "Pending" and scheduled is not None
            and scheduled.get("status") == "False"):
        return [{"object": {"uid": md.get("uid", ""), "kind": "Pod", "name": md.get("name", ""),
                            "namespace": md.get("namespace", "")}}]
    for ref in md.get("ownerReferences") or ():
        if ref.get("controller"):
            return [{"controller": {**ref, "namespace": md.get("namespace", "")}}]
    return []


def _skip_current_node(pod_spec: dict[str, Any], node: str) -> None:
    """Every required node-affinity term also excludes ``node`` (a term of its own when there
    are none), so the new place is elsewhere."""
    affinity = pod_spec.get("affinity") or {}
    node_affinity = affinity.get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    skip = {"key": "metadata.name", "operator": "NotIn", "values": [node]}
    terms = required.get("nodeSelectorTerms") or []
    for term in terms:
        term["matchFields"] = [*(term.get("matchFields") or []), dict(skip)]
    required["nodeSelectorTerms"] = terms or [{"matchFields": [skip]}]
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = required
    affinity["nodeAffinity"] = node_affinity
    pod_spec["affinity"] = affinity


def reservation_options(job: Obj, pod: Obj, now: float) -> dict[str, Any]:
    """The job's ``spec.reservationOptions`` completed from ``pod`` at ``now`` (seconds)."""
    options = copy.deepcopy(dict(spec_of(job).get("reservationOptions") or {}))
    template = options["template"] = options.get("template") or {}
    template_md = template["metadata"] = template.get("metadata") or {}
    if not template_md.get("name"):
        template_md["name"] = metadata_of(job).get("uid", "")
    r_spec = template["spec"] = template.get("spec") or {}
    if not r_spec.get("template"):
        r_spec["template"] = {"metadata": copy.deepcopy(dict(metadata_of(pod))),
                              "spec": copy.deepcopy(dict(spec_of(pod)))}
    if not r_spec.get("owners"):
        r_spec["owners"] = reserve_resource_owners(pod)
    # A Reservation made for a migration is not reused once a pod consumed it.
    r_spec["allocateOnce"] = True
    pod_spec = r_spec["template"]["spec"] = r_spec["template"].get("spec") or {}
    # The pod's new place is for the scheduler to find.
    pod_spec.pop("nodeName", None)
    labels = template_md["labels"] = template_md.get("labels") or {}
    labels[LABEL_CREATED_BY] = DEFAULT_CREATOR
    labels[LABEL_RESERVATION_ORDER] = _order(now)
    ttl = spec_of(job).get("ttl")
    if (r_spec.get("ttl") is None and r_spec.get("expires") is None and ttl
            and parse_duration(ttl) > 0):
        r_spec["ttl"] = ttl
    node = spec_of(pod).get("nodeName")
    if node:
        _skip_current_node(pod_spec, node)
    if default_feature_gate.enabled(DISABLE_PVC_RESERVATION):
        pod_spec["volumes"] = [v for v in pod_spec.get("volumes") or ()
                               if "persistentVolumeClaim" not in v and "ephemeral" not in v]
    return options


def create_reservation(client: Client, options: Obj) -> dict[str, Any]:
    """Create the Reservation of ``options.template``; one already there by that name is
    returned as it is."""
    template = options["template"]
    metadata: Mapping[str, Any] = template.get("metadata") or {}
    body = {"apiVersion": RESERVATIONS.api_version, "kind": RESERVATIONS.kind,
            "metadata": metadata, "spec": template.get("spec") or {}}
    try:
        return client.create(RESERVATIONS, body)
    except ApiError as err:
        if not is_already_exists(err):
            raise
    return client.get(RESERVATIONS, metadata.get("name", ""))


def ensure_reservation_order(client: Client, reservation: Obj, now: float) -> None:
    """Give a Reservation the job did not create (one its ``reservationRef`` names) the
    ``reservation-order`` label the descheduler's own Reservations carry (upstream
    ``setReservationOrder``)."""
    if LABEL_RESERVATION_ORDER in (metadata_of(reservation).get("labels") or {}):
        return
    patch = {"metadata": {"labels": {LABEL_RESERVATION_ORDER: _order(now)}}}
    client.patch(RESERVATIONS, metadata_of(reservation).get("name", ""), patch)


def _order(now: float) -> str:
    return str(int(now * 1000))


def reservation_ref(reservation: Obj) -> dict[str, str]:
    """The job's ``reservationRef`` to ``reservation``: upstream writes the version alone as
    apiVersion."""
    md = metadata_of(reservation)
    ref = {"kind": RESERVATIONS.kind, "apiVersion": RESERVATIONS.version,
           "name": md.get("name", ""), "uid": md.get("uid", "")}
    if md.get("namespace"):
        ref["namespace"] = md["namespace"]
    return ref


def get_reservation(client: Client, ref: Obj) -> dict[str, Any]:
    return client.get(RESERVATIONS, ref.get("name", ""))


def delete_reservation(client: Client, ref: Obj) -> None:
    client.delete(RESERVATIONS, ref.get("name", ""))


# What the controller asks of a Reservation ------------------------------------------------


def _status(reservation: Obj) -> Mapping[str, Any]:
    return reservation.get("status") or {}


def phase(reservation: Obj) -> str:
    return _status(reservation).get("phase") or ""


def condition(reservation: Obj, condition_type: str) -> Mapping[str, Any] | None:
    for cond in _status(reservation).get("conditions") or ():
        if cond.get("type") == condition_type:
            return cond
    return None


def unschedulable_condition(reservation: Obj) -> Mapping[str, Any] | None:
    """The Scheduled condition when the scheduler found no node for it."""
    cond = condition(reservation, ReservationConditionType.SCHEDULED)
    if cond is not None and cond.get("reason") == REASON_RESERVATION_UNSCHEDULABLE:
        return cond
    return None


def is_pending(reservation: Obj) -> bool:
    return phase(reservation) in ("", ReservationPhase.PENDING)


def is_succeeded(reservation: Obj) -> bool:
    return phase(reservation) == ReservationPhase.SUCCEEDED


def is_expired(reservation: Obj) -> bool:
    if phase(reservation) != ReservationPhase.FAILED:
        return False
    cond = condition(reservation, ReservationConditionType.READY)
    return cond is not None and cond.get("reason") == REASON_RESERVATION_EXPIRED


def is_scheduled(reservation: Obj) -> bool:
    cond = condition(reservation, ReservationConditionType.SCHEDULED)
    return (cond is not None and cond.get("status") == "True"
            and cond.get("reason") == REASON_RESERVATION_SCHEDULED)


def scheduled_node(reservation: Obj) -> str:
    return _status(reservation).get("nodeName") or ""


def bound_pod(reservation: Obj) -> Mapping[str, Any] | None:
    """The first pod that consumed it."""
    owners = _status(reservation).get("currentOwners") or []
    return owners[0] if owners else None


def migrates_pending_pod(reservation: Obj) -> bool:
    """Made for a pod that was never scheduled: its owner is that pod itself."""
    owners = spec_of(reservation).get("owners") or []
    return bool(owners) and bool(owners[0].get("object"))


__all__ = [
    "DEFAULT_CREATOR", "LABEL_CREATED_BY", "bound_pod", "condition", "create_reservation",
    "delete_reservation", "ensure_reservation_order", "get_reservation", "is_expired",
    "is_pending", "is_scheduled", "is_succeeded", "migrates_pending_pod", "phase",
    "pod_condition", "reservation_options", "reservation_ref", "reserve_resource_owners",
    "scheduled_node", "unschedulable_condition",
]
