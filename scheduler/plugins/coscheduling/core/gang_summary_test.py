"""The gang section of the why-pending entry: a pod held at PreEnqueue gets one without any
scheduling attempt, members waiting at Permit show the time left before the group's timeout,
and ``hack/koord explain pod`` says it in words."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from scheduler.diagnosis import explain_text
from scheduler.plugins.coscheduling.core.gang_summary import (
    NAMES_SHOWN,
    GangPodState,
    GangSummary,
    PermitWait,
    PodStateInGang,
    permit_clock,
)
from scheduler.plugins.coscheduling.coscheduling_test import GangCluster, wait_bound
from scheduler.plugins.coscheduling.testing import gang_annotations, make_pod, make_pod_group


@pytest.fixture
def cluster() -> Iterator[GangCluster]:
    c = GangCluster()
    yield c
    c.stop()


def _text(entry: dict[str, Any]) -> str:
    return explain_text(entry["pod"], {}, entry["message"], entry["explain"])


def test_a_pod_held_at_pre_enqueue_is_explained_with_its_gang(cluster: GangCluster) -> None:
    cluster.add_pod_group(make_pod_group("train", 3, timeout=30))
    cluster.add_pod(make_pod("train-0", pod_group="train"))
    cluster.add_pod(make_pod("train-1", pod_group="train"))
    assert cluster.schedule_ready() == 0  # held: never tried, so no Filter diagnosis

    entry = cluster.sched.diagnosis_of("default/train-1")
    assert entry is not None and entry["diagnosis"] is None
    gang = entry["gang"]
    assert gang["name"] == "default/train"
    assert gang["gangFrom"] == "GangFromPodGroupCrd"
    assert (gang["mode"], gang["gangMatchPolicy"]) == ("Strict", "once-satisfied")
    assert (gang["minRequiredNumber"], gang["totalChildrenNum"]) == (3, 3)
    assert gang["children"] == ["default/train-0", "default/train-1"]
    assert (gang["waitingForBindChildren"], gang["boundChildren"]) == ([], [])
    assert gang["state"] == "HeldAtPreEnqueue"
    assert "default/train has 2 of 3 pods" in gang["message"]
    assert gang["timeLeftSeconds"] is None
    text = _text(entry)
    assert ("Gang default/train (GangFromPodGroupCrd, Strict, match policy once-satisfied): "
            "members 2 of 3 required (totalNumber 3)") in text
    assert "  members: (default/train-0, default/train-1)" in text
    assert "  this pod: HeldAtPreEnqueue: gangGroup [default/train] basic check" in text


def test_members_waiting_at_permit_show_the_time_left_before_the_timeout(
        cluster: GangCluster) -> None:
    cluster.add_pod_group(make_pod_group("job", 3, timeout=30))
    for name in ("a", "b", "c"):
        cluster.add_pod(make_pod(name, pod_group="job"))
    assert cluster.sched.schedule_one(timeout=0)
    assert cluster.sched.schedule_one(timeout=0)
    cluster.clock.step(12)

    entry = cluster.sched.diagnosis_of("default/a")
    assert entry is not None
    gang = entry["gang"]
    assert gang["state"] == "WaitingAtPermit"
    assert gang["waitingForBindChildren"] == ["default/a", "default/b"]
    assert (gang["waitedSeconds"], gang["timeLeftSeconds"]) == (12, 18)
    text = _text(entry)
    assert "  waiting at Permit (assumed): 2 (default/a, default/b)" in text
    assert ("  Permit: waiting 12s, 18s left before the timeout rejects the group's waiting "
            "members") in text
    queued = cluster.sched.diagnosis_of("default/c")
    assert queued is not None and queued["gang"]["state"] == "Queued"

    assert cluster.sched.schedule_one(timeout=0)
    wait_bound(cluster, 3)
    for name in ("a", "b", "c"):
        cluster.plugin.cache.on_pod_update(make_pod(name, pod_group="job"),
                                           make_pod(name, pod_group="job", node="n1"))
    # Bound: not pending, nothing to explain.
    assert cluster.sched.diagnosis_of("default/a") is None


def test_pods_without_a_gang_get_no_gang_section(cluster: GangCluster) -> None:
    cluster.add_pod(make_pod("solo", cpu="100"))  # fits no node: a Filter diagnosis only
    assert cluster.schedule_ready() == 1
    entry = cluster.sched.diagnosis_of("default/solo")
    assert entry is not None and "gang" not in entry
    assert cluster.sched.diagnosis_of("default/nobody") is None


def test_an_annotation_gang_not_initialised_says_so(cluster: GangCluster) -> None:
    cluster.add_pod(make_pod("x", annotations=gang_annotations("g", "three")))
    entry = cluster.sched.diagnosis_of("default/x")
    assert entry is not None
    assert entry["gang"]["hasGangInit"] is False
    assert entry["explain"][0] == ("Gang default/g: not initialised (GangFromPodAnnotation); "
                                   "its pods wait for it.")


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
