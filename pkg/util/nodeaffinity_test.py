"""Tolerations, node selectors and node affinity as component-helpers match them."""

from __future__ import annotations

import re
from typing import Any

import pytest

from pkg.util.nodeaffinity import (
    DO_NOT_SCHEDULE_EFFECTS,
    InvalidSelectorError,
    NodeSelector,
    PreferredSchedulingTerms,
    RequiredNodeAffinity,
    find_untolerated_taint,
    match_node_selector,
    parse_int64,
    preferred_node_affinity,
    tolerates,
    toleration_tolerates,
)

# Tolerations --------------------------------------------------------------------------------

TAINT = {"key": "foo", "value": "bar", "effect": "NoSchedule"}


@pytest.mark.parametrize(("toleration", "want"), [
    ({"key": "foo", "operator": "Equal", "value": "bar", "effect": "NoSchedule"}, True),
    ({"key": "foo", "value": "bar", "effect": "NoSchedule"}, True),  # "" operator = Equal
    ({"key": "foo", "operator": "Equal", "value": "baz", "effect": "NoSchedule"}, False),
    ({"key": "foo", "operator": "Exists", "effect": "NoSchedule"}, True),
    ({"key": "foo", "operator": "Exists"}, True),  # empty effect: every effect
    ({"key": "foo", "operator": "Exists", "effect": "NoExecute"}, False),
    ({"key": "other", "operator": "Exists"}, False),
    ({"operator": "Exists"}, True),  # empty key with Exists: every taint
    ({"operator": "Exists", "effect": "PreferNoSchedule"}, False),
    ({"key": "foo", "operator": "Gt", "value": "bar"}, False),  # unknown operator
])
def test_toleration_tolerates(toleration: dict[str, Any], want: bool) -> None:
    assert toleration_tolerates(toleration, TAINT) is want


def test_tolerates_needs_one_matching_toleration() -> None:
    assert not tolerates(None, TAINT)
    assert not tolerates([], TAINT)
    assert tolerates([{"key": "x", "operator": "Exists"}, {"key": "foo", "value": "bar"}], TAINT)


def test_find_untolerated_taint_only_looks_at_the_given_effects() -> None:
    taints = [
        {"key": "soft", "effect": "PreferNoSchedule"},
        {"key": "a", "value": "1", "effect": "NoSchedule"},
        {"key": "b", "value": "2", "effect": "NoExecute"},
    ]
    assert find_untolerated_taint(taints, [], DO_NOT_SCHEDULE_EFFECTS) == taints[1]
    assert find_untolerated_taint(taints, [], None) == taints[0]
    tolerate_a = [{"key": "a", "operator": "Exists"}]
    assert find_untolerated_taint(taints, tolerate_a, DO_NOT_SCHEDULE_EFFECTS) == taints[2]
    everything = [{"operator": "Exists"}]
    assert find_untolerated_taint(taints, everything, DO_NOT_SCHEDULE_EFFECTS) is None
    assert find_untolerated_taint(None, None, DO_NOT_SCHEDULE_EFFECTS) is None


# Node selectors -----------------------------------------------------------------------------


def node(name: str = "node-1", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}}


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        e["values"] = list(values)
    return e


def terms(*ts: dict[str, Any]) -> dict[str, Any]:
    return {"nodeSelectorTerms": list(ts)}


@pytest.mark.parametrize(("selector", "n", "want"), [
    # No terms, or only empty terms: matches nothing.
    (terms(), node(), False),
    (terms({}), node(zone="a"), False),
    (terms({"matchExpressions": []}), node(zone="a"), False),
    (terms({"matchExpressions": [expr("zone", "In", "a", "b")]}), node(zone="b"), True),
    (terms({"matchExpressions": [expr("zone", "In", "a")]}), node(zone="c"), False),
    (terms({"matchExpressions": [expr("zone", "In", "a")]}), node(), False),
    (terms({"matchExpressions": [expr("zone", "NotIn", "a")]}), node(), True),
    (terms({"matchExpressions": [expr("zone", "NotIn", "a")]}), node(zone="a"), False),
    (terms({"matchExpressions": [expr("gpu", "Exists")]}), node(gpu=""), True),
    (terms({"matchExpressions": [expr("gpu", "DoesNotExist")]}), node(gpu=""), False),
    (terms({"matchExpressions": [expr("cores", "Gt", "8")]}), node(cores="16"), True),
    (terms({"matchExpressions": [expr("cores", "Gt", "8")]}), node(cores="8"), False),
    (terms({"matchExpressions": [expr("cores", "Lt", "8")]}), node(cores="7"), True),
    (terms({"matchExpressions": [expr("cores", "Lt", "8")]}), node(cores="-1"), True),
    (terms({"matchExpressions": [expr("cores", "Gt", "8")]}), node(cores="many"), False),
    (terms({"matchExpressions": [expr("cores", "Lt", "8")]}), node(), False),
    # Requirements of a term are ANDed ...
    (terms({"matchExpressions": [expr("zone", "In", "a"), expr("gpu", "Exists")]}),
     node(zone="a"), False),
    # ... terms are ORed.
    (terms({"matchExpressions": [expr("zone", "In", "a")]},
           {"matchExpressions": [expr("gpu", "Exists")]}), node(gpu="1"), True),
    (terms({"matchFields": [expr("metadata.name", "In", "node-1")]}), node("node-1"), True),
    (terms({"matchFields": [expr("metadata.name", "In", "node-1")]}), node("node-2"), False),
    (terms({"matchFields": [expr("metadata.name", "NotIn", "node-1")]}), node("node-2"), True),
    # Labels and fields of one term are ANDed.
    (terms({"matchExpressions": [expr("zone", "In", "a")],
            "matchFields": [expr("metadata.name", "In", "node-1")]}), node("node-1"), False),
    # Fields are not checked for a node without a name.
    (terms({"matchFields": [expr("metadata.name", "In", "node-1")]}), node(""), True),
    # Another field reads as "".
    (terms({"matchFields": [expr("spec.podCIDR", "In", "")]}), node(), True),
])
def test_node_selector_matches(selector: dict[str, Any], n: dict[str, Any], want: bool) -> None:
    assert NodeSelector.parse(selector).matches_node(n) is want


@pytest.mark.parametrize(("selector", "message"), [
    (terms({"matchExpressions": [expr("zone", "Foo", "a")]}),
     'nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: "Foo": '
     'supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"'),
    (terms({"matchExpressions": [expr("zone", "In")]}),
     "nodeSelectorTerms[0].matchExpressions[0]: operator In on 'zone' needs at least one"),
    (terms({"matchExpressions": [expr("zone", "Exists", "a")]}), "takes no values"),
    (terms({"matchExpressions": [expr("cores", "Gt", "1", "2")]}),
     "for 'Gt', 'Lt' operators, exactly one value is required"),
    (terms({"matchExpressions": [expr("cores", "Gt", "eight")]}),
     "nodeSelectorTerms[0].matchExpressions[0].values[0]: for 'Gt', 'Lt' operators, the value "
     "must be an integer"),
    (terms({"matchExpressions": [expr("bad key!", "Exists")]}), "bad key!"),
    (terms({}, {"matchFields": [expr("metadata.name", "Exists")]}),
     'nodeSelectorTerms[1].matchFields[0].operator: Unsupported value: "Exists": '
     'supported values: "In", "NotIn"'),
    (terms({"matchFields": [expr("metadata.name", "In", "a", "b")]}),
     "nodeSelectorTerms[0].matchFields[0].values: must have one element"),
    (terms({"matchExpressions": ["zone"]}), "matchExpressions[0]: must be an object"),
])
def test_strict_parse_rejects_bad_requirements(selector: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidSelectorError, match=re.escape(message)):
        NodeSelector.parse(selector)


def test_strict_parse_names_every_error() -> None:
    with pytest.raises(InvalidSelectorError) as err:
        NodeSelector.parse(terms({"matchExpressions": [expr("a", "Foo")]},
                                 {"matchExpressions": [expr("b", "In")]}))
    assert "nodeSelectorTerms[0]" in str(err.value) and "nodeSelectorTerms[1]" in str(err.value)


def test_lazy_parse_lets_valid_terms_match() -> None:
    selector = terms({"matchExpressions": [expr("zone", "Foo", "a")]},
                     {"matchExpressions": [expr("zone", "In", "b")]})
    lazy = NodeSelector.parse(selector, lazy=True)
    assert lazy.matches_node(node(zone="b"))
    assert not lazy.matches_node(node(zone="a"))


def test_parse_int64_follows_go_parse_int() -> None:
    assert parse_int64("42") == 42
    assert parse_int64("+7") == 7
    assert parse_int64("-7") == -7
    assert parse_int64(str(2**63 - 1)) == 2**63 - 1
    for bad in ("", " 1", "1_000", "0x10", "1.5", str(2**63), "٣"):
        assert parse_int64(bad) is None, bad


@pytest.mark.parametrize(("selector", "labels", "want"), [
    (None, {"a": "1"}, True),
    ({}, None, True),
    ({"a": "1"}, {"a": "1", "b": "2"}, True),
    ({"a": "1"}, {"a": "2"}, False),
    ({"a": ""}, {}, False),  # an empty value still needs the key
    ({"a": ""}, {"a": ""}, True),
    ({"a": "1", "b": "2"}, {"a": "1"}, False),
])
def test_match_node_selector(selector: dict[str, str] | None, labels: dict[str, str] | None,
                             want: bool) -> None:
    assert match_node_selector(selector, labels) is want


def pod(node_selector: dict[str, str] | None = None,
        required: dict[str, Any] | None = None,
        preferred: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    affinity: dict[str, Any] = {}
    if required is not None:
        affinity["requiredDuringSchedulingIgnoredDuringExecution"] = required
    if preferred is not None:
        affinity["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
    spec: dict[str, Any] = {"affinity": {"nodeAffinity": affinity}}
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    return {"metadata": {"name": "p"}, "spec": spec}


def test_required_node_affinity_needs_selector_and_affinity() -> None:
    required = RequiredNodeAffinity.from_pod(
        pod({"disk": "ssd"}, terms({"matchExpressions": [expr("zone", "In", "a")]})))
    assert required.matches_node(node(disk="ssd", zone="a"))
    assert not required.matches_node(node(disk="hdd", zone="a"))
    assert not required.matches_node(node(disk="ssd", zone="b"))
    assert RequiredNodeAffinity.from_pod(pod()).matches_node(node())
    # Equal affinities are equal keys, whatever the map order.
    assert RequiredNodeAffinity.from_pod(pod({"a": "1", "b": "2"})) == \
        RequiredNodeAffinity.from_pod(pod({"b": "2", "a": "1"}))


def test_required_node_affinity_ignores_terms_that_do_not_parse() -> None:
    required = RequiredNodeAffinity.from_pod(pod(required=terms(
        {"matchExpressions": [expr("zone", "Foo")]},
        {"matchExpressions": [expr("zone", "Exists")]})))
    assert required.matches_node(node(zone="x"))
    assert not required.matches_node(node())


def preferred(weight: int, *exprs: dict[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "preference": {"matchExpressions": list(exprs)}}


def test_preferred_terms_sum_the_weights_of_matching_terms() -> None:
    prefs = PreferredSchedulingTerms.parse([
        preferred(5, expr("zone", "In", "a")),
        preferred(3, expr("gpu", "Exists")),
        preferred(0, expr("zone", "Exists")),  # weight 0: dropped
        {"weight": 7, "preference": {}},  # empty: dropped
        {"weight": 2, "preference": {"matchFields": [expr("metadata.name", "In", "n2")]}},
    ])
    assert len(prefs.terms) == 3
    assert prefs.score_node(node("n1", zone="a", gpu="1")) == 8
    assert prefs.score_node(node("n2", zone="b")) == 2
    assert prefs.score_node(node("n1")) == 0


def test_preferred_terms_are_parsed_strictly() -> None:
    with pytest.raises(InvalidSelectorError, match=r"^\[1\]\.matchExpressions\[0\]"):
        PreferredSchedulingTerms.parse([preferred(1, expr("a", "Exists")),
                                        preferred(1, expr("a", "In"))])


def test_preferred_node_affinity_of_a_pod() -> None:
    assert preferred_node_affinity(pod()) is None
    assert preferred_node_affinity(pod(preferred=[])) == PreferredSchedulingTerms(())
    got = preferred_node_affinity(pod(preferred=[preferred(4, expr("zone", "In", "a"))]))
    assert got is not None and got.score_node(node(zone="a")) == 4
