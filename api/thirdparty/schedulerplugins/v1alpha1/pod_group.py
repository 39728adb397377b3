"""PodGroup: a gang of pods scheduled all-or-nothing.

Corresponds to the PodGroup types of upstream
`apis/thirdparty/scheduler-plugins/pkg/apis/scheduling/v1alpha1/types.go`. Namespaced, no status
subresource. Pods join with the label ``pod-group.scheduling.sigs.k8s.io: <name>``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import ClassVar

from pydantic import Field

from api.base import ApiModel, Int32
from api.core import ResourceList
from api.meta import KubeObject, Time
from api.thirdparty.schedulerplugins.v1alpha1.elastic_quota import API_APPROVED

GROUP = "scheduling.sigs.k8s.io"
VERSION = "v1alpha1"

# The pod label naming the PodGroup a pod belongs to.
POD_GROUP_LABEL = "pod-group.scheduling.sigs.k8s.io"


class PodGroupPhase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    PRE_SCHEDULING = "PreScheduling"
    SCHEDULING = "Scheduling"
    SCHEDULED = "Scheduled"
    UNKNOWN = "Unknown"
    FINISHED = "Finished"
    FAILED = "Failed"


class PodGroupSpec(ApiModel):
    """Specification of the desired behavior of the pod group."""

    min_member: Int32 | None = None
    min_resources: ResourceList | None = None
    # Seconds to wait for the gang; values <= 0 mean the scheduler's default.
    schedule_timeout_seconds: Int32 | None = None


class PodGroupStatus(ApiModel):
    """Status represents the current information about a pod group.
    This data may not be up to date."""

    phase: str | None = None
    occupied_by: str | None = None
    scheduled: Int32 | None = None
    running: Int32 | None = None
    succeeded: Int32 | None = None
    failed: Int32 | None = None
    # A metav1.Time: Go writes the zero time as null, which we leave out.
    schedule_start_time: Time | None = None


class PodGroup(KubeObject):
    """PodGroup is a collection of Pod; used for batch workload."""

    group: ClassVar[str] = GROUP
    version: ClassVar[str] = VERSION
    plural: ClassVar[str] = "podgroups"
    singular: ClassVar[str] = "podgroup"
    namespaced: ClassVar[bool] = True
    status_subresource: ClassVar[bool] = False
    crd_annotations: ClassVar[dict[str, str]] = API_APPROVED

    spec: PodGroupSpec = Field(default_factory=PodGroupSpec)
    status: PodGroupStatus | None = None


__all__ = ["POD_GROUP_LABEL", "PodGroup", "PodGroupPhase", "PodGroupSpec", "PodGroupStatus"]
