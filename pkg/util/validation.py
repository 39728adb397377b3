"""Kubernetes field errors and the name, label and label-selector rules, with Kubernetes' own
messages.

Corresponds to apimachinery ``pkg/util/validation/field`` (``field.Error``: ``Invalid``,
``NotSupported``, ``Required``, ``Forbidden``, ``NotFound``; ``ErrorList.ToAggregate``),
``pkg/util/validation`` (``IsQualifiedName``, ``IsValidLabelValue``, ``IsDNS1123Subdomain``,
``IsDNS1123Label``, ``IsDNS1035Label``, ``RegexError``, ``MaxLenError``),
``pkg/apis/meta/v1/validation`` (``ValidateLabels``, ``ValidateLabelSelector``) and
``pkg/api/errors.NewInvalid``'s message. Selectors are validated from parsed JSON, so a stored
object of any shape gets an error naming the field instead of an exception.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeAlias

import orjson

from api.meta import DOES_NOT_EXIST, EXISTS, IN, NOT_IN, OPERATORS

# Parsed JSON as a field may hold it.
JSONValue: TypeAlias = (None | bool | int | float | str | Sequence["JSONValue"]
                        | Mapping[str, "JSONValue"])

# apimachinery's formats and messages, word for word (``validation.go``).
_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start "
                       "and end with an alphanumeric character")
_QUALIFIED_NAME_EXAMPLES = ("MyName", "my.name", "123-abc")
_LABEL_VALUE_FMT = f"({_QUALIFIED_NAME_FMT})?"
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric "
                    "characters, '-', '_' or '.', and must start and end with an alphanumeric "
                    "character")
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric "
                      "characters or '-', and must start and end with an alphanumeric character")
_DNS1123_SUBDOMAIN_FMT = f"{_DNS1123_LABEL_FMT}(\\.{_DNS1123_LABEL_FMT})*"
_DNS1123_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                          "characters, '-' or '.', and must start and end with an alphanumeric "
                          "character")
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or "
                      "'-', start with an alphabetic character, and end with an alphanumeric "
                      "character")
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024  # TotalAnnotationSizeLimitB, in bytes
# fullmatch, not re.match with '$': Python's '$' also matches before a trailing newline, Go's
# does not.
_QUALIFIED_NAME = re.compile(_QUALIFIED_NAME_FMT)
_LABEL_VALUE = re.compile(_LABEL_VALUE_FMT)
_DNS1123_LABEL = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN = re.compile(_DNS1123_SUBDOMAIN_FMT)
_DNS1035_LABEL = re.compile(_DNS1035_LABEL_FMT)
# strconv.Quote's short escapes; other unprintable characters become \xNN, \uNNNN or \UNNNNNNNN.
_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
               "\t": "\\t", "\v": "\\v", "\\": "\\\\", '"': '\\"'}


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """``RegexError``, including the double space its examples leave before each ``or``."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    listed = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {listed}regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    """``MaxLenError``."""
    return f"must be no more than {length} characters"


def go_len(value: str) -> int:
    """Go's ``len`` of a string: its UTF-8 bytes, which the length limits count."""
    return len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))


def _go_escape(char: str) -> str:
    if char in _GO_ESCAPES:
        return _GO_ESCAPES[char]
    if char.isprintable():
        return char
    code = ord(char)
    if 0xD800 <= code <= 0xDFFF:
        return "\ufffd"  # Go's JSON decoder turns a lone surrogate into U+FFFD
    if code < 0x80:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def go_quote(value: str) -> str:
    """Go's ``%q`` (``strconv.Quote``), as ``field.Error`` prints a string value."""
    if value.isprintable() and '"' not in value and "\\" not in value:
        return f'"{value}"'
    return '"' + "".join(_go_escape(c) for c in value) + '"'


def go_value(value: JSONValue) -> str:
    """A value as ``field.Error`` prints it: strings quoted, numbers bare, the rest as JSON."""
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, bool) or value is None:
        return "null" if value is None else str(value).lower()
    if isinstance(value, int | float):
        return str(value)
    return orjson.dumps(value).decode()


@dataclass(frozen=True, slots=True)
class FieldError:
    """One ``field.Error``: the JSON path of the field and what is wrong with it."""

    path: str
    detail: str

    def __str__(self) -> str:
        return f"{self.path}: {self.detail}"


def invalid(path: str, value: JSONValue, detail: str) -> FieldError:
    return FieldError(path, f"Invalid value: {go_value(value)}: {detail}")


def not_supported(path: str, value: JSONValue, supported: Iterable[str]) -> FieldError:
    listed = ", ".join(go_value(s) for s in supported)
    return FieldError(path, f"Unsupported value: {go_value(value)}: supported values: {listed}")


def required(path: str, detail: str = "") -> FieldError:
    return FieldError(path, f"Required value: {detail}" if detail else "Required value")


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(path, f"Forbidden: {detail}")


def not_found(path: str, value: JSONValue) -> FieldError:
    return FieldError(path, f"Not found: {go_value(value)}")


def aggregate(errors: Sequence[FieldError]) -> str:
    """``ErrorList.ToAggregate().Error()``: one message, or several in brackets."""
    if len(errors) == 1:
        return str(errors[0])
    return "[" + ", ".join(str(e) for e in errors) + "]"


def invalid_message(kind: str, name: str, errors: Sequence[FieldError]) -> str:
    """``errors.NewInvalid``'s message: ``<Kind> "<name>" is invalid: <errors>``."""
    return f"{kind} {go_value(name)} is invalid: {aggregate(errors)}"


def is_qualified_name(value: str) -> list[str]:
    """``IsQualifiedName``: why ``value`` is not ``[DNS-subdomain prefix/]name`` (label and
    annotation keys, finalizers)."""
    parts = value.split("/")
    if len(parts) > 2:
        return ["a qualified name " + regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT,
                                                  *_QUALIFIED_NAME_EXAMPLES)
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    problems: list[str] = []
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            problems.extend(f"prefix part {p}" for p in is_dns1123_subdomain(prefix))
    name = parts[-1]
    if not name:
        problems.append("name part must be non-empty")
    elif go_len(name) > 63:
        problems.append("name part " + max_len_error(63))
    if not _QUALIFIED_NAME.fullmatch(name):
        problems.append("name part " + regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT,
                                                   *_QUALIFIED_NAME_EXAMPLES))
    return problems


def is_valid_label_value(value: str) -> list[str]:
    """``IsValidLabelValue``."""
    problems = []
    if go_len(value) > 63:
        problems.append(max_len_error(63))
    if not _LABEL_VALUE.fullmatch(value):
        problems.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT,
                                    "MyValue", "my_value", "12345"))
    return problems


def is_dns1123_subdomain(value: str) -> list[str]:
    """``IsDNS1123Subdomain``: most object names."""
    problems = []
    if go_len(value) > 253:
        problems.append(max_len_error(253))
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        problems.append(regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT,
                                    "example.com"))
    return problems


def is_dns1123_label(value: str) -> list[str]:
    """``IsDNS1123Label``: namespace names, for one."""
    problems = []
    if go_len(value) > 63:
        problems.append(max_len_error(63))
    if _DNS1123_LABEL.fullmatch(value):
        return problems
    if _DNS1123_SUBDOMAIN.fullmatch(value):
        problems.append("must not contain dots")  # a subdomain of valid length: only the dots
    else:
        problems.append(regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT,
                                    "my-name", "123-abc"))
    return problems


def is_dns1035_label(value: str) -> list[str]:
    """``IsDNS1035Label``: service names, for one."""
    problems = []
    if go_len(value) > 63:
        problems.append(max_len_error(63))
    if not _DNS1035_LABEL.fullmatch(value):
        problems.append(regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return problems


def _type_error(path: str, value: JSONValue, want: str) -> FieldError:
    return invalid(path, value, f"must be {want}")


def validate_label_name(path: str, key: JSONValue) -> list[FieldError]:
    """``ValidateLabelName``."""
    if not isinstance(key, str):
        return [_type_error(path, key, "a string")]
    return [invalid(path, key, p) for p in is_qualified_name(key)]


def validate_labels(path: str, labels: JSONValue) -> list[FieldError]:
    """``ValidateLabels``: every key a qualified name, every value a label value."""
    if labels is None:
        return []
    if not isinstance(labels, Mapping):
        return [_type_error(path, labels, "an object of label keys to values")]
    errs: list[FieldError] = []
    for key, value in labels.items():
        errs.extend(validate_label_name(path, key))
        if not isinstance(value, str):
            errs.append(_type_error(path, value, "a string"))
        else:
            errs.extend(invalid(path, value, p) for p in is_valid_label_value(value))
    return errs


def _validate_requirement(path: str, expr: JSONValue) -> list[FieldError]:
    if not isinstance(expr, Mapping):
        return [_type_error(path, expr, "an object with key, operator and values")]
    errs: list[FieldError] = []
    operator, values = expr.get("operator"), expr.get("values")
    if values is None:
        values = []
    if isinstance(values, str) or not isinstance(values, Sequence):
        errs.append(_type_error(f"{path}.values", values, "a list of strings"))
        values = []
    if operator in (IN, NOT_IN):
        if not values:
            errs.append(required(f"{path}.values",
                                 "must be specified when `operator` is 'In' or 'NotIn'"))
    elif operator in (EXISTS, DOES_NOT_EXIST):
        if values:
            errs.append(forbidden(f"{path}.values", "may not be specified when `operator` is "
                                                    "'Exists' or 'DoesNotExist'"))
    else:
        errs.append(not_supported(f"{path}.operator", operator, OPERATORS))
    errs.extend(validate_label_name(f"{path}.key", expr.get("key")))
    for i, value in enumerate(values):
        if not isinstance(value, str):
            errs.append(_type_error(f"{path}.values[{i}]", value, "a string"))
        else:
            errs.extend(invalid(f"{path}.values[{i}]", value, p)
                        for p in is_valid_label_value(value))
    return errs


def validate_label_selector(path: str, selector: JSONValue) -> list[FieldError]:
    """``ValidateLabelSelector`` (label values in expressions checked too, as Kubernetes does
    for new objects); ``None`` is valid."""
    if selector is None:
        return []
    if not isinstance(selector, Mapping):
        return [_type_error(path, selector, "a label selector object")]
    errs = validate_labels(f"{path}.matchLabels", selector.get("matchLabels"))
    expressions = selector.get("matchExpressions")
    if expressions is None:
        return errs
    if isinstance(expressions, str) or not isinstance(expressions, Sequence):
        return [*errs, _type_error(f"{path}.matchExpressions", expressions, "a list")]
    for i, expr in enumerate(expressions):
        errs.extend(_validate_requirement(f"{path}.matchExpressions[{i}]", expr))
    return errs


__all__ = [
    "TOTAL_ANNOTATION_SIZE_LIMIT",
    "FieldError",
    "JSONValue",
    "aggregate",
    "forbidden",
    "go_len",
    "go_quote",
    "go_value",
    "invalid",
    "invalid_message",
    "is_dns1035_label",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_qualified_name",
    "is_valid_label_value",
    "max_len_error",
    "not_found",
    "not_supported",
    "regex_error",
    "required",
    "validate_label_name",
    "validate_label_selector",
    "validate_labels",
]
