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
from api.testing import json_differences
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


DOCUMENTS = _documents()


def test_fixtures_cover_our_kinds() -> None:
    kinds = {doc["kind"] for _, _, doc in DOCUMENTS}
    assert {"Reservation", "NodeMetric", "Recommendation", "ClusterColocationProfile"} <= kinds


@pytest.mark.parametrize(("path", "index", "doc"), DOCUMENTS,
                         ids=[f"{p}#{i}" for p, i, _ in DOCUMENTS])
def test_fixture_round_trips(path: str, index: int, doc: dict[str, Any]) -> None:
    obj = load_object(doc)
    assert type(obj).__name__ == doc["kind"]
    diffs = json_differences(doc, obj.to_dict())
    assert not diffs, f"{Path(path).name} document {index}: {diffs}"
