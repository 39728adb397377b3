"""Label and field selectors: parsing the query-string forms and matching objects.

Corresponds to upstream ``k8s.io/apimachinery/pkg/labels`` (selector grammar: ``=``, ``==``,
``!=``, ``in``, ``notin``, ``exists``, ``!key``, ``>``, ``<``), ``pkg/fields`` (``=``, ``==``,
``!=``) and ``metav1.LabelSelectorAsSelector`` for selectors embedded in objects.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from .errors import bad_request

# A requirement: (key, operator, values). Operators: "in", "notin", "exists", "!", "gt", "lt".
Requirement = tuple[str, str, tuple[str, ...]]

_KEY_RE = re.compile(r"[A-Za-z0-9_./-]+")


class LabelSelector:
    """A parsed label selector; an empty one matches everything."""

    __slots__ = ("requirements", "_nothing")

    def __init__(self, requirements: list[Requirement], nothing: bool = False) -> None:
        self.requirements = requirements
        self._nothing = nothing

    @property
    def empty(self) -> bool:
        return not self.requirements and not self._nothing

    def equality_value(self, key: str) -> str | None:
        """The single value ``key`` must equal, if the selector pins one."""
        for k, op, vals in self.requirements:
            if k == key and op == "in" and len(vals) == 1:
                return vals[0]
        return None

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self._nothing:
            return False
        if not self.requirements:
            return True
        labels = labels or {}
        for key, op, vals in self.requirements:
            if op == "in":
                if key not in labels or labels[key] not in vals:
                    return False
            elif op == "notin":
                if key in labels and labels[key] in vals:
                    return False
            elif op == "exists":
                if key not in labels:
                    return False
            elif op == "!":
                if key in labels:
                    return False
            else:  # gt / lt
                if key not in labels:
                    return False
                try:
                    have = int(labels[key])
                except ValueError:
                    return False
                want = int(vals[0])
                if (op == "gt" and not have > want) or (op == "lt" and not have < want):
                    return False
        return True


EVERYTHING = LabelSelector([])
NOTHING = LabelSelector([], nothing=True)


def _split_top(s: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def _check_key(key: str, whole: str) -> str:
    if not key or not _KEY_RE.fullmatch(key):
        raise bad_request(f"unable to parse requirement: invalid label key {key!r} in {whole!r}")
    return key


_SET_RE = re.compile(r"^\s*([^\s!=<>()]+)\s+(in|notin)\s*\((.*)\)\s*$")


def parse_label_selector(text: str | None) -> LabelSelector:
    """Parse ``labelSelector=`` query values; raises 400 BadRequest on a syntax error."""
    if not text or not text.strip():
        return EVERYTHING
    reqs: list[Requirement] = []
    for part in _split_top(text):
        p = part.strip()
        if not p:
            raise bad_request(
                f"unable to parse requirement: found '', expected: identifier in {text!r}"
            )
        m = _SET_RE.match(p)
        if m:
            key = _check_key(m.group(1), text)
            vals = tuple(v.strip() for v in m.group(3).split(",") if v.strip() != "")
            reqs.append((key, m.group(2), vals))
            continue
        for sym, op in (
            ("!=", "notin"),
            ("==", "in"),
            ("=", "in"),
            (">", "gt"),
            ("<", "lt"),
        ):
            if sym in p:
                key, _, val = p.partition(sym)
                key = _check_key(key.strip(), text)
                val = val.strip()
                if op in ("gt", "lt"):
                    try:
                        int(val)
                    except ValueError:
                        raise bad_request(
                            f"unable to parse requirement: for 'Gt', 'Lt' operators, the value "
                            f"must be an integer in {text!r}"
                        ) from None
                reqs.append((key, op, (val,)))
                break
        else:
            if p.startswith("!"):
                reqs.append((_check_key(p[1:].strip(), text), "!", ()))
            else:
                reqs.append((_check_key(p, text), "exists", ()))
    return LabelSelector(reqs)


def selector_from_object(sel: Mapping[str, Any] | None) -> LabelSelector:
    """metav1.LabelSelector (matchLabels/matchExpressions) to a selector.

    A nil selector matches nothing; an empty one matches everything (as upstream).
    """
    if sel is None:
        return NOTHING
    reqs: list[Requirement] = []
    for k, v in (sel.get("matchLabels") or {}).items():
        reqs.append((k, "in", (str(v),)))
    for expr in sel.get("matchExpressions") or []:
        op = expr.get("operator")
        vals = tuple(expr.get("values") or ())
        key = expr.get("key", "")
        mapped = {
            "In": "in",
            "NotIn": "notin",
            "Exists": "exists",
            "DoesNotExist": "!",
        }.get(op)
        if mapped is None:
            raise bad_request(f"{op!r} is not a valid label selector operator")
        reqs.append((key, mapped, vals))
    return LabelSelector(reqs)


# -- field selectors --------------------------------------------------------------------------

FieldRequirement = tuple[str, bool, str]  # (field, equal?, value)


class FieldSelector:
    """A parsed field selector over a fixed set of supported fields."""

    __slots__ = ("requirements",)

    def __init__(self, requirements: list[FieldRequirement]) -> None:
        self.requirements = requirements

    @property
    def empty(self) -> bool:
        return not self.requirements

    def equality_value(self, field: str) -> str | None:
        for f, eq, v in self.requirements:
            if f == field and eq:
                return v
        return None

    def matches(self, obj: Mapping[str, Any], getters: Mapping[str, Callable[[Any], str]]) -> bool:
        for f, eq, v in self.requirements:
            if (getters[f](obj) == v) != eq:
                return False
        return True


def _unescape(v: str) -> str:
    return re.sub(r"\\(.)", r"\1", v)


def parse_field_selector(
    text: str | None, supported: Mapping[str, Callable[[Any], str]], what: str
) -> FieldSelector:
    """Parse ``fieldSelector=``; unknown fields answer 400 like kube-apiserver."""
    if not text or not text.strip():
        return FieldSelector([])
    reqs: list[FieldRequirement] = []
    for part in re.split(r"(?<!\\),", text):
        p = part.strip()
        if not p:
            continue
        m = re.match(r"^([^=!]+?)\s*(!=|==|=)\s*(.*)$", p)
        if not m:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{p}'")
        field, op, val = m.group(1).strip(), m.group(2), _unescape(m.group(3).strip())
        if field not in supported:
            raise bad_request(
                f'"{field}" is not a known field selector: only "'
                + '", "'.join(sorted(supported))
                + f'" (for {what})'
            )
        reqs.append((field, op != "!=", val))
    return FieldSelector(reqs)


def path_getter(path: str) -> Callable[[Any], str]:
    """A getter for a dotted path whose value is rendered as kube renders field-selector values."""
    keys = path.split(".")

    def get(obj: Any) -> str:
        cur = obj
        for k in keys:
            if not isinstance(cur, dict):
                return ""
            cur = cur.get(k)
            if cur is None:
                return ""
        if isinstance(cur, bool):
            return "true" if cur else "false"
        return str(cur)

    return get
