"""A tiny gang workload in process, with upstream's shipped profile: all or nothing."""

from __future__ import annotations

from scheduler.bench.inprocess import SHIPPED, run_in_process
from scheduler.bench.workloads import Gangs, Workload


def test_every_fitting_gang_binds_whole_and_the_unfit_gang_binds_nothing() -> None:
    workload = Workload("GangScheduling_3x4", nodes=4, existing=0, to_schedule=0,
                        gangs=Gangs(3, 4))
    result = run_in_process(workload)
    assert result.profile == SHIPPED
    assert result.scheduled == 12
    assert len(result.gang_latencies) == 3  # each gang's last member bound
    assert result.unfit_bound == 0
