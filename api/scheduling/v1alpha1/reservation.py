"""Reservation: resources reserved on a node for pods that arrive later.

Corresponds to upstream `apis/scheduling/v1alpha1/reservation_types.go`. Cluster-scoped; the
scheduler places a Reservation like a pod (``spec.template``) and its owners then consume it.
Defaults the API server applies from the CRD (``ttl: 24h``, ``allocateOnce: true``,
``status.phase: Pending``, ``preAllocationPolicy.mode: Default``) are schema defaults here, not
Python ones, so an object dumps back as it was read; the ``*_effective`` accessors give the value
upstream code uses when the field is unset.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field

from api.base import CRD_REQUIRED, ApiModel, crd_default
from api.core import ObjectReference, ResourceList, SchemalessObject, Taint
from api.meta import (
    Duration,
    KubeObject,
    LabelSelector,
    ObjectMeta,
    OwnerReference,
    Time,
    parse_duration,
    parse_time,
)

GROUP = "scheduling.koordinator.sh"
VERSION = "v1alpha1"

DEFAULT_RESERVATION_TTL = "24h"


class ReservationPhase(StrEnum):
    """Values of ``status.phase``."""

    PENDING = "Pending"
    AVAILABLE = "Available"
    SUCCEEDED = "Succeeded"
    WAITING = "Waiting"
    FAILED = "Failed"


class ReservationAllocatePolicy(StrEnum):
    """Values of ``spec.allocatePolicy``; unset (upstream's deprecated ``""``) means Aligned."""

    ALIGNED = "Aligned"
    RESTRICTED = "Restricted"


class ReservationConditionType(StrEnum):
    SCHEDULED = "Scheduled"
    READY = "Ready"


class ConditionStatus(StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


# Reasons written on ReservationConditions.
REASON_RESERVATION_SCHEDULED = "Scheduled"
REASON_RESERVATION_UNSCHEDULABLE = "Unschedulable"
REASON_RESERVATION_AVAILABLE = "Available"
REASON_RESERVATION_SUCCEEDED = "Succeeded"
REASON_RESERVATION_EXPIRED = "Expired"


class ReservationControllerReference(OwnerReference):
    """An owner reference to a controller (all of metav1.OwnerReference, flattened) plus the
    namespace of the pods it controls."""

    namespace: str | None = None

    def owner_reference(self) -> OwnerReference:
        """The plain OwnerReference, without the namespace."""
        return OwnerReference.model_validate(self.model_dump(exclude={"namespace"}))


class ReservationOwner(ApiModel):
    """Who may consume a Reservation. The fields set in one owner are ANDed; a Reservation's
    owners are ORed. The CRD requires at least one field."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    object: ObjectReference | None = None
    controller: ReservationControllerReference | None = None
    label_selector: LabelSelector | None = None


class PreAllocationPolicy(ApiModel):
    """How pods to pre-allocate are chosen when ``spec.preAllocation`` is set."""

    mode: Literal["Default", "Cluster"] | None = Field(
        None, json_schema_extra=crd_default("Default"))
    enable_multiple: bool | None = Field(None, json_schema_extra=crd_default(False))

    @property
    def mode_effective(self) -> str:
        """``mode`` as the API server defaults it: ``Default`` when unset."""
        return self.mode or "Default"

    @property
    def enable_multiple_effective(self) -> bool:
        return bool(self.enable_multiple)


class ReservationSpec(ApiModel):
    # A corev1.PodTemplateSpec, kept schemaless as in the CRD; ``template.spec.nodeName`` pins
    # the node.
    template: SchemalessObject | None = Field(None, json_schema_extra=CRD_REQUIRED)
    owners: list[ReservationOwner] = Field(
        default_factory=list, json_schema_extra={**CRD_REQUIRED, "minItems": 1})
    ttl: Duration | None = Field(None, json_schema_extra=crd_default(DEFAULT_RESERVATION_TTL))
    expires: Time | None = None
    pre_allocation: bool | None = None
    allocate_once: bool | None = Field(None, json_schema_extra=crd_default(True))
    allocate_policy: Literal["Aligned", "Restricted"] | None = None
    unschedulable: bool | None = None
    taints: list[Taint] | None = None
    pre_allocation_policy: PreAllocationPolicy | None = None

    @property
    def allocate_once_effective(self) -> bool:
        """``allocateOnce``, true when unset (the CRD default, and upstream's nil handling)."""
        return True if self.allocate_once is None else self.allocate_once

    @property
    def allocate_policy_effective(self) -> str:
        """``allocatePolicy``; unset (upstream's deprecated Default policy) counts as Aligned."""
        return self.allocate_policy or ReservationAllocatePolicy.ALIGNED

    @property
    def ttl_effective(self) -> str:
        """``ttl`` as the API server defaults it: ``24h`` when unset."""
        return self.ttl if self.ttl is not None else DEFAULT_RESERVATION_TTL

    @property
    def ttl_seconds(self) -> float:
        """The effective TTL in seconds; 0 means the Reservation never expires by TTL."""
        return parse_duration(self.ttl_effective)

    @property
    def expires_at(self) -> datetime | None:
        """``expires`` as an aware datetime (checked before ``ttl``), or None."""
        return parse_time(self.expires) if self.expires else None

    @property
    def pre_allocation_policy_effective(self) -> PreAllocationPolicy:
        return self.pre_allocation_policy or PreAllocationPolicy()

    @property
    def template_node_name(self) -> str:
        """``template.spec.nodeName``: the node the Reservation is pinned to, or ``""``."""
        spec: Any = (self.template or {}).get("spec")
        name = spec.get("nodeName") if isinstance(spec, dict) else None
        return name if isinstance(name, str) else ""


class ReservationCondition(ApiModel):
    type: str | None = None
    status: str | None = None
    reason: str | None = None
    message: str | None = None
    # metav1.Time values: Go writes the zero time as null, which we leave out.
    last_probe_time: Time | None = None
    last_transition_time: Time | None = None


class ReservationStatus(ApiModel):
    phase: str | None = Field(None, json_schema_extra=crd_default(ReservationPhase.PENDING.value))
    conditions: list[ReservationCondition] | None = None
    current_owners: list[ObjectReference] | None = None
    node_name: str | None = None
    allocatable: ResourceList | None = None
    allocated: ResourceList | None = None

    @property
    def phase_effective(self) -> str:
        """``phase`` as the API server defaults it: ``Pending`` when unset or empty."""
        return self.phase or ReservationPhase.PENDING


class ReservationTemplateSpec(ApiModel):
    """The Reservation to create from a template (used by PodMigrationJob)."""

    metadata: ObjectMeta | None = None
    spec: ReservationSpec = Field(default_factory=ReservationSpec)


class Reservation(KubeObject):
    """Reservation is the Schema for the reservation API.
    A Reservation object is non-namespaced.
    Any namespaced affinity/anti-affinity of reservation scheduling can be specified in the
    spec.template.
    """

    group: ClassVar[str] = GROUP
    version: ClassVar[str] = VERSION
    plural: ClassVar[str] = "reservations"
    singular: ClassVar[str] = "reservation"
    namespaced: ClassVar[bool] = False
    status_subresource: ClassVar[bool] = True
    printer_columns: ClassVar[tuple[dict[str, str], ...]] = (
        {"description": "The phase of reservation", "jsonPath": ".status.phase",
         "name": "Phase", "type": "string"},
        {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"},
        {"jsonPath": ".status.nodeName", "name": "Node", "type": "string"},
        {"jsonPath": ".spec.ttl", "name": "TTL", "type": "string"},
        {"jsonPath": ".spec.expires", "name": "Expires", "type": "string"},
    )

    spec: ReservationSpec = Field(default_factory=ReservationSpec)
    status: ReservationStatus | None = None

    @property
    def phase(self) -> str:
        """The effective phase (``Pending`` while the status is unset)."""
        return (self.status or ReservationStatus()).phase_effective

    @property
    def node_name(self) -> str:
        """The node the Reservation is scheduled on, else the one its template pins, else ``""``."""
        if self.status and self.status.node_name:
            return self.status.node_name
        return self.spec.template_node_name


__all__ = [
    "DEFAULT_RESERVATION_TTL", "REASON_RESERVATION_AVAILABLE", "REASON_RESERVATION_EXPIRED",
    "REASON_RESERVATION_SCHEDULED", "REASON_RESERVATION_SUCCEEDED",
    "REASON_RESERVATION_UNSCHEDULABLE", "ConditionStatus", "PreAllocationPolicy", "Reservation",
    "ReservationAllocatePolicy", "ReservationCondition", "ReservationConditionType",
    "ReservationControllerReference", "ReservationOwner", "ReservationPhase", "ReservationSpec",
    "ReservationStatus", "ReservationTemplateSpec",
]
