"""Our generated CRD schemas have exactly upstream's property paths and types.

Compares every CRD under shared/upstream/data/config/crd/bases with the one generated from
our models, version by version. Deliberate differences are listed in DELIBERATE with a reason.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from api.crds.generate import rendered
from pkg.util.testdata import upstream_data_dir

# (crd file, version, path) → why ours differs on purpose. Empty: none so far.
DELIBERATE: dict[tuple[str, str, str], str] = {}

_TYPE_KEYS = ("type", "format", "x-kubernetes-int-or-string",
              "x-kubernetes-preserve-unknown-fields")


def schema_paths(schema: dict[str, Any], path: str = "") -> dict[str, dict[str, Any]]:
    """Every property path ('.spec.owners[].object.name', '.status.allocatable.*') → its type."""
    found = {path or ".": {k: schema[k] for k in _TYPE_KEYS if k in schema}}
    for name, sub in (schema.get("properties") or {}).items():
        found.update(schema_paths(sub, f"{path}.{name}"))
    if isinstance(schema.get("additionalProperties"), dict):
        found.update(schema_paths(schema["additionalProperties"], f"{path}.*"))
    if isinstance(schema.get("items"), dict):
        found.update(schema_paths(schema["items"], f"{path}[]"))
    return found


def _upstream_crds() -> list[str]:
    return sorted(p.name for p in (upstream_data_dir() / "config/crd/bases").glob("*.yaml"))


def _versions(text: str) -> dict[str, dict[str, Any]]:
    crd = yaml.safe_load(text)
    return {v["name"]: v["schema"]["openAPIV3Schema"] for v in crd["spec"]["versions"]}


@pytest.mark.parametrize("crd_file", _upstream_crds())
def test_property_paths_and_types_match_upstream(crd_file: str) -> None:
    ours_by_file = rendered()
    assert crd_file in ours_by_file, f"we generate no {crd_file}"
    theirs = _versions((upstream_data_dir() / "config/crd/bases" / crd_file).read_text())
    ours = _versions(ours_by_file[crd_file])
    assert ours.keys() == theirs.keys()
    for version, upstream_schema in theirs.items():
        want = schema_paths(upstream_schema)
        have = schema_paths(ours[version])
        allowed = {p for (f, v, p) in DELIBERATE if (f, v) == (crd_file, version)}
        missing = sorted(want.keys() - have.keys() - allowed)
        extra = sorted(have.keys() - want.keys() - allowed)
        assert not missing and not extra, f"{crd_file} {version}: missing {missing}, extra {extra}"
        wrong = {p: (have[p], want[p]) for p in want.keys() & have.keys()
                 if p not in allowed and have[p] != want[p]}
        assert not wrong, f"{crd_file} {version}: types differ (ours, upstream): {wrong}"


def test_crd_names_scope_and_subresources_match_upstream() -> None:
    ours_by_file = rendered()
    for crd_file in _upstream_crds():
        theirs = yaml.safe_load((upstream_data_dir() / "config/crd/bases" / crd_file).read_text())
        ours = yaml.safe_load(ours_by_file[crd_file])
        assert ours["metadata"]["name"] == theirs["metadata"]["name"]
        assert ours["spec"]["names"] == theirs["spec"]["names"], crd_file
        assert ours["spec"]["scope"] == theirs["spec"]["scope"], crd_file
        for mine, up in zip(ours["spec"]["versions"], theirs["spec"]["versions"], strict=True):
            assert mine.get("subresources") == up.get("subresources"), crd_file
            assert (mine["served"], mine["storage"]) == (up["served"], up["storage"]), crd_file
            columns = [{k: c[k] for k in ("name", "type", "jsonPath")}
                       for c in up.get("additionalPrinterColumns", [])]
            assert [{k: c[k] for k in ("name", "type", "jsonPath")}
                    for c in mine.get("additionalPrinterColumns", [])] == columns, crd_file
