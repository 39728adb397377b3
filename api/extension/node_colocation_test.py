"""Node colocation overrides: the strategy annotation and the ratio labels (upstream
`apis/extension/node_colocation.go`)."""

import pytest

from api.errors import MalformedValueError
from api.extension.node_colocation import (
    ANNOTATION_NODE_COLOCATION_STRATEGY,
    LABEL_CPU_RECLAIM_RATIO,
    LABEL_MEMORY_RECLAIM_RATIO,
    get_node_colocation_strategy,
    get_ratio_label_percent,
    parse_node_colocation_strategy,
    parse_ratio_label,
)


def test_colocation_strategy_passes_through_as_raw_dict():
    raw = '{"enable":true,"cpuReclaimThresholdPercent":70,"extensions":{"x":{"y":1}}}'
    strategy = parse_node_colocation_strategy({ANNOTATION_NODE_COLOCATION_STRATEGY: raw})
    assert strategy == {"enable": True, "cpuReclaimThresholdPercent": 70,
                        "extensions": {"x": {"y": 1}}}
    assert parse_node_colocation_strategy({}) is None
    assert parse_node_colocation_strategy({ANNOTATION_NODE_COLOCATION_STRATEGY: "null"}) is None


def test_invalid_colocation_strategy_is_an_error_or_ignored():
    annotations = {ANNOTATION_NODE_COLOCATION_STRATEGY: "{enable: true}"}
    with pytest.raises(MalformedValueError):
        parse_node_colocation_strategy(annotations)
    assert get_node_colocation_strategy(annotations) is None


@pytest.mark.parametrize(("value", "percent"), [
    ("0.6", 60), ("0.29", 28), ("1", 100), ("0", 0), ("1.5", 150),  # int(ratio × 100) truncates
    (None, None), ("-0.1", None), ("abc", None), ("", None),
])
def test_ratio_label_percent(value, percent):
    labels = {} if value is None else {LABEL_CPU_RECLAIM_RATIO: value}
    assert get_ratio_label_percent(labels, LABEL_CPU_RECLAIM_RATIO) == percent


def test_parse_ratio_label():
    assert parse_ratio_label({LABEL_MEMORY_RECLAIM_RATIO: "0.65"}, LABEL_MEMORY_RECLAIM_RATIO) == (
        0.65)
    with pytest.raises(MalformedValueError) as info:
        parse_ratio_label({LABEL_MEMORY_RECLAIM_RATIO: "x"}, LABEL_MEMORY_RECLAIM_RATIO)
    assert info.value.key == LABEL_MEMORY_RECLAIM_RATIO
