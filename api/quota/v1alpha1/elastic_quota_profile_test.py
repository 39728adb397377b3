"""ElasticQuotaProfile: round trip and how the controller reads ``resourceRatio``."""

from __future__ import annotations

from decimal import Decimal

import pytest

from api.quota.v1alpha1.elastic_quota_profile import ElasticQuotaProfile, ElasticQuotaProfileSpec

PROFILE = {
    "apiVersion": "quota.koordinator.sh/v1alpha1",
    "kind": "ElasticQuotaProfile",
    "metadata": {"name": "pool-a", "namespace": "kube-system"},
    "spec": {"quotaName": "pool-a-root", "quotaLabels": {"team": "a"}, "resourceRatio": "0.9",
             "nodeSelector": {"matchLabels": {"pool": "a"}}},
}


def test_round_trips() -> None:
    profile = ElasticQuotaProfile.model_validate(PROFILE)
    assert profile.to_dict() == PROFILE
    assert ElasticQuotaProfile.short_names == ("eqp",)
    assert ElasticQuotaProfile.namespaced and not ElasticQuotaProfile.status_subresource


def test_quota_name_is_always_written() -> None:
    assert ElasticQuotaProfileSpec().to_dict() == {"quotaName": ""}


@pytest.mark.parametrize(("ratio", "effective"), [
    (None, "1"), ("0.9", "0.9"), ("1", "1"), ("0", "1"), ("-0.5", "1"), ("1.5", "1"),
    ("abc", "1"), ("NaN", "1"), (" 0.5", "1"),
])
def test_resource_ratio_outside_zero_to_one_means_one(ratio: str | None, effective: str) -> None:
    assert ElasticQuotaProfileSpec(resource_ratio=ratio).resource_ratio_effective == Decimal(
        effective)
