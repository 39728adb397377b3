"""Priority classes, bands and derivation (upstream `apis/extension/priority.go`), and sub-priority
parsing."""

import pytest

from api.errors import MalformedValueError
from api.extension.priority import (
    LABEL_POD_PRIORITY,
    LABEL_POD_PRIORITY_CLASS,
    PriorityClass,
    default_priority_value,
    format_sub_priority,
    get_pod_priority_class_raw,
    get_pod_priority_class_with_default,
    get_pod_priority_value_with_default,
    get_pod_sub_priority,
    parse_sub_priority,
    priority_class_by_value,
    priority_class_for_qos,
)
from api.extension.qos import LABEL_POD_QOS, QoSClass

P, M, B, F, N = (PriorityClass.PROD, PriorityClass.MID, PriorityClass.BATCH, PriorityClass.FREE,
                 PriorityClass.NONE)
GUARANTEED = {"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                                         "limits": {"cpu": "1", "memory": "1Gi"}}}


def pod(labels=None, priority=None, containers=()):
    spec = {"containers": list(containers)}
    if priority is not None:
        spec["priority"] = priority
    return {"metadata": {"labels": labels or {}}, "spec": spec}


@pytest.mark.parametrize(("value", "expected"), [
    (9000, P), (9500, P), (9999, P), (10000, N), (8999, N), (8500, N),
    (7000, M), (7999, M), (6999, N), (6000, N),
    (5000, B), (5999, B), (4999, N),
    (3000, F), (3999, F), (2999, N), (4000, N),
    (0, N), (-1, N), (2_000_000_000, N), (None, N),
])
def test_bands_and_gaps(value, expected):
    assert priority_class_by_value(value) is expected


@pytest.mark.parametrize(("obj", "raw", "with_default"), [
    # The label decides when it exists.
    (pod({LABEL_POD_PRIORITY_CLASS: "koord-batch"}, 9500), B, B),
    (pod({LABEL_POD_PRIORITY_CLASS: "koord-mid"}), M, M),
    (pod({LABEL_POD_PRIORITY_CLASS: "koord-free"}, 9500), F, F),
    # Pitfall: present but invalid → none, and spec.priority is NOT consulted (9500 would be
    # prod; the BestEffort pod ends up batch)...
    (pod({LABEL_POD_PRIORITY_CLASS: "koord-production"}, 9500), N, B),
    (pod({LABEL_POD_PRIORITY_CLASS: ""}, 5500, [GUARANTEED]), N, P),
    # ... then the QoS fallback applies.
    (pod({LABEL_POD_PRIORITY_CLASS: "prod", LABEL_POD_QOS: "BE"}, 9500), N, B),
    # Without the label: spec.priority bands.
    (pod({}, 9100), P, P), (pod({}, 7100), M, M), (pod({}, 5100), B, B), (pod({}, 3100), F, F),
    # Values in the gaps → none → from QoS.
    (pod({LABEL_POD_QOS: "LS"}, 8500), N, P),
    (pod({LABEL_POD_QOS: "BE"}, 0), N, B),
    (pod({LABEL_POD_QOS: "SYSTEM"}), N, P),
    (pod({LABEL_POD_QOS: "LSE"}), N, P),
    (pod({LABEL_POD_QOS: "LSR"}), N, P),
    # No label, no priority: from the Kubernetes QoS.
    (pod({}, None, [GUARANTEED]), N, P),
    (pod({}, None, []), N, B),
    (None, N, B),
])
def test_priority_class_derivation(obj, raw, with_default):
    assert get_pod_priority_class_raw(obj) is raw
    assert get_pod_priority_class_with_default(obj) is with_default


@pytest.mark.parametrize(("qos", "expected"), [
    (QoSClass.SYSTEM, P), (QoSClass.LSE, P), (QoSClass.LSR, P), (QoSClass.LS, P),
    (QoSClass.BE, B), (QoSClass.NONE, N),
])
def test_priority_class_for_qos(qos, expected):
    assert priority_class_for_qos(qos) is expected


@pytest.mark.parametrize(("obj", "expected"), [
    (None, 0),
    (pod({}, 9123), 9123),  # a non-zero value is returned unchanged
    (pod({}, 8500), 8500),  # even in a gap
    (pod({LABEL_POD_PRIORITY_CLASS: "koord-batch"}, 42), 42),
    (pod({LABEL_POD_PRIORITY_CLASS: "koord-batch"}, 0), 5500),
    (pod({LABEL_POD_PRIORITY_CLASS: "koord-mid"}), 7500),
    (pod({LABEL_POD_PRIORITY_CLASS: "koord-free"}), 3500),
    (pod({LABEL_POD_QOS: "LS"}), 9500),
    (pod({LABEL_POD_QOS: "BE"}), 5500),
    (pod({}, None, [GUARANTEED]), 9500),
])
def test_priority_value_with_default(obj, expected):
    assert get_pod_priority_value_with_default(obj) == expected


def test_default_priority_values():
    assert [default_priority_value(c) for c in (P, M, B, F, N)] == [9500, 7500, 5500, 3500, 0]


@pytest.mark.parametrize(("label", "expected"), [
    (None, 0), ("", 0), ("0", 0), ("7", 7), ("-7", -7), ("+7", 7), ("1000", 1000),
    ("010", 8), ("0x1F", 31), ("0X10", 16), ("0o17", 15), ("0b11", 3), ("1_000", 1000),
    ("0x_ff", 255), ("2147483647", 2147483647), ("-2147483648", -2147483648),
])
def test_sub_priority_uses_go_base_detection(label, expected):
    assert parse_sub_priority(label) == expected
    labels = {} if label is None else {LABEL_POD_PRIORITY: label}
    assert get_pod_sub_priority(pod(labels)) == expected


@pytest.mark.parametrize("label", [
    "abc", "1.5", " 1", "08", "0x", "0b2", "1__0", "_1", "1_", "2147483648", "-2147483649",
    "0x80000000", "++1", "1e3",
])
def test_invalid_sub_priority_is_an_error(label):
    with pytest.raises(MalformedValueError) as info:
        get_pod_sub_priority(pod({LABEL_POD_PRIORITY: label}))
    assert info.value.key == LABEL_POD_PRIORITY


def test_sub_priority_is_written_in_decimal():
    assert format_sub_priority(8) == "8"
    assert parse_sub_priority(format_sub_priority(-12)) == -12
