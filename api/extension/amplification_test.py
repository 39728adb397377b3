"""Resource amplification arithmetic and two-decimal ratios (upstream
`apis/extension/node_resource_amplification.go`)."""

import math

import pytest

from api.extension.amplification import (
    ANNOTATION_NODE_RAW_ALLOCATABLE,
    ANNOTATION_NODE_RESOURCE_AMPLIFICATION_RATIO,
    amplify,
    amplify_quantity,
    amplify_resource_list,
    format_ratio,
    format_raw_allocatable,
    format_resource_amplification_ratios,
    get_resource_amplification_ratio,
    parse_raw_allocatable,
    parse_resource_amplification_ratios,
)


@pytest.mark.parametrize(("origin", "ratio", "expected"), [
    (1000, 1.5, 1500), (1000, 1.0, 1000), (1000, 0.5, 1000), (1000, -1, 1000),
    (3, 1.1, 4), (2000, 1.22, 2440), (1, 1.0001, 2), (0, 2.0, 0),
])
def test_amplify_is_ceil_for_ratios_above_one(origin, ratio, expected):
    assert amplify(origin, ratio) == expected


@pytest.mark.parametrize(("name", "quantity", "ratio", "expected"), [
    ("cpu", "2", 1.1, "2200m"),  # on milli-value, DecimalSI milli quantity
    ("cpu", "4", 1.5, "6"),
    ("cpu", "1500m", 1.333, "2"),  # ceil(1999.5) = 2000m, written canonically
    ("memory", "1Gi", 1.5, "1536Mi"),  # on value, BinarySI
    ("memory", "1Gi", 1.1, "1181116007"),  # ceil(1181116006.4)
    ("ephemeral-storage", "10Gi", 2, "20Gi"),
    ("pods", "110", 1.22, "135"),  # others: value, DecimalSI
    ("kubernetes.io/batch-cpu", "1000", 2, "2k"),
    ("cpu", "0", 2.0, "0"),  # zero stays
    ("cpu", "2", 1.0, "2"),  # ratio 1 changes nothing
    ("memory", "1Gi", 0.8, "1Gi"),
])
def test_amplify_quantity(name, quantity, ratio, expected):
    assert amplify_quantity(name, quantity, ratio) == expected


def test_amplify_resource_list():
    resources = {"cpu": "2", "memory": "4Gi", "pods": "110"}
    ratios = {"cpu": 1.5, "memory": 1.25}
    assert amplify_resource_list(resources, ratios) == {
        "cpu": "3", "memory": "5Gi", "pods": "110"}
    assert amplify_resource_list(resources, ratios, ["memory", "nvidia.com/gpu"]) == {
        "cpu": "2", "memory": "5Gi", "pods": "110"}
    assert resources == {"cpu": "2", "memory": "4Gi", "pods": "110"}  # not changed in place


@pytest.mark.parametrize(("ratio", "expected"), [
    (1.2, "1.20"), (1.125, "1.12"), (1.135, "1.14"), (1.222, "1.22"), (1.5, "1.50"),
    (1, "1.00"), (3.1415926, "3.14"), (0.005, "0.01"), (2.675, "2.67"),
])
def test_ratio_has_two_decimals_like_go(ratio, expected):
    assert format_ratio(ratio) == expected


def test_ratio_must_be_finite():
    for bad in (math.inf, math.nan):
        with pytest.raises(ValueError):
            format_ratio(bad)


def test_amplification_ratio_annotation():
    value = format_resource_amplification_ratios({"memory": 1.5, "cpu": 1.222})
    assert value == '{"cpu":1.22,"memory":1.50}'
    annotations = {ANNOTATION_NODE_RESOURCE_AMPLIFICATION_RATIO: value}
    assert parse_resource_amplification_ratios(annotations) == {"cpu": 1.22, "memory": 1.5}
    assert get_resource_amplification_ratio(annotations, "cpu") == 1.22
    assert get_resource_amplification_ratio(annotations, "pods") == -1
    assert get_resource_amplification_ratio({}, "cpu") == -1
    assert parse_resource_amplification_ratios({}) is None
    assert parse_resource_amplification_ratios(
        {ANNOTATION_NODE_RESOURCE_AMPLIFICATION_RATIO: '{"cpu":2}'}) == {"cpu": 2.0}


def test_raw_allocatable_round_trip():
    raw = '{"cpu":"32","memory":"128Gi","pods":"110"}'
    allocatable = parse_raw_allocatable({ANNOTATION_NODE_RAW_ALLOCATABLE: raw})
    assert allocatable == {"cpu": "32", "memory": "128Gi", "pods": "110"}
    assert format_raw_allocatable(allocatable) == raw
    assert format_raw_allocatable({"memory": "1024Mi", "cpu": "32000m"}) == (
        '{"cpu":"32","memory":"1Gi"}')
    assert parse_raw_allocatable(None) is None
