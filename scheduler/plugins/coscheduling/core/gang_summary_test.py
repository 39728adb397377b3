"""The gang summary in words and its Permit clock (the scheduling-loop cases of the why-pending
``gang`` section are in ``coscheduling_test.py``)."""

from __future__ import annotations

from scheduler.plugins.coscheduling.core.gang_summary import (
    NAMES_SHOWN,
    GangPodState,
    GangSummary,
    PermitWait,
    PodStateInGang,
    permit_clock,
)


def test_long_member_lists_are_cut_in_words_not_in_json() -> None:
    names = tuple(f"default/w-{i:02}" for i in range(NAMES_SHOWN + 3))
    summary = GangSummary("default/w", "GangFromPodGroupCrd", True, "Strict", "once-satisfied",
                          len(names), len(names), 600.0, ("default/w",), names, (), (), False)
    state = GangPodState("default/w-00", PodStateInGang.QUEUED, "", summary, None, None)
    assert state.to_dict()["children"] == list(names)
    assert "default/w-09, and 3 more)" in state.lines()[1]


def test_the_group_clock_runs_from_the_first_waiter_to_the_earliest_deadline() -> None:
    assert permit_clock([], 100.0) == (None, None)
    assert permit_clock([PermitWait(90.0, 120.0), PermitWait(95.0, 125.0)], 100.0) == (10.0, 20.0)
