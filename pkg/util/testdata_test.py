"""pkg.util.testdata finds upstream's fixtures under plain pytest and under Bazel alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from pkg.util import testdata


def test_upstream_data_dir_holds_upstream_crds() -> None:
    root = testdata.upstream_data_dir()
    crds = sorted(p.name for p in (root / "config" / "crd" / "bases").glob("*.yaml"))
    assert "slo.koordinator.sh_nodeslos.yaml" in crds
    assert "scheduling.koordinator.sh_reservations.yaml" in crds


def test_override_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(testdata.ENV_OVERRIDE, str(tmp_path))
    assert testdata.upstream_data_dir() == tmp_path


def test_missing_data_names_where_it_looked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    missing = tmp_path / "nowhere"
    monkeypatch.setenv(testdata.ENV_OVERRIDE, str(missing))
    with pytest.raises(FileNotFoundError, match="nowhere"):
        testdata.upstream_data_dir()
