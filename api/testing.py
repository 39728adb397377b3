"""Helpers for tests that compare our JSON output with upstream's documents.

Two normalisations mirror what the API server and Go's decoder do anyway: an explicit ``null``
is the same as an absent field, and a number where we write a string (a quantity such as
``cpu: 1``) is the same as its decimal string.
"""

from __future__ import annotations

from typing import Any


def without_nulls(value: Any) -> Any:
    """``value`` with every ``None`` mapping entry removed, recursively."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


def json_differences(expected: Any, actual: Any, where: str = "") -> list[str]:
    """Paths at which ``actual`` differs from ``expected`` (nulls in ``expected`` count as
    absent; a number in ``expected`` matches its string form in ``actual``)."""
    if where == "":
        expected = without_nulls(expected)
    if isinstance(expected, dict) and isinstance(actual, dict):
        diffs = [f"{where}.{k}: missing" for k in expected.keys() - actual.keys()]
        diffs += [f"{where}.{k}: added" for k in actual.keys() - expected.keys()]
        for key in sorted(expected.keys() & actual.keys()):
            diffs += json_differences(expected[key], actual[key], f"{where}.{key}")
        return diffs
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        return [d for i, (a, b) in enumerate(zip(expected, actual, strict=True))
                for d in json_differences(a, b, f"{where}[{i}]")]
    if (isinstance(expected, int | float) and not isinstance(expected, bool)
            and isinstance(actual, str) and str(expected) == actual):
        return []
    if expected == actual and type(expected) is type(actual):
        return []
    return [f"{where or '.'}: {expected!r} became {actual!r}"]
