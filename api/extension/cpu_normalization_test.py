"""CPU normalization ratio, enable label and basic info (upstream
`apis/extension/cpu_normalization.go`)."""

import pytest

from api.errors import MalformedValueError
from api.extension.cpu_normalization import (
    ANNOTATION_CPU_BASIC_INFO,
    ANNOTATION_CPU_NORMALIZATION_RATIO,
    LABEL_CPU_NORMALIZATION_ENABLED,
    CPUBasicInfo,
    format_cpu_basic_info,
    format_cpu_normalization_ratio,
    is_cpu_normalization_ratio_different,
    parse_cpu_basic_info,
    parse_cpu_normalization_enabled,
    parse_cpu_normalization_ratio,
)


@pytest.mark.parametrize(("ratio", "text"), [(1.2, "1.20"), (1.125, "1.12"), (1.0, "1.00"),
                                             (3.1415926, "3.14"), (1.375, "1.38")])
def test_ratio_round_trip(ratio, text):
    assert format_cpu_normalization_ratio(ratio) == text
    parsed = parse_cpu_normalization_ratio({ANNOTATION_CPU_NORMALIZATION_RATIO: text})
    assert parsed == float(text)


def test_ratio_missing_and_invalid():
    assert parse_cpu_normalization_ratio({}) == -1
    assert parse_cpu_normalization_ratio(None) == -1
    for bad in ("0", "-1.2", "NaN", "+Inf", "abc", ""):
        with pytest.raises(MalformedValueError):
            parse_cpu_normalization_ratio({ANNOTATION_CPU_NORMALIZATION_RATIO: bad})


def test_ratios_differ_only_beyond_one_hundredth():
    assert not is_cpu_normalization_ratio_different(1.20, 1.21)
    assert not is_cpu_normalization_ratio_different(1.20, 1.195)
    assert is_cpu_normalization_ratio_different(1.20, 1.22)
    assert is_cpu_normalization_ratio_different(1.5, 1.2)


@pytest.mark.parametrize(("value", "expected"), [
    ("true", True), ("1", True), ("t", True), ("TRUE", True), ("false", False), ("0", False),
    ("F", False)])
def test_enabled_label_is_a_go_bool(value, expected):
    assert parse_cpu_normalization_enabled({LABEL_CPU_NORMALIZATION_ENABLED: value}) is expected


def test_enabled_label_missing():
    assert parse_cpu_normalization_enabled({}) is None


def test_cpu_basic_info_round_trip():
    raw = ('{"cpuModel":"Intel Xeon Platinum 8269CY","hyperThreadEnabled":true,'
           '"turboEnabled":true,"catL3CbmMask":"7ff","vendorID":"GenuineIntel"}')
    info = parse_cpu_basic_info({ANNOTATION_CPU_BASIC_INFO: raw})
    assert format_cpu_basic_info(info) == raw
    assert info.key() == "Intel Xeon Platinum 8269CY_true_true"
    assert format_cpu_basic_info(CPUBasicInfo()) == "{}"
    assert parse_cpu_basic_info({}) is None
