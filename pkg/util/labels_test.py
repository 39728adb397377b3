"""Label selector matching as Kubernetes does it (metav1.LabelSelectorAsSelector)."""

from __future__ import annotations

from typing import Any

import pytest

from api.meta import LabelSelector, LabelSelectorRequirement
from pkg.util.labels import (
    InvalidSelectorError,
    Selector,
    first_match,
    parse_selector,
    parse_selector_string,
    selector_matches,
)

NODE_LABELS = {"pool": "a", "kubernetes.io/arch": "amd64", "gpu": ""}


@pytest.mark.parametrize(("selector", "labels", "want"), [
    (None, NODE_LABELS, False),
    ({}, NODE_LABELS, True),
    ({}, None, True),
    ({"matchLabels": {"pool": "a"}}, NODE_LABELS, True),
    ({"matchLabels": {"pool": "b"}}, NODE_LABELS, False),
    ({"matchLabels": {"pool": "a", "kubernetes.io/arch": "arm64"}}, NODE_LABELS, False),
    ({"matchLabels": {"gpu": ""}}, NODE_LABELS, True),
    ({"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a", "b"]}]},
     NODE_LABELS, True),
    ({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
     NODE_LABELS, False),
    ({"matchExpressions": [{"key": "pool", "operator": "NotIn", "values": ["a"]}]},
     NODE_LABELS, False),
    ({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]},
     NODE_LABELS, True),
    ({"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}, NODE_LABELS, True),
    ({"matchExpressions": [{"key": "zone", "operator": "Exists"}]}, NODE_LABELS, False),
    ({"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}, NODE_LABELS, True),
    ({"matchExpressions": [{"key": "pool", "operator": "DoesNotExist", "values": []}]},
     NODE_LABELS, False),
    ({"matchLabels": {"pool": "a"},
      "matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]},
     NODE_LABELS, False),
    ({"matchLabels": {"pool": "a"}}, None, False),
])
def test_selector_matches(selector: Any, labels: Any, want: bool) -> None:
    assert selector_matches(selector, labels) is want
    if selector is not None:
        model = LabelSelector.model_validate(selector)
        assert selector_matches(model, labels) is want


@pytest.mark.parametrize(("selector", "message"), [
    ({"matchExpressions": [{"key": "pool", "operator": "Gt", "values": ["1"]}]},
     "not a valid label selector operator"),
    ({"matchExpressions": [{"key": "pool", "operator": "In", "values": []}]},
     "needs at least one value"),
    ({"matchExpressions": [{"key": "pool", "operator": "NotIn"}]}, "needs at least one value"),
    ({"matchExpressions": [{"key": "pool", "operator": "Exists", "values": ["a"]}]},
     "takes no values"),
    ({"matchLabels": {"bad key!": "a"}}, "label key"),
    ({"matchLabels": {"Example.com/pool": "a"}}, "prefix"),
    ({"matchLabels": {"pool": "a b"}}, "value"),
    ({"matchLabels": {"pool": "x" * 64}}, "value"),
    # Go's '$' does not match before a final newline; as apimachinery, the reason is given.
    ({"matchLabels": {"pool\n": "a"}}, r"label key 'pool\\n': name part must consist of"),
    ({"matchLabels": {"pool": "a\n"}}, r"value 'a\\n' for label 'pool': a valid label must"),
    ({"matchLabels": ["pool"]}, "matchLabels"),
    ({"matchExpressions": {"key": "pool"}}, "matchExpressions"),
    ("pool=a", "must be an object"),
])
def test_invalid_selectors_raise(selector: Any, message: str) -> None:
    with pytest.raises(InvalidSelectorError, match=message):
        parse_selector(selector)


def test_model_selector_with_requirements() -> None:
    selector = LabelSelector(match_expressions=[
        LabelSelectorRequirement(key="pool", operator="In", values=["a"])])
    parsed = parse_selector(selector)
    assert parsed.matches({"pool": "a"}) and not parsed.matches({"pool": "b"})
    assert str(parsed) == "pool in (a)"


def test_nothing_and_everything() -> None:
    assert not Selector.nothing().matches({})
    assert Selector.everything().matches({"any": "thing"})


def test_first_match_skips_invalid_selectors_and_keeps_order() -> None:
    entries = [
        ("broken", {"matchExpressions": [{"key": "pool", "operator": "Bogus"}]}),
        ("none", None),
        ("first", {"matchLabels": {"pool": "a"}}),
        ("second", {}),
    ]
    found = first_match(entries, lambda entry: entry[1], NODE_LABELS)
    assert found is not None and found[0] == "first"
    assert first_match(entries[:2], lambda entry: entry[1], NODE_LABELS) is None


@pytest.mark.parametrize(("text", "labels", "want"), [
    ("", {"a": "1"}, True),
    ("pool=a", NODE_LABELS, True),
    ("pool==a", NODE_LABELS, True),
    ("pool=b", NODE_LABELS, False),
    ("pool!=b", NODE_LABELS, True),
    ("missing!=b", NODE_LABELS, True),
    ("gpu", NODE_LABELS, True),
    ("!gpu", NODE_LABELS, False),
    ("!missing", NODE_LABELS, True),
    ("kubernetes.io/arch in (arm64, amd64),pool", NODE_LABELS, True),
    ("kubernetes.io/arch notin (amd64)", NODE_LABELS, False),
    ("pool=a, gpu=", NODE_LABELS, True),
])
def test_string_selectors(text: str, labels: dict[str, str], want: bool) -> None:
    assert parse_selector_string(text).matches(labels) is want


@pytest.mark.parametrize("text", ["pool in a", "bad key=1", "pool=a b", "x in ()"])
def test_invalid_string_selectors_raise(text: str) -> None:
    with pytest.raises(InvalidSelectorError):
        parse_selector_string(text)
