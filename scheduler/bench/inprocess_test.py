"""Tiny gang, quota and Reservation workloads in process, with upstream's shipped profile: a
gang binds all or nothing; quotas admit what their runtime allows, never beyond their max;
pods matching an Available Reservation land in one (every node is scored on so few nodes), the
others never, and the restore step is timed on every cycle."""

from __future__ import annotations

import pytest

from scheduler.bench import workloads
from scheduler.bench.inprocess import SHIPPED, run_in_process
from scheduler.bench.workloads import Gangs, Quotas, Workload


def test_every_fitting_gang_binds_whole_and_the_unfit_gang_binds_nothing() -> None:
    workload = Workload("GangScheduling_3x4", nodes=4, existing=0, to_schedule=0,
                        gangs=Gangs(3, 4))
    result = run_in_process(workload)
    assert result.profile == SHIPPED
    assert result.scheduled == 12
    assert len(result.gang_latencies) == 3  # each gang's last member bound
    assert result.unfit_bound == 0


def test_quotas_admit_their_runtime_and_no_quota_goes_beyond_its_max(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # One parent, two leaves of 12 pods (1.2 cpu) with min 480m; the second leaf is capped at
    # 960m, the parent at 2052m: the leaves share the 1092m above their mins by their max
    # (1440:960), so 11 and 9 pods fit and 4 stay pending.
    workload = Workload("ElasticQuota_24x2", nodes=4, existing=0, to_schedule=24,
                        quotas=Quotas(1, 2, capped=80, parent=95))
    assert workload.pods == 20
    # The run waits for all 24 (until nothing is left to schedule): only 20 bind.
    monkeypatch.setattr(workloads, "quota_fitting", lambda *_: 24)
    result = run_in_process(workload)
    assert result.profile == SHIPPED
    assert result.scheduled == 20
    assert result.quota_violations == 0


def test_matching_pods_land_in_reservations_and_the_restore_step_is_timed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # 4 Reservations of 3 pods for two owner labels: 12 places for the 12 matching pods.
    monkeypatch.setattr(workloads, "RESERVATION_APPS", 2)
    workload = Workload("Reservation_4x24", nodes=8, existing=0, to_schedule=24,
                        reservations=4)
    result = run_in_process(workload)
    assert result.profile == SHIPPED
    assert result.scheduled == 24
    assert result.in_reservations == 12
    assert len(result.restore_seconds) >= 24 and result.restore_mean() > 0
