"""Field errors read as Kubernetes writes them; names, labels and selectors are checked by
Kubernetes' rules."""

from __future__ import annotations

from pkg.util.validation import (
    aggregate,
    go_value,
    invalid,
    invalid_message,
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
    not_supported,
    validate_label_selector,
)

QNAME_REGEX_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and "
                   "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
                   "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?"
                   "[A-Za-z0-9]')")


def test_field_errors_print_like_kubernetes() -> None:
    one = not_supported("spec.qosClass", "x", ("BE", "LS"))
    assert str(one) == 'spec.qosClass: Unsupported value: "x": supported values: "BE", "LS"'
    two = invalid("spec.probability", 101, "must be between 0 and 100")
    assert aggregate([one]) == str(one)
    assert aggregate([one, two]) == f"[{one}, {two}]"
    assert invalid_message("Pod", "web", [two]) == \
        'Pod "web" is invalid: spec.probability: Invalid value: 101: must be between 0 and 100'


def test_qualified_names() -> None:
    assert is_qualified_name("koordinator.sh/qosClass") == []
    assert is_qualified_name("a/b/c")[0].startswith("a qualified name must consist of")
    assert is_qualified_name("/x") == ["prefix part must be non-empty"]
    assert is_qualified_name("Example.com/x")[0].startswith(
        "prefix part a lowercase RFC 1123 subdomain")
    assert is_qualified_name("x" * 64) == [
        "name part must be no more than 63 characters"]
    # As IsQualifiedName: an empty name part also fails the pattern.
    assert is_qualified_name("koordinator.sh/") == [
        "name part must be non-empty", f"name part {QNAME_REGEX_MSG}"]


def test_a_trailing_newline_is_not_part_of_a_valid_name() -> None:
    """Go's '$' ends the text; Python's also matches before a final newline."""
    assert is_qualified_name("app\n") == [f"name part {QNAME_REGEX_MSG}"]
    assert is_valid_label_value("web\n")[0].startswith("a valid label must be")
    assert is_dns1123_subdomain("example.com\n")[0].startswith("a lowercase RFC 1123 subdomain")
    assert is_dns1123_label("default\n")[0].startswith("a lowercase RFC 1123 label")
    assert is_dns1035_label("svc\n")[0].startswith("a DNS-1035 label")


def test_lengths_count_utf8_bytes_as_go_does() -> None:
    assert is_valid_label_value("é" * 32)[0] == "must be no more than 63 characters"
    assert is_dns1123_subdomain("a" * 253) == []
    assert is_dns1123_subdomain("a" * 254)[0] == "must be no more than 253 characters"


def test_dns_labels() -> None:
    assert is_dns1123_label("default") == is_dns1035_label("my-svc") == []
    assert is_dns1123_label("a.b") == ["must not contain dots"]
    assert is_dns1123_label("-a") == [
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
        "and must start and end with an alphanumeric character (e.g. 'my-name',  or "
        "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"]
    assert is_dns1035_label("1abc") == [
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
        "with an alphabetic character, and end with an alphanumeric character (e.g. "
        "'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"]


def test_strings_are_quoted_as_gos_percent_q() -> None:
    assert go_value('a "b"\\') == '"a \\"b\\"\\\\"'
    assert go_value("é\n\t\x01\x7f\u200b") == '"é\\n\\t\\x01\\x7f\\u200b"'


def test_label_values() -> None:
    assert is_valid_label_value("") == []
    assert is_valid_label_value("v1.2_a-b") == []
    assert is_valid_label_value("x" * 64) == ["must be no more than 63 characters"]
    assert is_valid_label_value("-x")[0].startswith("a valid label must be an empty string")


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
