"""PodMigrationJob: a request to move one pod elsewhere, safely (reserve first, then evict).

Corresponds to upstream `apis/scheduling/v1alpha1/pod_migration_job_types.go`. Cluster-scoped;
processed by koord-descheduler's MigrationController, whose arguments supply the defaults for
``ttl``, ``mode`` and ``deleteOptions``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, ClassVar

from pydantic import Field

from api.base import CRD_REQUIRED, ApiModel, Schemaless
from api.core import DeleteOptions, ObjectReference
from api.meta import Duration, KubeObject, Time
from api.scheduling.v1alpha1.reservation import ReservationTemplateSpec

GROUP = "scheduling.koordinator.sh"
VERSION = "v1alpha1"


class PodMigrationJobMode(StrEnum):
    RESERVATION_FIRST = "ReservationFirst"
    EVICTION_DIRECTLY = "EvictDirectly"


class PodMigrationJobPhase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    ABORTED = "Aborted"


class PodMigrationJobConditionType(StrEnum):
    RESERVATION_CREATED = "ReservationCreated"
    RESERVATION_SCHEDULED = "ReservationScheduled"
    PREEMPTION = "Preemption"
    EVICTION = "Eviction"
    POD_SCHEDULED = "PodScheduled"
    RESERVATION_POD_BOUND_RESERVATION = "PodBoundReservation"
    BOUND_POD_READY = "BoundPodReady"
    RESERVATION_BOUND = "ReservationBound"


class PodMigrationJobConditionStatus(StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class PodMigrationJobReason(StrEnum):
    """Reasons written on the job's status and conditions."""

    TIMEOUT = "Timeout"
    FAILED_CREATE_RESERVATION = "FailedCreateReservation"
    RESERVATION_EXPIRED = "ReservationExpired"
    INVALID_RESERVATION = "InvalidReservation"
    UNSCHEDULABLE = "Unschedulable"
    FORBIDDEN_MIGRATE_POD = "ForbiddenMigratePod"
    MISSING_POD = "MissingPod"
    MISSING_RESERVATION = "MissingReservation"
    PREEMPTING = "Preempting"
    PREEMPT_COMPLETE = "PreemptComplete"
    EVICTING = "Evicting"
    FAILED_EVICT = "FailedEvict"
    EVICT_COMPLETE = "EvictComplete"
    WAIT_FOR_POD_BIND_RESERVATION = "WaitForPodBindReservation"
    WAIT_FOR_BOUND_POD_READY = "WaitForBoundPodReady"


class PodMigrationJobPreemptionOptions(ApiModel):
    """Reserved for future preemption settings; an empty object."""


class PodMigrateReservationOptions(ApiModel):
    # An existing Reservation to use; when unset the controller creates one from ``template``
    # and fills this in.
    reservation_ref: ObjectReference | None = None
    # Schemaless in the CRD; typed here.
    template: Annotated[ReservationTemplateSpec, Schemaless()] | None = None
    preemption_options: PodMigrationJobPreemptionOptions | None = None


class PodMigrationJobSpec(ApiModel):
    paused: bool | None = None
    ttl: Duration | None = None
    mode: str | None = None
    # The pod to migrate. Go writes a nil reference as null.
    pod_ref: ObjectReference | None = Field(None, json_schema_extra=CRD_REQUIRED)
    reservation_options: PodMigrateReservationOptions | None = None
    delete_options: DeleteOptions | None = None


class PodMigrationJobCondition(ApiModel):
    type: str = Field("", json_schema_extra=CRD_REQUIRED)
    status: str = Field("", json_schema_extra=CRD_REQUIRED)
    last_probe_time: Time | None = Field(None, json_schema_extra={"nullable": True})
    last_transition_time: Time | None = Field(None, json_schema_extra={"nullable": True})
    reason: str | None = None
    message: str | None = None


class PodMigrationJobPreemptedReservation(ApiModel):
    """A Reservation created for a pod that the migration preempted."""

    namespace: str | None = None
    name: str | None = None
    node_name: str | None = None
    phase: str | None = None
    preempted_pod_ref: ObjectReference | None = None
    pods_ref: list[ObjectReference] | None = None


class PodMigrationJobStatus(ApiModel):
    phase: str | None = None
    status: str | None = None
    reason: str | None = None
    message: str | None = None
    conditions: list[PodMigrationJobCondition] | None = None
    node_name: str | None = None
    # The replacement pod.
    pod_ref: ObjectReference | None = None
    preempted_pods_ref: list[ObjectReference] | None = None
    # Upstream's JSON name is singular although the Go field is PreemptedPodsReservations.
    preempted_pods_reservations: list[PodMigrationJobPreemptedReservation] | None = Field(
        None, alias="preemptedPodsReservation")

    def condition(self, condition_type: str) -> PodMigrationJobCondition | None:
        """The condition of the given type, if present."""
        return next((c for c in self.conditions or [] if c.type == condition_type), None)


class PodMigrationJob(KubeObject):
    """PodMigrationJob is the Schema for the PodMigrationJob API."""

    group: ClassVar[str] = GROUP
    version: ClassVar[str] = VERSION
    plural: ClassVar[str] = "podmigrationjobs"
    singular: ClassVar[str] = "podmigrationjob"
    namespaced: ClassVar[bool] = False
    short_names: ClassVar[tuple[str, ...]] = ("pmj",)
    status_subresource: ClassVar[bool] = True
    printer_columns: ClassVar[tuple[dict[str, str], ...]] = (
        {"description": "The phase of PodMigrationJob", "jsonPath": ".status.phase",
         "name": "Phase", "type": "string"},
        {"description": "The status of PodMigrationJob", "jsonPath": ".status.status",
         "name": "Status", "type": "string"},
        {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"},
        {"jsonPath": ".status.nodeName", "name": "Node", "type": "string"},
        {"jsonPath": ".spec.reservationOptions.reservationRef.name", "name": "Reservation",
         "type": "string"},
        {"jsonPath": ".spec.podRef.namespace", "name": "PodNamespace", "type": "string"},
        {"jsonPath": ".spec.podRef.name", "name": "Pod", "type": "string"},
        {"jsonPath": ".status.podRef.name", "name": "NewPod", "type": "string"},
        {"jsonPath": ".spec.ttl", "name": "TTL", "type": "string"},
    )

    spec: PodMigrationJobSpec = Field(default_factory=PodMigrationJobSpec)
    status: PodMigrationJobStatus | None = None


__all__ = [
    "PodMigrateReservationOptions", "PodMigrationJob", "PodMigrationJobCondition",
    "PodMigrationJobConditionStatus", "PodMigrationJobConditionType", "PodMigrationJobMode",
    "PodMigrationJobPhase", "PodMigrationJobPreemptedReservation",
    "PodMigrationJobPreemptionOptions", "PodMigrationJobReason", "PodMigrationJobSpec",
    "PodMigrationJobStatus",
]
