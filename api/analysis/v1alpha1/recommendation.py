"""Recommendation: recommended container resources for a workload or a set of pods.

Corresponds to upstream `apis/analysis/v1alpha1/recommendation_types.go`. Namespaced, short
name ``recom``, status subresource.
"""

from __future__ import annotations

from enum import StrEnum
from typing import ClassVar

from pydantic import Field

from api.base import CRD_REQUIRED, ApiModel
from api.core import ResourceList
from api.meta import Condition, KubeObject, LabelSelector, Time

GROUP = "analysis.koordinator.sh"
VERSION = "v1alpha1"


class RecommendationTargetType(StrEnum):
    WORKLOAD = "workload"
    POD_SELECTOR = "podSelector"


class RecommendationConditionType(StrEnum):
    LOW_CONFIDENCE = "LowConfidence"
    NO_OBJECTS_MATCHED = "NoObjectsMatched"
    FETCHING_HISTORY = "FetchingHistory"
    CONFIG_DEPRECATED = "ConfigDeprecated"
    CONFIG_UNSUPPORTED = "ConfigUnsupported"


class CrossVersionObjectReference(ApiModel):
    """Enough to identify a workload: kind, name and, optionally, apiVersion."""

    kind: str = Field("", json_schema_extra=CRD_REQUIRED)
    name: str = Field("", json_schema_extra=CRD_REQUIRED)
    api_version: str | None = None


class RecommendationTarget(ApiModel):
    """What to analyse: a workload (``type: workload``) or pods (``type: podSelector``)."""

    type: str = Field("", json_schema_extra=CRD_REQUIRED)
    workload: CrossVersionObjectReference | None = None
    pod_selector: LabelSelector | None = None


class RecommendationSpec(ApiModel):
    """RecommendationSpec is the specification of the client object."""

    target: RecommendationTarget = Field(default_factory=RecommendationTarget,
                                         json_schema_extra=CRD_REQUIRED)


class RecommendedContainerStatus(ApiModel):
    container_name: str | None = None
    resources: ResourceList | None = None


class RecommendedPodStatus(ApiModel):
    container_statuses: list[RecommendedContainerStatus] | None = None


class RecommendationStatus(ApiModel):
    """RecommendationStatus defines the observed state of Recommendation"""

    pod_status: RecommendedPodStatus | None = None
    update_time: Time | None = None
    conditions: list[Condition] | None = None


class Recommendation(KubeObject):
    """Recommendation is the Schema for the recommendations API"""

    group: ClassVar[str] = GROUP
    version: ClassVar[str] = VERSION
    plural: ClassVar[str] = "recommendations"
    singular: ClassVar[str] = "recommendation"
    namespaced: ClassVar[bool] = True
    short_names: ClassVar[tuple[str, ...]] = ("recom",)
    status_subresource: ClassVar[bool] = True
    printer_columns: ClassVar[tuple[dict[str, str], ...]] = (
        {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"},
        {"jsonPath": ".spec.target.type", "name": "Type", "type": "string"},
        {"jsonPath": ".spec.target.workload.kind", "name": "Kind", "type": "string"},
        {"jsonPath": ".spec.target.workload.name", "name": "Name", "type": "string"},
        {"jsonPath": ".status.updateTime", "name": "LastUpdateTime", "type": "date"},
    )

    spec: RecommendationSpec = Field(default_factory=RecommendationSpec)
    status: RecommendationStatus | None = None


__all__ = [
    "CrossVersionObjectReference", "Recommendation", "RecommendationConditionType",
    "RecommendationSpec", "RecommendationStatus", "RecommendationTarget",
    "RecommendationTargetType", "RecommendedContainerStatus", "RecommendedPodStatus",
]
