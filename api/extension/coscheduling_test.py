"""Gang annotations with their fallbacks, name resolution, groups and index (upstream
`apis/extension/coscheduling.go`)."""

import pytest

from api.errors import MalformedValueError
from api.extension.coscheduling import (
    ANNOTATION_ALIAS_GANG_MATCH_POLICY,
    ANNOTATION_GANG_GROUPS,
    ANNOTATION_GANG_MATCH_POLICY,
    ANNOTATION_GANG_MIN_NUM,
    ANNOTATION_GANG_MODE,
    ANNOTATION_GANG_NAME,
    ANNOTATION_GANG_NETWORK_TOPOLOGY_SPEC,
    ANNOTATION_GANG_POD_NETWORK_TOPOLOGY_INDEX,
    ANNOTATION_GANG_TOTAL_NUM,
    ANNOTATION_GANG_WAIT_TIME,
    LABEL_LIGHTWEIGHT_COSCHEDULING_POD_GROUP_MIN_AVAILABLE,
    LABEL_LIGHTWEIGHT_COSCHEDULING_POD_GROUP_NAME,
    LABEL_POD_GROUP,
    GangMatchPolicy,
    GangMode,
    format_gang_groups,
    format_network_topology_spec,
    gang_group_id,
    get_gang_id,
    get_gang_match_policy,
    get_gang_min_num,
    get_gang_mode,
    get_gang_name,
    get_gang_total_num,
    get_gang_wait_time,
    get_pod_network_topology_index,
    parse_gang_groups,
    parse_gang_min_num,
    parse_network_topology_spec,
    parse_pod_network_topology_index,
    sort_pods_by_index,
)


def pod(name="p", labels=None, annotations=None, namespace="ns"):
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels or {},
                         "annotations": annotations or {}}}


def test_gang_name_resolution_order():
    both = pod(labels={LABEL_POD_GROUP: "pg", LABEL_LIGHTWEIGHT_COSCHEDULING_POD_GROUP_NAME: "lw"},
               annotations={ANNOTATION_GANG_NAME: "anno"})
    assert get_gang_name(both) == "pg"
    assert get_gang_name(pod(labels={LABEL_LIGHTWEIGHT_COSCHEDULING_POD_GROUP_NAME: "lw"},
                             annotations={ANNOTATION_GANG_NAME: "anno"})) == "lw"
    assert get_gang_name(pod(annotations={ANNOTATION_GANG_NAME: "anno"})) == "anno"
    assert get_gang_name(pod()) == ""
    assert get_gang_id(pod(annotations={ANNOTATION_GANG_NAME: "g"})) == "ns/g"
    assert get_gang_id(pod()) == ""


def test_min_available_label_wins():
    assert parse_gang_min_num({ANNOTATION_GANG_MIN_NUM: "3"}) == 3
    assert parse_gang_min_num({}) is None
    labels = {LABEL_LIGHTWEIGHT_COSCHEDULING_POD_GROUP_MIN_AVAILABLE: "5"}
    assert get_gang_min_num(pod(labels=labels, annotations={ANNOTATION_GANG_MIN_NUM: "3"})) == 5
    assert get_gang_min_num(pod(annotations={ANNOTATION_GANG_MIN_NUM: "3"})) == 3


@pytest.mark.parametrize(("value", "expected"), [
    (None, 3), ("", 3), ("0", 3), ("abc", 3), ("2", 3), ("3", 3), ("8", 8), ("-1", 3),
])
def test_total_number_falls_back_to_min(value, expected):
    annotations = {} if value is None else {ANNOTATION_GANG_TOTAL_NUM: value}
    assert get_gang_total_num(annotations, 3) == expected


@pytest.mark.parametrize(("value", "expected"), [
    (None, 600.0), ("", 600.0), ("0s", 600.0), ("-5s", 600.0), ("soon", 600.0),
    ("30s", 30.0), ("1m30s", 90.0),
])
def test_waiting_time_falls_back_to_default(value, expected):
    annotations = {} if value is None else {ANNOTATION_GANG_WAIT_TIME: value}
    assert get_gang_wait_time(annotations, 600.0) == expected


@pytest.mark.parametrize(("value", "expected"), [
    (None, GangMode.STRICT), ("Strict", GangMode.STRICT), ("NonStrict", GangMode.NON_STRICT),
    ("nonstrict", GangMode.STRICT), ("", GangMode.STRICT),
])
def test_mode(value, expected):
    annotations = {} if value is None else {ANNOTATION_GANG_MODE: value}
    assert get_gang_mode(annotations) is expected


def test_match_policy_main_key_alias_and_default():
    assert get_gang_match_policy({}) == GangMatchPolicy.ONCE_SATISFIED
    assert get_gang_match_policy({ANNOTATION_GANG_MATCH_POLICY: "only-waiting"}) == (
        GangMatchPolicy.ONLY_WAITING)
    assert get_gang_match_policy({ANNOTATION_ALIAS_GANG_MATCH_POLICY: "waiting-and-running"}) == (
        GangMatchPolicy.WAITING_AND_RUNNING)
    assert get_gang_match_policy({ANNOTATION_GANG_MATCH_POLICY: "",
                                  ANNOTATION_ALIAS_GANG_MATCH_POLICY: "only-waiting"}) == (
        GangMatchPolicy.ONLY_WAITING)
    assert get_gang_match_policy({ANNOTATION_GANG_MATCH_POLICY: "once-satisfied-TYPO"},
                                 default=GangMatchPolicy.ONLY_WAITING) == (
        GangMatchPolicy.ONLY_WAITING)


def test_groups_and_group_id():
    raw = '["ns/b","ns/a"]'
    groups = parse_gang_groups({ANNOTATION_GANG_GROUPS: raw})
    assert groups == ["ns/b", "ns/a"]
    assert format_gang_groups(groups) == raw
    assert gang_group_id(groups, "ns/a") == "ns/a,ns/b"
    assert gang_group_id(parse_gang_groups({}), "ns/a") == "ns/a"


def test_network_topology_index_and_sorting():
    assert parse_pod_network_topology_index({}) == -1
    assert parse_pod_network_topology_index({ANNOTATION_GANG_POD_NETWORK_TOPOLOGY_INDEX: "4"}) == 4
    with pytest.raises(MalformedValueError):
        parse_pod_network_topology_index({ANNOTATION_GANG_POD_NETWORK_TOPOLOGY_INDEX: "x"})
    assert get_pod_network_topology_index({ANNOTATION_GANG_POD_NETWORK_TOPOLOGY_INDEX: "x"}) == -1

    def indexed(name, index):
        return pod(name, annotations={ANNOTATION_GANG_POD_NETWORK_TOPOLOGY_INDEX: index})

    pods = [pod("z"), indexed("d", "2"), indexed("c", "bad"), indexed("b", "1"),
            indexed("a", "2"), pod("y")]
    assert [p["metadata"]["name"] for p in sort_pods_by_index(pods)] == [
        "b", "a", "d", "c", "y", "z"]


def test_network_topology_spec_round_trip():
    raw = ('{"gatherStrategy":[{"layer":"SpineLayer","strategy":"PreferGather"},'
           '{"layer":"BlockLayer","strategy":"MustGather","podCountMultiple":8}]}')
    spec = parse_network_topology_spec({ANNOTATION_GANG_NETWORK_TOPOLOGY_SPEC: raw})
    assert spec.gather_strategy[1].pod_count_multiple == 8
    assert format_network_topology_spec(spec) == raw
    assert parse_network_topology_spec({ANNOTATION_GANG_NETWORK_TOPOLOGY_SPEC: ""}) is None
