"""Label selectors: does a ``metav1.LabelSelector`` match a set of labels?

Corresponds to apimachinery's ``metav1.LabelSelectorAsSelector``, ``labels.Selector`` and
``labels.Parse`` (the string form, as the descheduler's ``nodeSelector``); upstream calls them
from `pkg/slo-controller`, the scheduler and the descheduler. A selector is given as the
``api.meta.LabelSelector`` model or as parsed JSON (``{"matchLabels": {...},
"matchExpressions": [...]}``), or as a string; labels are a plain ``dict`` such as a Node's
``metadata.labels``.

Semantics, as in Kubernetes: ``None`` matches nothing, an empty selector matches everything,
``matchLabels`` and every expression must all hold. ``In`` needs the key with one of the
values, ``NotIn`` the key absent or with another value, ``Exists``/``DoesNotExist`` the key's
presence or absence. A selector Kubernetes would refuse (unknown operator, ``In`` without
values, ``Exists`` with values, malformed keys or values) raises InvalidSelectorError.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from api.meta import DOES_NOT_EXIST, EXISTS, IN, NOT_IN, OPERATORS, LabelSelector
from pkg.util.validation import is_qualified_name, is_valid_label_value


class InvalidSelectorError(ValueError):
    """A label selector that Kubernetes would not accept."""


def _check_key(key: Any) -> str:
    if not isinstance(key, str) or not key:
        raise InvalidSelectorError(f"label key {key!r} must be a non-empty string")
    if problems := is_qualified_name(key):
        raise InvalidSelectorError(f"label key {key!r}: {'; '.join(problems)}")
    return key


def _check_value(key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidSelectorError(f"value {value!r} for label {key!r} must be a string")
    if problems := is_valid_label_value(value):
        raise InvalidSelectorError(f"value {value!r} for label {key!r}: {'; '.join(problems)}")
    return value


@dataclass(frozen=True, slots=True)
class Requirement:
    """One condition on one label key."""

    key: str
    operator: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator == IN:
            return present and labels[self.key] in self.values
        if self.operator == NOT_IN:
            return not present or labels[self.key] not in self.values
        if self.operator == EXISTS:
            return present
        return not present


@dataclass(frozen=True, slots=True)
class Selector:
    """A parsed, validated selector; ``None`` requirements means it matches nothing."""

    requirements: tuple[Requirement, ...] | None

    @classmethod
    def nothing(cls) -> Selector:
        return cls(None)

    @classmethod
    def everything(cls) -> Selector:
        return cls(())

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.requirements is None:
            return False
        present = labels or {}
        return all(req.matches(present) for req in self.requirements)

    def __str__(self) -> str:
        if self.requirements is None:
            return "<nothing>"
        parts = []
        for req in self.requirements:
            values = ",".join(sorted(req.values))
            parts.append(
                {
                    IN: f"{req.key} in ({values})",
                    NOT_IN: f"{req.key} notin ({values})",
                    EXISTS: req.key,
                    DOES_NOT_EXIST: f"!{req.key}",
                }[req.operator]
            )
        return ",".join(parts)


def _parts(selector: LabelSelector | Mapping[str, Any]) -> tuple[Any, Any]:
    if isinstance(selector, LabelSelector):
        expressions = [
            {"key": e.key, "operator": e.operator, "values": e.values}
            for e in selector.match_expressions or []
        ]
        return selector.match_labels, expressions
    if isinstance(selector, Mapping):
        return selector.get("matchLabels"), selector.get("matchExpressions")
    raise InvalidSelectorError(f"a label selector must be an object, not {selector!r}")


def _requirement(expression: Any) -> Requirement:
    if isinstance(expression, Mapping):
        key, operator, values = (
            expression.get("key"),
            expression.get("operator"),
            expression.get("values"),
        )
    else:
        raise InvalidSelectorError(f"a match expression must be an object, not {expression!r}")
    key = _check_key(key)
    if values is None:
        values = []
    if not isinstance(values, Sequence) or isinstance(values, str):
        raise InvalidSelectorError(f"values of {key!r} must be a list of strings")
    if operator in (IN, NOT_IN):
        if not values:
            raise InvalidSelectorError(f"operator {operator} on {key!r} needs at least one value")
    elif operator in (EXISTS, DOES_NOT_EXIST):
        if values:
            raise InvalidSelectorError(f"operator {operator} on {key!r} takes no values")
    else:
        raise InvalidSelectorError(
            f"{operator!r} is not a valid label selector operator (one of {', '.join(OPERATORS)})"
        )
    return Requirement(key, operator, frozenset(_check_value(key, v) for v in values))


def parse_selector(selector: LabelSelector | Mapping[str, Any] | None) -> Selector:
    """The validated form of a selector (``metav1.LabelSelectorAsSelector``).

    Raises InvalidSelectorError for a selector Kubernetes would refuse.
    """
    if selector is None:
        return Selector.nothing()
    match_labels, expressions = _parts(selector)
    requirements: list[Requirement] = []
    if match_labels is not None:
        if not isinstance(match_labels, Mapping):
            raise InvalidSelectorError("matchLabels must be an object of label → value")
        for key, value in match_labels.items():
            checked = _check_key(key)
            requirements.append(
                Requirement(checked, IN, frozenset((_check_value(checked, value),)))
            )
    if expressions is not None:
        if isinstance(expressions, str | bytes) or not isinstance(expressions, Sequence):
            raise InvalidSelectorError("matchExpressions must be a list")
        requirements.extend(_requirement(e) for e in expressions)
    return Selector(tuple(requirements))


_SET_OPERATORS = {" in ": IN, " notin ": NOT_IN}


def _split_top_level(text: str) -> list[str]:
    """``text`` split at the commas outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _string_requirement(term: str) -> Requirement:
    for token, operator in _SET_OPERATORS.items():
        key, found, rest = term.partition(token)
        if found:
            rest = rest.strip()
            if not (rest.startswith("(") and rest.endswith(")")):
                raise InvalidSelectorError(f"{term!r}: values must be in parentheses")
            inner = rest[1:-1]
            values = [v.strip() for v in inner.split(",")] if inner.strip() else []
            return _requirement({"key": key.strip(), "operator": operator, "values": values})
    for token, operator in (("!=", NOT_IN), ("==", IN), ("=", IN)):
        key, found, value = term.partition(token)
        if found:
            checked = _check_key(key.strip())
            return Requirement(checked, operator, frozenset((_check_value(checked,
                                                                          value.strip()),)))
    if term.startswith("!"):
        return Requirement(_check_key(term[1:].strip()), DOES_NOT_EXIST)
    return Requirement(_check_key(term), EXISTS)


def parse_selector_string(text: str) -> Selector:
    """A selector in the string form (apimachinery ``labels.Parse``): comma-separated
    ``k=v``, ``k==v``, ``k!=v``, ``k``, ``!k``, ``k in (a,b)``, ``k notin (a,b)``; an empty
    string selects everything. Raises InvalidSelectorError for anything else."""
    if not text.strip():
        return Selector.everything()
    return Selector(tuple(_string_requirement(term.strip())
                          for term in _split_top_level(text)))


def selector_matches(
    selector: LabelSelector | Mapping[str, Any] | None, labels: Mapping[str, str] | None
) -> bool:
    """Whether ``labels`` satisfy ``selector``; raises InvalidSelectorError for a bad selector."""
    return parse_selector(selector).matches(labels)


T = TypeVar("T")


def first_match(
    items: Sequence[T], selector_of: Callable[[T], Any], labels: Mapping[str, str] | None
) -> T | None:
    """The first item whose selector matches ``labels``; items with invalid selectors are
    skipped, as upstream's controllers do after logging the error."""
    for item in items:
        try:
            if selector_matches(selector_of(item), labels):
                return item
        except InvalidSelectorError:
            continue
    return None


__all__ = [
    "DOES_NOT_EXIST",
    "EXISTS",
    "IN",
    "NOT_IN",
    "OPERATORS",
    "InvalidSelectorError",
    "Requirement",
    "Selector",
    "first_match",
    "parse_selector",
    "parse_selector_string",
    "selector_matches",
]
