"""Reservation keys on pods and Reservations, and the exact-match rule.

Corresponds to upstream `apis/extension/reservation.go` and `operating_pod.go`: affinity, allocated,
restricted options and exact-match annotations of a pod, the reservation-owners/current-owner
annotations of a reservation-mode pod, and the reservation-order / pre-allocation-required labels of
a Reservation.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated

from pydantic import Field, TypeAdapter

from api.core import NodeSelectorTerm, ObjectReference, Toleration, quantity_value
from api.errors import MalformedValueError
from api.extension.codec import decode_model, decode_value, parse_int_value
from api.extension.constants import SCHEDULING_DOMAIN_PREFIX
from api.extension.objects import KubeDict, labels_of
from api.extension.payload import (
    ALWAYS,
    GoLabelSelector,
    GoObjectReference,
    GoPayload,
    OptBool,
    StrMap,
    dump_json,
)

LABEL_RESERVATION_IGNORED = SCHEDULING_DOMAIN_PREFIX + "/reservation-ignored"
LABEL_RESERVATION_ORDER = SCHEDULING_DOMAIN_PREFIX + "/reservation-order"
LABEL_PRE_ALLOCATION_REQUIRED = SCHEDULING_DOMAIN_PREFIX + "/pre-allocation-required"
ANNOTATION_RESERVATION_ALLOCATED = SCHEDULING_DOMAIN_PREFIX + "/reservation-allocated"
ANNOTATION_RESERVATION_AFFINITY = SCHEDULING_DOMAIN_PREFIX + "/reservation-affinity"
ANNOTATION_RESERVATION_RESTRICTED_OPTIONS = (
    SCHEDULING_DOMAIN_PREFIX + "/reservation-restricted-options")
ANNOTATION_EXACT_MATCH_RESERVATION_SPEC = SCHEDULING_DOMAIN_PREFIX + "/exact-match-reservation"

LABEL_POD_OPERATING_MODE = SCHEDULING_DOMAIN_PREFIX + "/operating-mode"
ANNOTATION_RESERVATION_OWNERS = SCHEDULING_DOMAIN_PREFIX + "/reservation-owners"
ANNOTATION_RESERVATION_CURRENT_OWNER = SCHEDULING_DOMAIN_PREFIX + "/reservation-current-owner"


class PodOperatingMode(StrEnum):
    RUNNABLE = "Runnable"  # the default: the pod runs
    RESERVATION = "Reservation"  # the pod is a scheduling and reservation unit, never run


# --- affinity / allocated / restricted options / exact match --------------------------------


class ReservationAffinitySelector(GoPayload):
    """Terms ORed; expressions in a term ANDed; evaluated against the Reservation's labels."""

    reservation_selector_terms: list[NodeSelectorTerm] | None = None


class ReservationAffinity(GoPayload):
    """Which reservations a pod may use. With ``name`` set, the other fields are ignored."""

    name: str = ""
    required_during_scheduling_ignored_during_execution: ReservationAffinitySelector | None = (
        Field(None, alias="requiredDuringSchedulingIgnoredDuringExecution"))
    reservation_selector: StrMap | None = None
    tolerations: list[Toleration] | None = None


class ReservationAllocated(GoPayload):
    """The reservation a pod consumed, written by the scheduler."""

    name: str = ""
    uid: str = ""


class ReservationRestrictedOptions(GoPayload):
    """Resources the pod may take from a reservation only up to the reserved amount."""

    resources: list[str] | None = None


class ExactMatchReservationSpec(GoPayload):
    """Resources whose request must equal the reservation's allocatable."""

    resource_names: list[str] | None = None


def parse_reservation_affinity(
        annotations: Mapping[str, str] | None) -> ReservationAffinity | None:
    """None when absent; an empty string is an empty affinity."""
    raw = (annotations or {}).get(ANNOTATION_RESERVATION_AFFINITY)
    if raw is None:
        return None
    if raw == "":
        return ReservationAffinity()
    return decode_model(ANNOTATION_RESERVATION_AFFINITY, raw, ReservationAffinity)


def format_reservation_affinity(affinity: ReservationAffinity) -> str:
    return affinity.to_go_json()


def parse_reservation_allocated(
        annotations: Mapping[str, str] | None) -> ReservationAllocated | None:
    raw = (annotations or {}).get(ANNOTATION_RESERVATION_ALLOCATED)
    if raw is None:
        return None
    return decode_model(ANNOTATION_RESERVATION_ALLOCATED, raw, ReservationAllocated)


def format_reservation_allocated(name: str, uid: str) -> str:
    """``{"name":...,"uid":...}`` as the scheduler writes it."""
    return ReservationAllocated(name=name, uid=uid).to_go_json()


def parse_reservation_restricted_options(
        annotations: Mapping[str, str] | None) -> ReservationRestrictedOptions:
    """Missing or empty → empty options."""
    raw = (annotations or {}).get(ANNOTATION_RESERVATION_RESTRICTED_OPTIONS)
    if not raw:
        return ReservationRestrictedOptions()
    return decode_model(ANNOTATION_RESERVATION_RESTRICTED_OPTIONS, raw,
                        ReservationRestrictedOptions)


def format_reservation_restricted_options(options: ReservationRestrictedOptions) -> str:
    return options.to_go_json()


def parse_exact_match_reservation_spec(
        annotations: Mapping[str, str] | None) -> ExactMatchReservationSpec | None:
    """None when missing or empty."""
    raw = (annotations or {}).get(ANNOTATION_EXACT_MATCH_RESERVATION_SPEC)
    if not raw:
        return None
    return decode_model(ANNOTATION_EXACT_MATCH_RESERVATION_SPEC, raw, ExactMatchReservationSpec)


def format_exact_match_reservation_spec(spec: ExactMatchReservationSpec) -> str:
    return spec.to_go_json()


def exact_match_reservation(pod_requests: Mapping[str, str | int],
                            reservation_allocatable: Mapping[str, str | int],
                            spec: ExactMatchReservationSpec | None) -> bool:
    """Upstream ``ExactMatchReservation``.

    No spec or no names: match. For each name in order: in both → the quantities must be equal;
    in only one → no match; in neither → match at once (later names are not checked).
    """
    if spec is None or not spec.resource_names:
        return True
    for name in spec.resource_names:
        in_reservation, in_pod = name in reservation_allocatable, name in pod_requests
        if not in_reservation or not in_pod:
            return not in_reservation and not in_pod
        if quantity_value(reservation_allocatable[name]) != quantity_value(pod_requests[name]):
            return False
    return True


def is_reservation_ignored(pod: KubeDict | None) -> bool:
    """The pod schedules ignoring reservations (label exactly ``"true"``)."""
    return labels_of(pod).get(LABEL_RESERVATION_IGNORED) == "true"


# --- labels of a Reservation ----------------------------------------------------------------


def parse_reservation_order(labels: Mapping[str, str] | None) -> int:
    """The Reservation's order (int64; smaller non-zero preferred); 0 when absent."""
    raw = (labels or {}).get(LABEL_RESERVATION_ORDER)
    if raw is None:
        return 0
    return parse_int_value(LABEL_RESERVATION_ORDER, raw)


def get_reservation_order(labels: Mapping[str, str] | None) -> int:
    """The order, with an invalid value read as 0 (ignored: the score decides)."""
    try:
        return parse_reservation_order(labels)
    except MalformedValueError:
        return 0


def is_pre_allocation_required(labels: Mapping[str, str] | None) -> bool:
    return (labels or {}).get(LABEL_PRE_ALLOCATION_REQUIRED) == "true"


# --- reservation-mode pods (operating_pod.go) -----------------------------------------------


class ReservationControllerReference(GoPayload):
    """An owner reference plus the namespace of the controlled pods."""

    api_version: Annotated[str, ALWAYS] = ""
    kind: Annotated[str, ALWAYS] = ""
    name: Annotated[str, ALWAYS] = ""
    uid: Annotated[str, ALWAYS] = ""
    controller: OptBool = None
    block_owner_deletion: OptBool = None
    namespace: str = ""


class ReservationOwner(GoPayload):
    """Who may consume a reservation; the set fields are ANDed."""

    object: GoObjectReference | None = None
    controller: ReservationControllerReference | None = None
    label_selector: GoLabelSelector | None = None


_OWNERS = TypeAdapter(list[ReservationOwner])


def is_reservation_operating_mode(pod: KubeDict | None) -> bool:
    """The pod stands for a reservation (label ``Reservation``)."""
    return labels_of(pod).get(LABEL_POD_OPERATING_MODE) == PodOperatingMode.RESERVATION


def parse_reservation_owners(annotations: Mapping[str, str] | None) -> list[ReservationOwner]:
    """Missing or empty → no owners."""
    raw = (annotations or {}).get(ANNOTATION_RESERVATION_OWNERS)
    if not raw:
        return []
    return decode_value(ANNOTATION_RESERVATION_OWNERS, raw, _OWNERS) or []


def format_reservation_owners(owners: list[ReservationOwner]) -> str:
    return dump_json(_OWNERS, owners)


_OBJECT_REFERENCE = TypeAdapter(GoObjectReference)


def parse_reservation_current_owner(
        annotations: Mapping[str, str] | None) -> ObjectReference | None:
    """None when missing or empty."""
    raw = (annotations or {}).get(ANNOTATION_RESERVATION_CURRENT_OWNER)
    if not raw:
        return None
    return decode_value(ANNOTATION_RESERVATION_CURRENT_OWNER, raw, _OBJECT_REFERENCE) or (
        ObjectReference())


def format_reservation_current_owner(owner: ObjectReference) -> str:
    """The annotation value, fields in Go's order (kind, namespace, name, uid, ...)."""
    return dump_json(_OBJECT_REFERENCE, owner)


__all__ = [
    "ANNOTATION_EXACT_MATCH_RESERVATION_SPEC", "ANNOTATION_RESERVATION_AFFINITY",
    "ANNOTATION_RESERVATION_ALLOCATED", "ANNOTATION_RESERVATION_CURRENT_OWNER",
    "ANNOTATION_RESERVATION_OWNERS", "ANNOTATION_RESERVATION_RESTRICTED_OPTIONS",
    "LABEL_POD_OPERATING_MODE", "LABEL_PRE_ALLOCATION_REQUIRED", "LABEL_RESERVATION_IGNORED",
    "LABEL_RESERVATION_ORDER", "ExactMatchReservationSpec", "PodOperatingMode",
    "ReservationAffinity", "ReservationAffinitySelector", "ReservationAllocated",
    "ReservationControllerReference", "ReservationOwner", "ReservationRestrictedOptions",
    "exact_match_reservation", "format_exact_match_reservation_spec",
    "format_reservation_affinity", "format_reservation_allocated",
    "format_reservation_current_owner", "format_reservation_owners",
    "format_reservation_restricted_options", "get_reservation_order", "is_pre_allocation_required",
    "is_reservation_ignored", "is_reservation_operating_mode",
    "parse_exact_match_reservation_spec", "parse_reservation_affinity",
    "parse_reservation_allocated", "parse_reservation_current_owner", "parse_reservation_order",
    "parse_reservation_owners", "parse_reservation_restricted_options",
]
