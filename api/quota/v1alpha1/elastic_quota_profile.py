"""ElasticQuotaProfile: a root ElasticQuota generated from the nodes of a node pool.

Corresponds to upstream `apis/quota/v1alpha1/elastic_quota_profile_types.go`. Namespaced, short
name ``eqp``, no status subresource; koord-manager's quota profile controller keeps the named
ElasticQuota's ``min`` equal to the pool's allocatable (times ``resourceRatio``).
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import ClassVar

from pydantic import Field

from api.base import CRD_REQUIRED, ApiModel
from api.meta import KubeObject, LabelSelector

GROUP = "quota.koordinator.sh"
VERSION = "v1alpha1"


class ElasticQuotaProfileSpec(ApiModel):
    # The ElasticQuota (same namespace) to create or update.
    quota_name: str = Field("", json_schema_extra=CRD_REQUIRED)
    quota_labels: dict[str, str] | None = None
    # A decimal fraction of the pool's allocatable to count, e.g. "0.9".
    resource_ratio: str | None = None
    # Go writes a nil selector as null; the CRD requires one.
    node_selector: LabelSelector | None = Field(None, json_schema_extra=CRD_REQUIRED)

    @property
    def resource_ratio_effective(self) -> Decimal:
        """The ratio the controller applies: ``resourceRatio`` when it parses to a value in
        (0, 1], otherwise 1."""
        text = self.resource_ratio
        if text is None or text != text.strip():
            return Decimal(1)
        try:
            ratio = Decimal(text)
        except InvalidOperation:
            return Decimal(1)
        return ratio if ratio.is_finite() and 0 < ratio <= 1 else Decimal(1)


class ElasticQuotaProfileStatus(ApiModel):
    """Empty."""


class ElasticQuotaProfile(KubeObject):
    """ElasticQuotaProfile is the Schema for the ElasticQuotaProfile API."""

    group: ClassVar[str] = GROUP
    version: ClassVar[str] = VERSION
    plural: ClassVar[str] = "elasticquotaprofiles"
    singular: ClassVar[str] = "elasticquotaprofile"
    namespaced: ClassVar[bool] = True
    short_names: ClassVar[tuple[str, ...]] = ("eqp",)
    status_subresource: ClassVar[bool] = False

    spec: ElasticQuotaProfileSpec = Field(default_factory=ElasticQuotaProfileSpec)
    status: ElasticQuotaProfileStatus | None = None


__all__ = ["ElasticQuotaProfile", "ElasticQuotaProfileSpec", "ElasticQuotaProfileStatus"]
