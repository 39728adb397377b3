"""ElasticQuota labels and annotations (upstream `apis/extension/elastic_quota.go`)."""

from api.extension.elastic_quota import (
    ANNOTATION_MAX_STRICT_CHECK_RESOURCE_KEYS,
    ANNOTATION_QUOTA_NAMESPACES,
    ANNOTATION_RESOURCE_KEYS,
    ANNOTATION_RUNTIME,
    ANNOTATION_SHARED_WEIGHT,
    LABEL_ALLOW_LENT_RESOURCE,
    LABEL_PREEMPTIBLE,
    LABEL_QUOTA_IS_PARENT,
    LABEL_QUOTA_NAME,
    LABEL_QUOTA_PARENT,
    RESOURCE_LIST_ANNOTATIONS,
    ROOT_QUOTA_NAME,
    SYSTEM_QUOTA_NAME,
    format_resource_list,
    format_string_list,
    get_parent_quota_name,
    get_quota_name,
    get_quota_namespaces,
    get_shared_weight,
    is_allow_lent_resource,
    is_forbidden_modify,
    is_parent_quota,
    is_pod_non_preemptible,
    parse_max_strict_check_resource_keys,
    parse_quota_namespaces,
    parse_quota_resource_list,
    parse_resource_keys,
    parse_shared_weight,
)

MAX = {"cpu": "10", "memory": "20Gi"}


def test_keys():
    assert ANNOTATION_RUNTIME == "quota.scheduling.koordinator.sh/runtime"
    assert len(RESOURCE_LIST_ANNOTATIONS) == 11


def test_labels():
    assert get_parent_quota_name("team-a", {LABEL_QUOTA_PARENT: "dept"}) == "dept"
    assert get_parent_quota_name("team-a", {}) == ROOT_QUOTA_NAME
    assert get_parent_quota_name(ROOT_QUOTA_NAME, {}) == ""
    assert is_parent_quota({LABEL_QUOTA_IS_PARENT: "true"})
    assert is_allow_lent_resource({})
    assert is_allow_lent_resource({LABEL_ALLOW_LENT_RESOURCE: "False"})
    assert not is_allow_lent_resource({LABEL_ALLOW_LENT_RESOURCE: "false"})
    assert is_forbidden_modify(SYSTEM_QUOTA_NAME) and is_forbidden_modify(ROOT_QUOTA_NAME)
    assert not is_forbidden_modify("koordinator-default-quota")
    pod = {"metadata": {"labels": {LABEL_QUOTA_NAME: "q1", LABEL_PREEMPTIBLE: "false"}}}
    assert get_quota_name(pod) == "q1"
    assert is_pod_non_preemptible(pod)
    assert not is_pod_non_preemptible({"metadata": {"labels": {LABEL_PREEMPTIBLE: "no"}}})


def test_resource_list_annotations_round_trip():
    raw = '{"cpu":"4","memory":"8Gi"}'
    assert parse_quota_resource_list({ANNOTATION_RUNTIME: raw}, ANNOTATION_RUNTIME) == {
        "cpu": "4", "memory": "8Gi"}
    assert format_resource_list({"memory": "8192Mi", "cpu": "4000m"}) == raw
    assert parse_quota_resource_list({}, ANNOTATION_RUNTIME) == {}
    assert parse_quota_resource_list({ANNOTATION_RUNTIME: ""}, ANNOTATION_RUNTIME) == {}


def test_shared_weight_falls_back_to_max():
    assert parse_shared_weight({}) is None
    assert get_shared_weight({ANNOTATION_SHARED_WEIGHT: '{"cpu":"2"}'}, MAX) == {"cpu": "2"}
    assert get_shared_weight({}, MAX) == MAX
    assert get_shared_weight({ANNOTATION_SHARED_WEIGHT: "oops"}, MAX) == MAX
    assert get_shared_weight({ANNOTATION_SHARED_WEIGHT: '{"cpu":"0","memory":"0"}'}, MAX) == MAX
    assert get_shared_weight({ANNOTATION_SHARED_WEIGHT: "{}"}, MAX) == MAX


def test_string_lists():
    raw = '["ns-a","ns-b"]'
    assert parse_quota_namespaces({ANNOTATION_QUOTA_NAMESPACES: raw}) == ["ns-a", "ns-b"]
    assert format_string_list(["ns-a", "ns-b"]) == raw
    assert get_quota_namespaces({ANNOTATION_QUOTA_NAMESPACES: "ns-a"}) == []  # invalid: none
    assert parse_resource_keys({}) == ["cpu", "memory"]
    assert parse_resource_keys({ANNOTATION_RESOURCE_KEYS: '["cpu","nvidia.com/gpu"]'}) == [
        "cpu", "nvidia.com/gpu"]
    assert parse_max_strict_check_resource_keys(
        {ANNOTATION_MAX_STRICT_CHECK_RESOURCE_KEYS: '["cpu"]'}) == ["cpu"]
    assert parse_max_strict_check_resource_keys({}) == []
