"""Field errors read as Kubernetes writes them; names, labels and selectors are checked by
Kubernetes' rules."""

from __future__ import annotations

from pkg.util.validation import (
    aggregate,
    invalid,
    invalid_message,
    label_value_problems,
    not_supported,
    qualified_name_problems,
    validate_label_selector,
)


def test_field_errors_print_like_kubernetes() -> None:
    one = not_supported("spec.qosClass", "x", ("BE", "LS"))
    assert str(one) == 'spec.qosClass: Unsupported value: "x": supported values: "BE", "LS"'
    two = invalid("spec.probability", 101, "must be between 0 and 100")
    assert aggregate([one]) == str(one)
    assert aggregate([one, two]) == f"[{one}, {two}]"
    assert invalid_message("Pod", "web", [two]) == \
        'Pod "web" is invalid: spec.probability: Invalid value: 101: must be between 0 and 100'


def test_qualified_names() -> None:
    assert qualified_name_problems("koordinator.sh/qosClass") == []
    assert qualified_name_problems("a/b/c")[0].startswith("a qualified name must consist of")
    assert qualified_name_problems("/x") == ["prefix part must be non-empty"]
    assert qualified_name_problems("Example.com/x")[0].startswith(
        "prefix part a lowercase RFC 1123 subdomain")
    assert qualified_name_problems("x" * 64) == [
        "name part must be no more than 63 characters"]


def test_label_values() -> None:
    assert label_value_problems("") == []
    assert label_value_problems("v1.2_a-b") == []
    assert label_value_problems("x" * 64) == ["must be no more than 63 characters"]
    assert label_value_problems("-x")[0].startswith("a valid label must be an empty string")


def test_selectors_of_any_shape_get_field_errors() -> None:
    assert validate_label_selector("s", None) == []
    assert validate_label_selector("s", {}) == []
    assert [str(e) for e in validate_label_selector("s", "app=web")] == [
        's: Invalid value: "app=web": must be a label selector object']
    assert [str(e) for e in validate_label_selector("s", {"matchExpressions": [
        {"key": "a", "operator": "In", "values": "x"}, 3]})] == [
        's.matchExpressions[0].values: Invalid value: "x": must be a list of strings',
        "s.matchExpressions[0].values: Required value: must be specified when `operator` is "
        "'In' or 'NotIn'",
        "s.matchExpressions[1]: Invalid value: 3: must be an object with key, operator and "
        "values"]
