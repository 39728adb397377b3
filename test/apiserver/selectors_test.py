"""Label and field selector parsing and matching."""

from __future__ import annotations

import pytest

from test.apiserver.errors import ApiError
from test.apiserver.selectors import (
    parse_field_selector,
    parse_label_selector,
    path_getter,
    selector_from_object,
)

LABELS = {"app": "web", "tier": "front", "version": "3"}


@pytest.mark.parametrize("sel,want", [
    ("", True), ("app=web", True), ("app==web", True), ("app!=web", False),
    ("app!=db", True), ("missing!=x", True), ("app in (web,db)", True),
    ("app in (db)", False), ("app notin (db, cache)", True), ("missing notin (x)", True),
    ("tier", True), ("missing", False), ("!missing", True), ("!tier", False),
    ("app=web,tier=front", True), ("app=web,tier=back", False), ("version>2", True),
    ("version<3", False), ("app in (web),!missing,tier", True),
])
def test_label_selector(sel, want):
    assert parse_label_selector(sel).matches(LABELS) is want


@pytest.mark.parametrize("bad", ["app=web,", "a b c", "version>x", "=x"])
def test_bad_label_selector_is_bad_request(bad):
    with pytest.raises(ApiError) as e:
        parse_label_selector(bad)
    assert e.value.code == 400


def test_label_selector_object():
    assert selector_from_object(None).matches(LABELS) is False
    assert selector_from_object({}).matches(LABELS) is True
    sel = selector_from_object({"matchLabels": {"app": "web"}, "matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["front"]},
        {"key": "x", "operator": "DoesNotExist"}]})
    assert sel.matches(LABELS) and not sel.matches({"app": "web"})


def test_field_selector():
    getters = {"metadata.name": path_getter("metadata.name"),
               "spec.nodeName": path_getter("spec.nodeName"),
               "spec.hostNetwork": path_getter("spec.hostNetwork")}
    obj = {"metadata": {"name": "p"}, "spec": {"nodeName": "n1", "hostNetwork": True}}
    assert parse_field_selector("spec.nodeName=n1,metadata.name!=q", getters, "pods").matches(
        obj, getters)
    assert parse_field_selector("spec.hostNetwork=true", getters, "pods").matches(obj, getters)
    assert not parse_field_selector("spec.nodeName==n2", getters, "pods").matches(obj, getters)
    assert parse_field_selector("spec.nodeName=", getters, "pods").matches(
        {"metadata": {"name": "x"}}, getters)
    with pytest.raises(ApiError) as e:
        parse_field_selector("spec.other=1", getters, "pods")
    assert e.value.code == 400
