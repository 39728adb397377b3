"""Kubernetes field errors and the name, label and label-selector rules, with Kubernetes' own
messages.

Corresponds to apimachinery ``pkg/util/validation/field`` (``field.Error``: ``Invalid``,
``NotSupported``, ``Required``, ``Forbidden``, ``NotFound``; ``ErrorList.ToAggregate``),
``pkg/util/validation`` (``IsQualifiedName``, ``IsValidLabelValue``, ``IsDNS1123Subdomain``),
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

from pkg.util.labels import DOES_NOT_EXIST, EXISTS, IN, NOT_IN, OPERATORS

# Parsed JSON as a field may hold it.
JSONValue: TypeAlias = (None | bool | int | float | str | Sequence["JSONValue"]
                        | Mapping[str, "JSONValue"])

_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = "(" + _QUALIFIED_NAME_FMT + ")?"
_DNS1123_SUBDOMAIN_FMT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_QUALIFIED_NAME = re.compile(f"^{_QUALIFIED_NAME_FMT}$")
_LABEL_VALUE = re.compile(f"^{_LABEL_VALUE_FMT}$")
_DNS1123_SUBDOMAIN = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}$")
_QUALIFIED_NAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start "
                       "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  "
                       f"or '123-abc', regex used for validation is '{_QUALIFIED_NAME_FMT}')")
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    f"used for validation is '{_DNS1123_SUBDOMAIN_FMT}')")
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    f"'my_value',  or '12345', regex used for validation is '{_LABEL_VALUE_FMT}')")


def go_value(value: JSONValue) -> str:
    """A value as ``field.Error`` prints it: strings quoted, numbers bare, the rest as JSON."""
    if isinstance(value, str):
        return orjson.dumps(value).decode()
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


def qualified_name_problems(value: str) -> list[str]:
    """``IsQualifiedName``: why ``value`` is not ``[DNS-subdomain prefix/]name``."""
    parts = value.split("/")
    if len(parts) > 2:
        return [f"a qualified name {_QUALIFIED_NAME_MSG} with an optional DNS subdomain prefix "
                "and '/' (e.g. 'example.com/MyName')"]
    problems: list[str] = []
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            problems.extend(f"prefix part {p}" for p in dns1123_subdomain_problems(prefix))
    name = parts[-1]
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > 63:
        problems.append("name part must be no more than 63 characters")
    if name and not _QUALIFIED_NAME.match(name):
        problems.append(f"name part {_QUALIFIED_NAME_MSG}")
    return problems


def dns1123_subdomain_problems(value: str) -> list[str]:
    """``IsDNS1123Subdomain``."""
    problems = []
    if len(value) > 253:
        problems.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN.match(value):
        problems.append(_DNS1123_SUBDOMAIN_MSG)
    return problems


def label_value_problems(value: str) -> list[str]:
    """``IsValidLabelValue``."""
    problems = []
    if len(value) > 63:
        problems.append("must be no more than 63 characters")
    if not _LABEL_VALUE.match(value):
        problems.append(_LABEL_VALUE_MSG)
    return problems


def _type_error(path: str, value: JSONValue, want: str) -> FieldError:
    return invalid(path, value, f"must be {want}")


def validate_label_name(path: str, key: JSONValue) -> list[FieldError]:
    """``ValidateLabelName``."""
    if not isinstance(key, str):
        return [_type_error(path, key, "a string")]
    return [invalid(path, key, p) for p in qualified_name_problems(key)]


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
            errs.extend(invalid(path, value, p) for p in label_value_problems(value))
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
                        for p in label_value_problems(value))
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
    "FieldError",
    "JSONValue",
    "aggregate",
    "dns1123_subdomain_problems",
    "forbidden",
    "go_value",
    "invalid",
    "invalid_message",
    "label_value_problems",
    "not_found",
    "not_supported",
    "qualified_name_problems",
    "required",
    "validate_label_name",
    "validate_label_selector",
    "validate_labels",
]
