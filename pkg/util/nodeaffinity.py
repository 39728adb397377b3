"""Node selectors, node affinity and taint tolerations, matched against parsed nodes.

Corresponds to ``k8s.io/component-helpers/scheduling/corev1`` (``nodeaffinity``: NodeSelector,
LazyErrorNodeSelector, PreferredSchedulingTerms, RequiredNodeAffinity; ``helpers.go``:
FindMatchingUntoleratedTaint, TolerationsTolerateTaint), ``k8s.io/api/core/v1``
``Toleration.ToleratesTaint`` and the ``Gt``/``Lt`` rules of apimachinery's ``labels``. The
scheduler's NodeAffinity and TaintToleration plugins, the descheduler and the manager share it.

Pods, nodes, taints and tolerations are the parsed JSON dicts the informers deliver.

Semantics, as upstream:

* A toleration with an empty ``effect`` covers every effect, an empty ``key`` with
  ``Exists`` every key; an empty ``operator`` means ``Equal``; an unknown one tolerates nothing.
* A node selector's terms are ORed, the requirements of a term ANDed; a term with neither
  ``matchExpressions`` nor ``matchFields`` matches nothing, and so does a selector without
  terms. ``matchFields`` are ignored for a node without a name.
* ``Gt``/``Lt`` compare the label's value as a base-10 int64; a missing or non-integer label
  does not match.
* A pod's required affinity is parsed lazily: a term that does not parse matches nothing and
  the other terms still count (the API server validates pods; this keeps old objects
  schedulable). Selectors from configuration are parsed strictly (InvalidSelectorError).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pkg.util.labels import (
    DOES_NOT_EXIST,
    EXISTS,
    IN,
    NOT_IN,
    InvalidSelectorError,
    Requirement,
    parse_selector,
)

# Taints and tolerations ---------------------------------------------------------------------

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"
# The effects that keep a pod off a node (upstream DoNotScheduleTaintsFilterFunc).
DO_NOT_SCHEDULE_EFFECTS = frozenset({NO_SCHEDULE, NO_EXECUTE})

TOLERATION_OP_EQUAL = "Equal"
TOLERATION_OP_EXISTS = "Exists"


def toleration_tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Whether one toleration tolerates ``taint`` (``Toleration.ToleratesTaint``)."""
    effect = toleration.get("effect") or ""
    if effect and effect != (taint.get("effect") or ""):
        return False
    key = toleration.get("key") or ""
    if key and key != (taint.get("key") or ""):
        return False
    operator = toleration.get("operator") or TOLERATION_OP_EQUAL
    if operator == TOLERATION_OP_EQUAL:
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return operator == TOLERATION_OP_EXISTS


def tolerates(tolerations: Iterable[Mapping[str, Any]] | None, taint: Mapping[str, Any]) -> bool:
    """Whether any of ``tolerations`` tolerates ``taint`` (``TolerationsTolerateTaint``)."""
    return any(toleration_tolerates(t, taint) for t in tolerations or ())


def find_untolerated_taint(taints: Iterable[Mapping[str, Any]] | None,
                           tolerations: Iterable[Mapping[str, Any]] | None,
                           effects: Collection[str] | None = None) -> Mapping[str, Any] | None:
    """The first taint with one of ``effects`` (None = any) that no toleration tolerates.

    Upstream ``FindMatchingUntoleratedTaint``; the scheduler passes DO_NOT_SCHEDULE_EFFECTS.
    """
    tolerations = tuple(tolerations or ())
    for taint in taints or ():
        if effects is not None and taint.get("effect") not in effects:
            continue
        if not tolerates(tolerations, taint):
            return taint
    return None


# Node selectors -----------------------------------------------------------------------------

GT = "Gt"
LT = "Lt"
NODE_SELECTOR_OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT)
FIELD_SELECTOR_OPERATORS = (IN, NOT_IN)
# The only node field a selector can name (metav1.ObjectNameField).
OBJECT_NAME_FIELD = "metadata.name"

_INT64 = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def parse_int64(value: Any) -> int | None:
    """``strconv.ParseInt(value, 10, 64)``: the integer, or None where Go fails."""
    if not isinstance(value, str) or not _INT64.fullmatch(value):
        return None
    n = int(value)
    return n if _INT64_MIN <= n <= _INT64_MAX else None


@dataclass(frozen=True, slots=True)
class NumericRequirement:
    """``key Gt value`` or ``key Lt value`` on a node label."""

    key: str
    operator: str
    value: int

    def matches(self, labels: Mapping[str, str]) -> bool:
        return self.accepts(labels.get(self.key))

    def accepts(self, label_value: str | None) -> bool:
        """Whether a node whose label has this value (None: absent) matches."""
        n = parse_int64(label_value)
        if n is None:
            return False
        return n > self.value if self.operator == GT else n < self.value


# In/NotIn/Exists/DoesNotExist reuse the label selector's requirement.
LabelRequirement = Requirement | NumericRequirement


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """``metadata.name In|NotIn [value]``; any other field reads as "" (fields.Set.Get)."""

    key: str
    operator: str
    value: str

    def matches(self, node_name: str) -> bool:
        actual = node_name if self.key == OBJECT_NAME_FIELD else ""
        return (actual == self.value) == (self.operator == IN)


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """A parsed ``NodeSelectorTerm``: its requirements are ANDed.

    ``labels``/``fields`` are None when the term has no requirement of that kind. A term with
    ``errors`` did not parse and matches nothing.
    """

    labels: tuple[LabelRequirement, ...] | None = None
    fields: tuple[FieldRequirement, ...] | None = None
    errors: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        if self.errors:
            return False
        if self.labels is not None and not all(r.matches(labels) for r in self.labels):
            return False
        # Upstream checks fields only when the node has some (a name).
        if self.fields is not None and node_name:
            return all(r.matches(node_name) for r in self.fields)
        return True


def is_empty_term(term: Mapping[str, Any]) -> bool:
    return not term.get("matchExpressions") and not term.get("matchFields")


def _unsupported(path: str, operator: Any, supported: Sequence[str]) -> str:
    # field.NotSupported's wording.
    listed = ", ".join(f'"{s}"' for s in supported)
    return f'{path}.operator: Unsupported value: "{operator}": supported values: {listed}'


def _label_requirement(expr: Mapping[str, Any], path: str) -> LabelRequirement:
    operator = expr.get("operator")
    if operator not in NODE_SELECTOR_OPERATORS:
        raise InvalidSelectorError(_unsupported(path, operator, NODE_SELECTOR_OPERATORS))
    try:
        if operator not in (GT, LT):
            (req,) = parse_selector({"matchExpressions": [expr]}).requirements or ()
            return req
        key, values = expr.get("key"), expr.get("values") or []
        if not isinstance(values, list) or len(values) != 1:
            raise InvalidSelectorError(
                "for 'Gt', 'Lt' operators, exactly one value is required")
        # Key and value must still be valid label syntax, as labels.NewRequirement checks.
        parse_selector({"matchLabels": {key: values[0]}})
    except InvalidSelectorError as err:
        raise InvalidSelectorError(f"{path}: {err}") from None
    bound = parse_int64(values[0])
    if bound is None:
        raise InvalidSelectorError(
            f"{path}.values[0]: for 'Gt', 'Lt' operators, the value must be an integer")
    assert isinstance(key, str)  # parse_selector accepted it as a label key
    return NumericRequirement(key, operator, bound)


def _field_requirement(expr: Mapping[str, Any], path: str) -> FieldRequirement:
    operator = expr.get("operator")
    if operator not in FIELD_SELECTOR_OPERATORS:
        raise InvalidSelectorError(_unsupported(path, operator, FIELD_SELECTOR_OPERATORS))
    values = expr.get("values") or []
    if not isinstance(values, list) or len(values) != 1:
        raise InvalidSelectorError(f"{path}.values: must have one element")
    return FieldRequirement(str(expr.get("key") or ""), operator, str(values[0]))


def _requirements(exprs: Any, path: str, parse: Callable[[Mapping[str, Any], str], Any],
                  errors: list[str]) -> tuple[Any, ...] | None:
    """The parsed requirements of one list (None when it is empty); problems go to errors."""
    if not exprs:
        return None
    reqs = []
    for j, expr in enumerate(exprs):
        try:
            if not isinstance(expr, Mapping):
                raise InvalidSelectorError(f"{path}[{j}]: must be an object")
            reqs.append(parse(expr, f"{path}[{j}]"))
        except InvalidSelectorError as err:
            errors.append(str(err))
    return tuple(reqs)


def parse_term(term: Mapping[str, Any], path: str) -> NodeSelectorTerm:
    """Parse one term, keeping (not raising) its errors (upstream ``newNodeSelectorTerm``);
    ``path`` prefixes the error messages (``nodeSelectorTerms[0]``)."""
    errors: list[str] = []
    labels = _requirements(term.get("matchExpressions"), f"{path}.matchExpressions",
                           _label_requirement, errors)
    fields = _requirements(term.get("matchFields"), f"{path}.matchFields",
                           _field_requirement, errors)
    if errors:
        return NodeSelectorTerm(errors=tuple(errors))
    return NodeSelectorTerm(labels, fields)


def _raise_errors(errors: list[str]) -> None:
    if errors:
        raise InvalidSelectorError(errors[0] if len(errors) == 1
                                   else "[" + ", ".join(errors) + "]")


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """A parsed ``v1.NodeSelector``: its terms are ORed; hashable, so usable as a cache key."""

    terms: tuple[NodeSelectorTerm, ...]

    @classmethod
    def parse(cls, selector: Mapping[str, Any], *, lazy: bool = False) -> NodeSelector:
        """Upstream ``NewNodeSelector`` (raises InvalidSelectorError naming every bad
        requirement) or, with ``lazy``, ``NewLazyErrorNodeSelector`` (bad terms never match)."""
        terms = tuple(parse_term(term, f"nodeSelectorTerms[{i}]")
                      for i, term in enumerate(selector.get("nodeSelectorTerms") or ())
                      if not is_empty_term(term))
        if not lazy:
            _raise_errors([e for t in terms for e in t.errors])
        return cls(terms)

    def matches(self, labels: Mapping[str, str] | None, node_name: str) -> bool:
        present = labels or {}
        return any(t.matches(present, node_name) for t in self.terms)

    def matches_node(self, node: Mapping[str, Any]) -> bool:
        return self.matches(*_labels_and_name(node))


def match_node_selector(node_selector: Mapping[str, str] | None,
                        node_labels: Mapping[str, str] | None) -> bool:
    """Whether the labels carry every ``spec.nodeSelector`` pair (``SelectorFromSet``)."""
    labels = node_labels or {}
    return all(k in labels and labels[k] == v for k, v in (node_selector or {}).items())


def _labels_and_name(node: Mapping[str, Any]) -> tuple[Mapping[str, str], str]:
    meta = node.get("metadata") or {}
    return meta.get("labels") or {}, meta.get("name") or ""


def _node_affinity(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = pod.get("spec") or {}
    return (spec.get("affinity") or {}).get("nodeAffinity") or {}


@dataclass(frozen=True, slots=True)
class RequiredNodeAffinity:
    """A pod's ``spec.nodeSelector`` and required node affinity, both of which must hold
    (upstream ``RequiredNodeAffinity``); hashable, so usable as a cache key."""

    node_selector: tuple[tuple[str, str], ...] = ()
    affinity: NodeSelector | None = None

    @classmethod
    def from_pod(cls, pod: Mapping[str, Any]) -> RequiredNodeAffinity:
        """Upstream ``GetRequiredNodeAffinity``: the affinity is parsed lazily."""
        selector = (pod.get("spec") or {}).get("nodeSelector") or {}
        required = _node_affinity(pod).get("requiredDuringSchedulingIgnoredDuringExecution")
        return cls(tuple(sorted(selector.items())),
                   None if required is None else NodeSelector.parse(required, lazy=True))

    def matches(self, labels: Mapping[str, str] | None, node_name: str) -> bool:
        present = labels or {}
        if not all(k in present and present[k] == v for k, v in self.node_selector):
            return False
        return self.affinity is None or self.affinity.matches(present, node_name)

    def matches_node(self, node: Mapping[str, Any]) -> bool:
        return self.matches(*_labels_and_name(node))


@dataclass(frozen=True, slots=True)
class PreferredSchedulingTerms:
    """Parsed ``[]PreferredSchedulingTerm``: (weight, term) pairs; hashable."""

    terms: tuple[tuple[int, NodeSelectorTerm], ...]

    @classmethod
    def parse(cls, terms: Sequence[Mapping[str, Any]]) -> PreferredSchedulingTerms:
        """Upstream ``NewPreferredSchedulingTerms``: weight-0 and empty terms are dropped;
        raises InvalidSelectorError naming every bad requirement."""
        parsed: list[tuple[int, NodeSelectorTerm]] = []
        errors: list[str] = []
        for i, term in enumerate(terms):
            weight = term.get("weight") or 0
            preference = term.get("preference") or {}
            if weight == 0 or is_empty_term(preference):
                continue
            t = parse_term(preference, f"[{i}]")
            errors.extend(t.errors)
            parsed.append((int(weight), t))
        _raise_errors(errors)
        return cls(tuple(parsed))

    def score(self, labels: Mapping[str, str] | None, node_name: str) -> int:
        """The summed weights of the terms the node matches."""
        present = labels or {}
        return sum(w for w, t in self.terms if t.matches(present, node_name))

    def score_node(self, node: Mapping[str, Any]) -> int:
        return self.score(*_labels_and_name(node))


def preferred_node_affinity(pod: Mapping[str, Any]) -> PreferredSchedulingTerms | None:
    """The pod's parsed preferred node affinity, None when it has none; raises
    InvalidSelectorError for a term that does not parse."""
    terms = _node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution")
    return None if terms is None else PreferredSchedulingTerms.parse(terms)


__all__ = [
    "DO_NOT_SCHEDULE_EFFECTS", "FIELD_SELECTOR_OPERATORS", "GT", "LT", "NODE_SELECTOR_OPERATORS",
    "NO_EXECUTE", "NO_SCHEDULE", "OBJECT_NAME_FIELD", "PREFER_NO_SCHEDULE",
    "TOLERATION_OP_EQUAL", "TOLERATION_OP_EXISTS", "FieldRequirement", "InvalidSelectorError",
    "LabelRequirement", "NodeSelector", "NodeSelectorTerm", "NumericRequirement",
    "PreferredSchedulingTerms", "RequiredNodeAffinity", "find_untolerated_taint",
    "is_empty_term", "match_node_selector", "parse_int64", "parse_term",
    "preferred_node_affinity", "tolerates", "toleration_tolerates",
]
