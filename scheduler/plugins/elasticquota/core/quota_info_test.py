"""A quota read from its ElasticQuota: upstream ``quota_info_test.go`` and the §8.1 labels."""

from __future__ import annotations

import json

import pytest

from api.extension.elastic_quota import (
    ANNOTATION_QUOTA_NAMESPACES,
    ANNOTATION_SHARED_WEIGHT,
    LABEL_ALLOW_LENT_RESOURCE,
    LABEL_QUOTA_IS_PARENT,
    LABEL_QUOTA_PARENT,
    ROOT_QUOTA_NAME,
)
from scheduler.plugins.elasticquota.core.quota_info import (
    QuotaInfo,
    add_non_negative,
    to_resource_list,
)


def elastic_quota(labels: dict[str, str], annotations: dict[str, str]) -> dict[str, object]:
    return {"metadata": {"name": "testQuota", "namespace": "ns", "labels": labels,
                         "annotations": annotations},
            "spec": {"min": {"cpu": "100", "memory": "1000"},
                     "max": {"cpu": "1000", "memory": "10000"}}}


def test_new_quota_info_from_quota() -> None:
    """Upstream TestNewQuotaInfoFromQuota."""
    info = QuotaInfo.from_quota(elastic_quota(
        {LABEL_QUOTA_IS_PARENT: "true", LABEL_QUOTA_PARENT: "test_parent",
         LABEL_ALLOW_LENT_RESOURCE: "true"},
        {ANNOTATION_SHARED_WEIGHT: json.dumps({"cpu": "10", "memory": "100"}),
         ANNOTATION_QUOTA_NAMESPACES: json.dumps(["a", "b"])}))
    assert (info.name, info.parent, info.is_parent, info.allow_lent) == \
        ("testQuota", "test_parent", True, True)
    assert info.min == {"cpu": 100_000, "memory": 1000} == info.auto_scale_min
    assert info.max == {"cpu": 1_000_000, "memory": 10000}
    assert info.shared_weight == {"cpu": 10_000, "memory": 100}
    assert (info.namespace, info.namespaces) == ("ns", ("a", "b"))


@pytest.mark.parametrize(("labels", "guarantee_usage", "parent", "is_parent", "lends"), [
    ({}, False, ROOT_QUOTA_NAME, False, True),
    ({LABEL_ALLOW_LENT_RESOURCE: "false"}, False, ROOT_QUOTA_NAME, False, False),
    ({LABEL_ALLOW_LENT_RESOURCE: "no"}, False, ROOT_QUOTA_NAME, False, True),
    ({LABEL_QUOTA_IS_PARENT: "True"}, False, ROOT_QUOTA_NAME, False, True),
    ({}, True, ROOT_QUOTA_NAME, False, False),  # ElasticQuotaGuaranteeUsage never lends
])
def test_labels(labels: dict[str, str], guarantee_usage: bool, parent: str, is_parent: bool,
                lends: bool) -> None:
    info = QuotaInfo.from_quota(elastic_quota(labels, {}), guarantee_usage=guarantee_usage)
    assert (info.parent, info.is_parent, info.allow_lent) == (parent, is_parent, lends)


@pytest.mark.parametrize("weight", [None, "not json", json.dumps({"cpu": "0"})])
def test_missing_invalid_or_zero_shared_weight_is_max(weight: str | None) -> None:
    annotations = {} if weight is None else {ANNOTATION_SHARED_WEIGHT: weight}
    info = QuotaInfo.from_quota(elastic_quota({}, annotations))
    assert info.shared_weight == info.max


def test_malformed_quantity_names_the_quota() -> None:
    bad = elastic_quota({}, {})
    bad["spec"] = {"max": {"cpu": "lots"}}
    with pytest.raises(ValueError, match="ns/testQuota"):
        QuotaInfo.from_quota(bad)


def test_limited_request_and_non_negative_sums() -> None:
    """Upstream TestQuotaInfo_GetLimitRequest and AddRequestNonNegativeNoLock."""
    info = QuotaInfo("q", ROOT_QUOTA_NAME, max={"cpu": 100, "memory": 10000},
                     request={"cpu": 1000, "memory": 1000, "pods": 5})
    assert info.limited_request() == {"cpu": 100, "memory": 1000, "pods": 5}
    add_non_negative(info.request, {"cpu": 100, "memory": 1000})
    assert info.limited_request()["memory"] == 2000
    used = {"cpu": 40, "memory": 40}
    add_non_negative(used, {"cpu": -100, "memory": -100})
    assert used == {"cpu": 0, "memory": 0}


def test_real_request_of_a_quota_that_does_not_lend() -> None:
    info = QuotaInfo("q", ROOT_QUOTA_NAME, allow_lent=False, min={"cpu": 50, "memory": 10},
                     child_request={"cpu": 20, "memory": 30})
    assert info.real_request() == {"cpu": 50, "memory": 30}
    info.allow_lent = True
    assert info.real_request() == {"cpu": 20, "memory": 30}


def test_to_resource_list_writes_quantities_as_upstream() -> None:
    assert to_resource_list({"cpu": 66667, "memory": 2 * 1024**3, "pods": 5,
                             "nvidia.com/gpu": 0}) == \
        {"cpu": "66667m", "memory": "2Gi", "pods": "5", "nvidia.com/gpu": "0"}
    # Go prints a BinarySI value below 1024 as DecimalSI, and one not a multiple of 1Ki plain.
    assert to_resource_list({"cpu": 2000, "memory": 1000}) == {"cpu": "2", "memory": "1k"}
    assert to_resource_list({"memory": 1500}) == {"memory": "1500"}
