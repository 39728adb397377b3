"""Every upstream YAML document of one of our kinds loads into our models and dumps back the same.

Walks every *.yaml/*.yml under shared/upstream/data/. Two normalisations mirror what the API
server and Go's decoder do anyway: an explicit ``null`` is the same as an absent field, and a
number in a quantity field is written back as its string (``cpu: 1`` → ``"1"``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import api.all_kinds  # noqa: F401  (registers every kind)
from api.loader import load_object, load_yaml_documents
from api.meta import registered_kinds
from pkg.util.testdata import upstream_data_dir


def _our_kind(doc: dict[str, Any]) -> bool:
    group, _, version = str(doc.get("apiVersion", "")).rpartition("/")
    return (group, version, doc.get("kind")) in registered_kinds()


def _documents() -> list[tuple[str, int, dict[str, Any]]]:
    root = upstream_data_dir()
    found = []
    for path in sorted([*root.rglob("*.yaml"), *root.rglob("*.yml")]):
        for index, doc in enumerate(load_yaml_documents(path.read_text())):
            if isinstance(doc, dict) and _our_kind(doc):
                found.append((str(path.relative_to(root)), index, doc))
    return found


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _same(loaded: Any, dumped: Any, where: str = "") -> list[str]:
    """Paths where the dump differs from the input (numbers may come back as strings)."""
    if isinstance(loaded, dict) and isinstance(dumped, dict):
        diffs = [f"{where}.{k}: missing on output" for k in loaded.keys() - dumped.keys()]
        diffs += [f"{where}.{k}: added on output" for k in dumped.keys() - loaded.keys()]
        for key in loaded.keys() & dumped.keys():
            diffs += _same(loaded[key], dumped[key], f"{where}.{key}")
        return diffs
    if isinstance(loaded, list) and isinstance(dumped, list) and len(loaded) == len(dumped):
        return [d for i, (a, b) in enumerate(zip(loaded, dumped, strict=True))
                for d in _same(a, b, f"{where}[{i}]")]
    if isinstance(loaded, int | float) and not isinstance(loaded, bool) and isinstance(dumped, str):
        return [] if str(loaded) == dumped else [f"{where}: {loaded!r} became {dumped!r}"]
    return [] if loaded == dumped else [f"{where}: {loaded!r} became {dumped!r}"]


DOCUMENTS = _documents()


def test_fixtures_cover_our_kinds() -> None:
    kinds = {doc["kind"] for _, _, doc in DOCUMENTS}
    assert {"Reservation", "NodeMetric", "Recommendation", "ClusterColocationProfile"} <= kinds


@pytest.mark.parametrize(("path", "index", "doc"), DOCUMENTS,
                         ids=[f"{p}#{i}" for p, i, _ in DOCUMENTS])
def test_fixture_round_trips(path: str, index: int, doc: dict[str, Any]) -> None:
    obj = load_object(doc)
    assert type(obj).__name__ == doc["kind"]
    diffs = _same(_without_nulls(doc), obj.to_dict())
    assert not diffs, f"{Path(path).name} document {index}: {diffs}"
