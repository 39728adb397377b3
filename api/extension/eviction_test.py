"""Eviction keys (upstream `apis/extension/evict.go`, `eviction.go`)."""

import pytest

from api.errors import MalformedValueError
from api.extension.eviction import (
    ANNOTATION_EVICTION_COST,
    ANNOTATION_POD_EVICT_POLICY,
    ANNOTATION_POD_EVICTION_PRIORITY,
    ANNOTATION_SOFT_EVICTION,
    EVICTION_COST_NEVER,
    LABEL_POD_EVICT_ENABLED,
    EvictionFeature,
    format_eviction_policy,
    format_soft_eviction,
    get_eviction_priority,
    is_eviction_allowed,
    parse_eviction_cost,
    parse_eviction_policy,
    parse_eviction_priority,
    parse_soft_eviction,
    pod_evict_enabled,
)


@pytest.mark.parametrize(("value", "expected"), [
    (None, 0), ("0", 0), ("-5", -5), ("100", 100), ("2147483647", EVICTION_COST_NEVER),
    ("-2147483648", -2147483648),
])
def test_eviction_cost(value, expected):
    annotations = {} if value is None else {ANNOTATION_EVICTION_COST: value}
    assert parse_eviction_cost(annotations) == expected


@pytest.mark.parametrize("value", ["+10", "008", "00", "", " 1", "1.0", "0x10", "2147483648"])
def test_eviction_cost_rejects_plus_and_leading_zeros(value):
    with pytest.raises(MalformedValueError):
        parse_eviction_cost({ANNOTATION_EVICTION_COST: value})


def test_eviction_priority_is_plain_base_10():
    assert parse_eviction_priority({ANNOTATION_POD_EVICTION_PRIORITY: "-3"}) == -3
    assert parse_eviction_priority({ANNOTATION_POD_EVICTION_PRIORITY: "010"}) == 10
    assert parse_eviction_priority({}) == 0
    with pytest.raises(MalformedValueError):
        parse_eviction_priority({ANNOTATION_POD_EVICTION_PRIORITY: "0x1"})
    assert get_eviction_priority({ANNOTATION_POD_EVICTION_PRIORITY: "high"}) == 0


def test_eviction_policy():
    raw = '["BEMemoryEvict","MemoryEvict"]'
    annotations = {ANNOTATION_POD_EVICT_POLICY: raw}
    assert parse_eviction_policy(annotations) == ["BEMemoryEvict", "MemoryEvict"]
    assert format_eviction_policy(["BEMemoryEvict", "MemoryEvict"]) == raw
    assert is_eviction_allowed(annotations, EvictionFeature.MEMORY_EVICT)
    assert not is_eviction_allowed(annotations, EvictionFeature.CPU_EVICT)
    assert is_eviction_allowed({}, EvictionFeature.CPU_EVICT)  # absent: all allowed
    broken = {ANNOTATION_POD_EVICT_POLICY: "MemoryEvict"}
    assert not is_eviction_allowed(broken, EvictionFeature.MEMORY_EVICT)  # unparsable: none


def test_evict_enabled_label():
    assert pod_evict_enabled({"metadata": {"labels": {LABEL_POD_EVICT_ENABLED: "true"}}})
    assert not pod_evict_enabled({"metadata": {"labels": {LABEL_POD_EVICT_ENABLED: "True"}}})
    assert not pod_evict_enabled(None)


def test_soft_eviction_round_trip():
    raw = ('{"timestamp":"2024-03-05T08:00:00Z","deleteOptions":{"gracePeriodSeconds":30},'
           '"initiator":"LowNodeLoad","reason":"node is overloaded"}')
    spec = parse_soft_eviction({ANNOTATION_SOFT_EVICTION: raw})
    assert spec.delete_options.grace_period_seconds == 30
    assert format_soft_eviction(spec) == raw
    assert parse_soft_eviction({}) is None
    # Go writes metav1.Time in UTC at second precision.
    spec = parse_soft_eviction({ANNOTATION_SOFT_EVICTION:
                                '{"timestamp":"2024-03-05T10:00:00.5+02:00"}'})
    assert format_soft_eviction(spec) == '{"timestamp":"2024-03-05T08:00:00Z"}'
