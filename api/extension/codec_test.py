"""Go's strconv and encoding/json rules as the extension parsers apply them."""

import math

import pytest

from api.errors import MalformedValueError
from api.extension.codec import (
    MAX_JSON_DEPTH,
    decode_json,
    json_depth_error,
    parse_bool,
    parse_float,
    parse_int,
)


@pytest.mark.parametrize(("text", "base", "bits", "expected"), [
    ("0", 10, 64, 0), ("-5", 10, 64, -5), ("+7", 10, 64, 7), ("007", 10, 64, 7),
    ("9223372036854775807", 10, 64, 2**63 - 1), ("-9223372036854775808", 10, 64, -(2**63)),
    ("2147483647", 10, 32, 2**31 - 1), ("-2147483648", 10, 32, -(2**31)),
    ("0x1F", 0, 32, 31), ("0X1f", 0, 32, 31), ("0o17", 0, 32, 15), ("0b101", 0, 32, 5),
    ("010", 0, 32, 8), ("0", 0, 32, 0), ("-0x10", 0, 32, -16), ("1_000", 0, 32, 1000),
    ("0x_1f", 0, 32, 31), ("0_10", 0, 32, 8),
])
def test_parse_int_accepts_go_forms(text, base, bits, expected):
    assert parse_int(text, base=base, bits=bits) == expected


@pytest.mark.parametrize(("text", "base", "bits"), [
    ("", 10, 64), ("-", 10, 64), ("+", 0, 32), ("1.0", 10, 64), (" 1", 10, 64), ("1 ", 10, 64),
    ("0x10", 10, 64), ("1_000", 10, 64), ("9223372036854775808", 10, 64),
    ("2147483648", 10, 32), ("-2147483649", 10, 32), ("0x", 0, 32), ("0b", 0, 32),
    ("08", 0, 32), ("0b102", 0, 32), ("_1", 0, 32), ("1_", 0, 32), ("1__0", 0, 32),
    ("0x_", 0, 32), ("+-1", 0, 32), ("١", 10, 64),
])
def test_parse_int_rejects_what_go_rejects(text, base, bits):
    with pytest.raises(ValueError):
        parse_int(text, base=base, bits=bits)


@pytest.mark.parametrize(("text", "expected"), [
    ("1", True), ("t", True), ("T", True), ("TRUE", True), ("true", True), ("True", True),
    ("0", False), ("f", False), ("F", False), ("FALSE", False), ("false", False),
    ("False", False),
])
def test_parse_bool(text, expected):
    assert parse_bool(text) is expected


@pytest.mark.parametrize("text", ["yes", "tRUE", "", " true", "on"])
def test_parse_bool_rejects(text):
    with pytest.raises(ValueError):
        parse_bool(text)


def test_parse_float():
    assert parse_float("1.20") == 1.2
    assert parse_float(".5") == 0.5
    assert parse_float("1e3") == 1000.0
    assert parse_float("-Inf") == -math.inf
    assert math.isnan(parse_float("NaN"))
    for bad in ("", "1,2", "1_0", " 1", "0.6 ", "1e400", "one"):
        with pytest.raises(ValueError):
            parse_float(bad)


def test_decode_json_is_strict():
    assert decode_json("k", '{"a": [1, 2.5, null]}') == {"a": [1, 2.5, None]}
    for bad in ("NaN", '{"a": Infinity}', "{'a': 1}", '{"a": 1} x', ""):
        with pytest.raises(MalformedValueError) as info:
            decode_json("k", bad)
        assert info.value.key == "k"


def test_decode_json_refuses_nesting_beyond_the_bound():
    # An annotation nested 5,000 levels raised RecursionError out of json.loads.
    for deep in ("[" * 5000 + "]" * 5000, '{"a":' * 101 + "1" + "}" * 101):
        with pytest.raises(MalformedValueError) as info:
            decode_json("k", deep)
        assert str(info.value) == ("invalid value for 'k': not valid JSON: JSON nested more "
                                   f"than {MAX_JSON_DEPTH} levels deep")
    at_bound = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert json_depth_error(at_bound) is None
    assert isinstance(decode_json("k", at_bound), list)
    # Brackets inside strings (escaped quotes included) are not nesting.
    assert json_depth_error('{"a": "' + '\\"[' * 500 + '"}') is None
