"""Go's json.Unmarshal/json.Marshal behaviour of annotation payloads."""

from typing import Annotated

import pytest
from pydantic import Field, ValidationError

from api.extension.payload import (
    ALWAYS,
    GoDuration,
    GoInt32,
    GoPayload,
    GoQuantity,
    GoResourceList,
    OptBool,
    OptInt64,
    StrMap,
)


class Inner(GoPayload):
    name: str = ""


class Sample(GoPayload):
    cache_id: GoInt32 = Field(0, alias="cacheID")
    cpuset: str = ""
    enabled: OptBool = None
    percent: OptInt64 = None
    always: Annotated[GoInt32, ALWAYS] = 0
    always_map: Annotated[StrMap | None, ALWAYS] = None
    labels: StrMap | None = None
    resources: GoResourceList | None = None
    window: GoDuration | None = None
    bandwidth: Annotated[GoQuantity | None, ALWAYS] = None
    inner: Inner | None = None
    struct: Inner = Field(default_factory=Inner)


def test_keys_match_case_insensitively_and_exact_key_wins():
    assert Sample.model_validate({"cacheid": 3}).cache_id == 3
    assert Sample.model_validate({"CPUSET": "0-1"}).cpuset == "0-1"
    assert Sample.model_validate({"cacheid": 1, "cacheID": 2}).cache_id == 2
    assert Sample.model_validate({"cacheID": 2, "CACHEID": 1}).cache_id == 2


def test_unknown_keys_are_ignored_and_null_leaves_the_zero_value():
    sample = Sample.model_validate({"bogus": 1, "cpuset": None, "percent": None, "inner": None})
    assert (sample.cpuset, sample.percent, sample.inner) == ("", None, None)


@pytest.mark.parametrize("data", [
    {"cacheID": "1"}, {"cacheID": 1.5}, {"cacheID": True}, {"cacheID": 2**31},
    {"enabled": "true"}, {"enabled": 1}, {"cpuset": 5}, {"labels": {"a": 1}},
    {"resources": {"cpu": "x"}}, {"window": "5"}, {"inner": []},
])
def test_go_types_are_not_converted(data):
    with pytest.raises(ValidationError):
        Sample.model_validate(data)


def test_output_follows_omitempty_pointers_and_always():
    assert Sample().to_go_json() == '{"always":0,"alwaysMap":null,"bandwidth":null,"struct":{}}'
    sample = Sample.model_validate({
        "percent": 0, "enabled": False, "cpuset": "", "cacheID": 0, "labels": {},
        "inner": {}, "bandwidth": "2.5", "window": "1h", "always_map": {"b": "2", "a": "1"},
        "resources": {"memory": "1024Mi", "cpu": "1000m"},
    })
    # Pointers are written even when zero; value fields are left out when empty; map keys are
    # sorted; quantities and durations come out in Go's canonical forms.
    assert sample.to_go_json() == (
        '{"enabled":false,"percent":0,"always":0,"alwaysMap":{"a":"1","b":"2"},'
        '"resources":{"cpu":"1","memory":"1Gi"},"window":"1h0m0s","bandwidth":"2500m",'
        '"inner":{},"struct":{}}')


def test_go_escapes_html_characters():
    assert Sample(cpuset="<&>").to_go_json().startswith('{"cpuset":"\\u003c\\u0026\\u003e"')
