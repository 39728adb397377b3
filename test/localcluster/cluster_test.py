"""The output directory of a run: a previous run's is emptied, anything else is left alone."""

from pathlib import Path

import pytest

from test.localcluster.cluster import WORKDIR_MARKER, WorkdirError, prepare_workdir


def test_new_and_previous_run_directories_are_fresh(tmp_path: Path) -> None:
    out = prepare_workdir(tmp_path / "run")
    (out / "report.txt").write_text("old")
    again = prepare_workdir(tmp_path / "run")
    assert sorted(p.name for p in again.iterdir()) == [WORKDIR_MARKER]


def test_a_directory_with_other_files_is_refused_not_emptied(tmp_path: Path) -> None:
    (tmp_path / "precious").write_text("keep me")
    with pytest.raises(WorkdirError, match="refusing to empty it"):
        prepare_workdir(tmp_path)
    assert (tmp_path / "precious").read_text() == "keep me"


def test_an_empty_existing_directory_is_used(tmp_path: Path) -> None:
    assert prepare_workdir(tmp_path) == tmp_path
    assert (tmp_path / WORKDIR_MARKER).exists()
