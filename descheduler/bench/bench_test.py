"""The bench at a small size: the cycle moves two pods of each hot node (maxMigratingPerNode)
into PodMigrationJobs and one arbitration round passes them all; a cluster without a hot node
creates none."""

import pytest

from descheduler.bench.__main__ import build_cluster, main, run


def test_small_cluster_two_jobs_per_hot_node_all_passed() -> None:
    result = run(build_cluster(40, 10, hot_every=10))
    assert (result.jobs, result.passed) == (8, 8)


def test_cold_cluster_creates_no_job() -> None:
    assert run(build_cluster(40, 10, hot_every=0)).jobs == 0


def test_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--nodes", "30"]) == 0
    out = capsys.readouterr().out
    assert "cycle" in out and "arbitration" in out and "process RSS" in out
