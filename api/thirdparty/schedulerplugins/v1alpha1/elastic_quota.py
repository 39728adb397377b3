"""ElasticQuota: a min/max resource quota, arranged by Koordinator into a quota tree.

Corresponds to the ElasticQuota types of upstream
`apis/thirdparty/scheduler-plugins/pkg/apis/scheduling/v1alpha1/types.go`. Namespaced, no status
subresource (the status is written with a normal update). Koordinator's tree structure lives in
labels and annotations (`api.extension`).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from api.base import ApiModel
from api.core import ResourceList
from api.meta import KubeObject

GROUP = "scheduling.sigs.k8s.io"
VERSION = "v1alpha1"

# The annotation the two scheduler-plugins CRDs carry.
API_APPROVED = {"api-approved.kubernetes.io":
                "https://github.com/kubernetes-sigs/scheduler-plugins/pull/52"}

# Reserved quota names in Koordinator's quota tree.
ROOT_QUOTA_NAME = "koordinator-root-quota"
SYSTEM_QUOTA_NAME = "koordinator-system-quota"
DEFAULT_QUOTA_NAME = "koordinator-default-quota"


class ElasticQuotaSpec(ApiModel):
    """ElasticQuotaSpec defines the Min and Max for Quota."""

    min: ResourceList | None = None
    max: ResourceList | None = None


class ElasticQuotaStatus(ApiModel):
    """ElasticQuotaStatus defines the observed use."""

    used: ResourceList | None = None


class ElasticQuota(KubeObject):
    """ElasticQuota sets elastic quota restrictions per namespace"""

    group: ClassVar[str] = GROUP
    version: ClassVar[str] = VERSION
    plural: ClassVar[str] = "elasticquotas"
    singular: ClassVar[str] = "elasticquota"
    namespaced: ClassVar[bool] = True
    status_subresource: ClassVar[bool] = False
    crd_annotations: ClassVar[dict[str, str]] = API_APPROVED

    spec: ElasticQuotaSpec = Field(default_factory=ElasticQuotaSpec)
    status: ElasticQuotaStatus | None = None


__all__ = [
    "DEFAULT_QUOTA_NAME", "ROOT_QUOTA_NAME", "SYSTEM_QUOTA_NAME", "ElasticQuota",
    "ElasticQuotaSpec", "ElasticQuotaStatus",
]
