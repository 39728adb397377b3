"""``quota.koordinator.sh/v1alpha1`` (upstream `apis/quota/v1alpha1`)."""

from api.quota.v1alpha1.elastic_quota_profile import ElasticQuotaProfile

GROUP = "quota.koordinator.sh"
VERSION = "v1alpha1"

__all__ = ["GROUP", "VERSION", "ElasticQuotaProfile"]
