"""The checked-in CRD manifests are what the models generate, and they are valid CRDs."""

from __future__ import annotations

from api.crds import crd_manifests
from api.crds.generate import rendered, stale_files


def test_checked_in_manifests_are_current() -> None:
    stale = stale_files()
    assert not stale, f"regenerate with `python -m api.crds.generate`: {stale}"


def test_every_kind_has_one_storage_version_and_a_structural_root() -> None:
    manifests = crd_manifests()
    assert len(manifests) == len(rendered())
    for crd in manifests:
        versions = crd["spec"]["versions"]
        assert sum(1 for v in versions if v["storage"]) == 1, crd["metadata"]["name"]
        for version in versions:
            root = version["schema"]["openAPIV3Schema"]
            assert root["type"] == "object"
            assert {"apiVersion", "kind", "metadata"} <= root["properties"].keys()
