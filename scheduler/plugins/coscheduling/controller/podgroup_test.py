"""The PodGroup phase machine, one reconcile step at a time, as upstream's podgroup_test.go
cases: Pending, PreScheduling, Scheduling (stamping scheduleStartTime once), Scheduled,
Running, Failed, Finished, and back to Pending without pods."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.plugins.coscheduling.controller.podgroup import next_status

NOW = "2026-01-01T00:00:00Z"


def pg(phase: str = "", min_member: int = 2, **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "job", "namespace": "default"},
            "spec": {"minMember": min_member}, "status": {"phase": phase, **status}}


def pods(*phases: str, owner: str = "") -> list[dict[str, Any]]:
    meta: dict[str, Any] = {"namespace": "default"}
    if owner:
        meta["ownerReferences"] = [{"name": owner}]
    return [{"metadata": {**meta, "name": f"p{i}"}, "status": {"phase": ph}}
            for i, ph in enumerate(phases)]


@pytest.mark.parametrize(("group", "members", "bound", "phase"), [
    (pg(""), pods("Pending"), 0, "Pending"),
    (pg("Pending"), pods("Pending"), 0, "Pending"),
    (pg("Pending"), pods("Pending", "Pending"), 0, "PreScheduling"),
    (pg("Pending", min_member=0), pods("Pending"), 0, "Pending"),
    (pg("PreScheduling"), pods("Pending", "Pending"), 1, "Scheduling"),
    (pg("Scheduling"), pods("Pending", "Pending"), 2, "Scheduled"),
    (pg("Scheduled"), pods("Running", "Running"), 2, "Running"),
    (pg("Running"), pods("Running", "Failed"), 2, "Failed"),
    (pg("Running"), pods("Succeeded", "Succeeded"), 2, "Finished"),
    (pg("Running"), [], 0, "Pending"),
])
def test_one_reconcile_moves_the_phase_one_step(group: dict[str, Any],
                                                members: list[dict[str, Any]], bound: int,
                                                phase: str) -> None:
    assert next_status(group, members, bound, lambda: NOW)["phase"] == phase


def test_counts_and_schedule_start_time_are_written_once() -> None:
    status = next_status(pg("PreScheduling", min_member=3),
                         pods("Running", "Pending", "Failed"), 1, lambda: NOW)
    assert status == {"phase": "Scheduling", "running": 1, "succeeded": 0, "failed": 1,
                      "scheduled": 1, "scheduleStartTime": NOW}
    later = next_status(pg("Scheduling", scheduleStartTime=NOW), pods("Pending"), 0,
                        lambda: "2026-01-02T00:00:00Z")
    assert later["scheduleStartTime"] == NOW


def test_pre_scheduling_records_the_owner_as_occupied_by() -> None:
    status = next_status(pg("Pending"), pods("Pending", "Pending", owner="tfjob"), 0,
                         lambda: NOW)
    assert status["occupiedBy"] == "default/tfjob"
