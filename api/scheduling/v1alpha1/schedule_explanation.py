"""ScheduleExplanation: the scheduler's answer to "why is this pod or gang (not) schedulable".

Corresponds to upstream `apis/scheduling/v1alpha1/schedule_explanation.go`. Namespaced, short
name ``sched-exp``; the CR carries the label ``scheduling.koordinator.sh/questioned-object-key``.
The ordering rules for ``nodeFailedDetails`` live with the writer (upstream
`apis/extension/schedule_explanation.go`).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from api.base import ApiModel, crd_default
from api.core import SchemalessObject
from api.meta import Duration, KubeObject, Time, parse_duration

GROUP = "scheduling.koordinator.sh"
VERSION = "v1alpha1"

DEFAULT_SCHEDULE_EXPLANATION_TTL = "24h"


class ScheduleExplanationSpec(ApiModel):
    # ``namespace/name`` for a pod, ``namespace/jobName`` for a job, the gang group ids for a gang.
    question_object_key: str | None = None
    # A corev1.PodTemplateSpec, schemaless in the CRD; not used by upstream yet.
    question_object_template: SchemalessObject | None = None
    ttl: Duration | None = Field(
        None, json_schema_extra=crd_default(DEFAULT_SCHEDULE_EXPLANATION_TTL))

    @property
    def ttl_effective(self) -> str:
        """``ttl`` as the API server defaults it: ``24h`` when unset."""
        return self.ttl if self.ttl is not None else DEFAULT_SCHEDULE_EXPLANATION_TTL

    @property
    def ttl_seconds(self) -> float:
        """The effective TTL in seconds; 0 means the explanation never expires."""
        return parse_duration(self.ttl_effective)


class SchedulingResult(ApiModel):
    """A member that can be placed, and where (NamespacedName flattened + nodeName)."""

    namespace: str | None = None
    name: str | None = None
    uid: str | None = None
    node_name: str | None = None


class NodeFailedDetail(ApiModel):
    """Nodes that failed one plugin for one reason (NodeFailedStatus flattened)."""

    failed_plugin: str | None = None
    reason: str | None = None
    preempt_might_help: bool | None = None
    failed_nodes: list[str] | None = None


class NodeLevelExplanations(ApiModel):
    schedulable: bool | None = None
    failed_message: str | None = None
    feasible_scheduling_result: list[SchedulingResult] | None = None
    node_failed_details: list[NodeFailedDetail] | None = None


class PossibleVictim(ApiModel):
    """A pod that might be preempted (NamespacedName flattened + isNominatedPod)."""

    namespace: str | None = None
    name: str | None = None
    uid: str | None = None
    is_nominated_pod: bool | None = None


class NodePossibleVictim(ApiModel):
    node_name: str | None = None
    possible_victims: list[PossibleVictim] | None = None


class TopologyDomainLevelExplanation(ApiModel):
    topology_domain: str | None = None
    schedulable: bool | None = None
    schedulable_after_preemption: bool | None = None
    failed_message: str | None = None
    # Struct values upstream: always written, at least as {}.
    schedule_explanation: NodeLevelExplanations = Field(default_factory=NodeLevelExplanations)
    node_possible_victims: list[NodePossibleVictim] | None = None
    preempt_explanation: NodeLevelExplanations = Field(default_factory=NodeLevelExplanations)


class ScheduleExplanationStatus(ApiModel):
    schedulable: bool | None = None
    schedulable_after_preemption: bool | None = None
    failed_message: str | None = None
    # Refreshed whenever the status changes and at least once a minute.
    last_update_time: Time | None = None
    detailed_explanation: list[TopologyDomainLevelExplanation] | None = None


class ScheduleExplanation(KubeObject):
    """ScheduleExplanation explains why a pod or gang is (not) schedulable."""

    group: ClassVar[str] = GROUP
    version: ClassVar[str] = VERSION
    plural: ClassVar[str] = "scheduleexplanations"
    singular: ClassVar[str] = "scheduleexplanation"
    namespaced: ClassVar[bool] = True
    short_names: ClassVar[tuple[str, ...]] = ("sched-exp",)
    status_subresource: ClassVar[bool] = True

    spec: ScheduleExplanationSpec = Field(default_factory=ScheduleExplanationSpec)
    status: ScheduleExplanationStatus | None = None


__all__ = [
    "DEFAULT_SCHEDULE_EXPLANATION_TTL", "NodeFailedDetail", "NodeLevelExplanations",
    "NodePossibleVictim", "PossibleVictim", "ScheduleExplanation", "ScheduleExplanationSpec",
    "ScheduleExplanationStatus", "SchedulingResult", "TopologyDomainLevelExplanation",
]
