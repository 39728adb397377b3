"""The gang cache fed as the informers would: gang parameters from pod annotations and from
PodGroups with upstream's fallbacks (mirrors upstream core/gang_cache_test.go's onPodAdd /
onPodGroupAdd cases), lifetimes, readiness callbacks and Permit validity by match policy."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from api.extension.coscheduling import (
    ANNOTATION_GANG_GROUPS,
    ANNOTATION_GANG_MATCH_POLICY,
    ANNOTATION_GANG_TOTAL_NUM,
    GangMatchPolicy,
    GangMode,
)
from pkg.client.informers import DeletedFinalStateUnknown
from scheduler.apis.config import CoschedulingArgs
from scheduler.framework.plugins.defaultpreemption.testing import FakeRecorder
from scheduler.plugins.coscheduling.core.gang import Gang, GangParams
from scheduler.plugins.coscheduling.core.gang_cache import GangCache
from scheduler.plugins.coscheduling.testing import gang_annotations, make_pod, make_pod_group


def names(into: list[list[str]]) -> Callable[[Sequence[dict[str, Any]]], None]:
    return lambda pods: into.append([p["metadata"]["name"] for p in pods])


def new_cache(held: list[list[str]] | None = None
              ) -> tuple[GangCache, FakeRecorder, list[list[str]]]:
    """The cache, its recorder and the pods it asked the queue to re-check, per event (and
    into ``held`` the pods it said stay held with a new count)."""
    recorder = FakeRecorder()
    released: list[list[str]] = []
    cache = GangCache(CoschedulingArgs(), recorder, names(released),
                      names(held) if held is not None else None)
    return cache, recorder, released


def params(cache: GangCache, gang_id: str) -> GangParams:
    p = cache.gangs[gang_id].params
    assert p is not None
    return p


@pytest.mark.parametrize(("annotations", "expected"), [
    (gang_annotations("g", 2), (2, 2, "Strict", "once-satisfied", 600.0, ("default/g",))),
    (gang_annotations("g", 2, mode="NonStrict", wait="30s", **{
        ANNOTATION_GANG_TOTAL_NUM: "5", ANNOTATION_GANG_MATCH_POLICY: "only-waiting"}),
     (2, 5, "NonStrict", "only-waiting", 30.0, ("default/g",))),
    # total below min, zero wait, unknown policy: upstream's fallbacks
    (gang_annotations("g", 3, wait="0s", **{ANNOTATION_GANG_TOTAL_NUM: "1",
                                            ANNOTATION_GANG_MATCH_POLICY: "sometimes"}),
     (3, 3, "Strict", "once-satisfied", 600.0, ("default/g",))),
    (gang_annotations("g", 1, **{ANNOTATION_GANG_GROUPS: '["default/g","default/h"]'}),
     (1, 1, "Strict", "once-satisfied", 600.0, ("default/g", "default/h"))),
])
def test_annotation_gang_parameters(annotations: dict[str, str],
                                    expected: tuple[Any, ...]) -> None:
    cache, _, _ = new_cache()
    cache.on_pod_add(make_pod("p", annotations=annotations))
    p = params(cache, "default/g")
    assert (p.min_member, p.total_number, p.mode, p.match_policy, p.wait_time,
            p.groups) == expected


def test_pod_group_parameters_and_its_annotations() -> None:
    cache, _, _ = new_cache()
    cache.on_pod_group_add(make_pod_group("job", 4, timeout=30, annotations={
        "gang.scheduling.koordinator.sh/mode": "NonStrict",
        "pod-group.scheduling.sigs.k8s.io/match-policy": "waiting-and-running"}))
    p = params(cache, "default/job")
    assert (p.min_member, p.total_number, p.mode, p.match_policy, p.wait_time) == (
        4, 4, "NonStrict", "waiting-and-running", 30.0)
    cache.on_pod_group_add(make_pod_group("nolimit", 1, timeout=0))
    assert params(cache, "default/nolimit").wait_time == 600.0


def test_a_bad_total_number_warns_and_falls_back_to_min_member() -> None:
    cache, recorder, _ = new_cache()
    cache.on_pod_add(make_pod("p", annotations=gang_annotations(
        "g", 2, **{ANNOTATION_GANG_TOTAL_NUM: "many"})))
    assert params(cache, "default/g").total_number == 2
    (event,) = recorder.events
    assert event[:4] == ("p", "", "Warning", "InvalidGangAnnotation")
    assert "gang.scheduling.koordinator.sh/total-number" in event[5] and "'many'" in event[5]
    assert "totalNumber is minMember (2)" in event[5]


def test_a_pod_group_gang_lives_with_its_pod_group_and_pods_wait_for_it() -> None:
    held: list[list[str]] = []
    cache, _, released = new_cache(held)
    a, b = make_pod("a", pod_group="job"), make_pod("b", pod_group="job")
    cache.on_pod_add(a)
    cache.on_pod_add(b)
    assert not cache.gangs["default/job"].initialised  # no PodGroup yet
    cache.on_pod_group_add(make_pod_group("job", 2))
    # Each pod is re-asked as it arrives, the others only told their count changed; the
    # PodGroup's arrival completes the gang and re-asks about all of them.
    assert released == [["a"], ["b"], ["a", "b"]]
    assert held == [["a"]]
    cache.on_pod_group_delete(DeletedFinalStateUnknown("default/job",
                                                       make_pod_group("job", 2)))
    assert not cache.gangs["default/job"].initialised  # its pods remain
    cache.on_pod_delete(a)
    cache.on_pod_delete(b)
    assert "default/job" not in cache.gangs
    cache.on_pod_group_add(make_pod_group("job", 2))
    assert "default/job" in cache.gangs  # a PodGroup gang exists without pods
    cache.on_pod_group_delete(make_pod_group("job", 2))
    assert "default/job" not in cache.gangs


def test_pending_members_are_released_when_the_gang_reaches_min_member() -> None:
    held: list[list[str]] = []
    cache, _, released = new_cache(held)
    cache.on_pod_add(make_pod("a", annotations=gang_annotations("g", 3)))
    cache.on_pod_add(make_pod("b", annotations=gang_annotations("g", 3)))
    cache.on_pod_add(make_pod("c", annotations=gang_annotations("g", 3), node="n1"))
    # A short step re-asks about the new pod only (the others' message names a new count:
    # ``held``); the third completes the gang and releases the pending ones.
    assert released == [["a"], ["b"], ["a", "b"]]
    assert held == [["a"]]
    assert cache.gangs["default/g"].bound == {"uid-c"}
    assert cache.once_satisfied == {"default/g"}


def test_a_pod_changing_gang_moves_between_gangs() -> None:
    cache, _, _ = new_cache()
    old = make_pod("a", annotations=gang_annotations("g", 1))
    new = make_pod("a", annotations=gang_annotations("h", 1))
    cache.on_pod_add(old)
    cache.on_pod_update(old, new)
    assert set(cache.gangs) == {"default/h"}


@pytest.mark.parametrize(("policy", "waiting", "bound", "once", "valid"), [
    (GangMatchPolicy.ONLY_WAITING, 2, 0, False, True),
    (GangMatchPolicy.ONLY_WAITING, 1, 5, True, False),
    (GangMatchPolicy.WAITING_AND_RUNNING, 1, 1, False, True),
    (GangMatchPolicy.WAITING_AND_RUNNING, 1, 0, True, False),
    (GangMatchPolicy.ONCE_SATISFIED, 2, 0, False, True),
    (GangMatchPolicy.ONCE_SATISFIED, 1, 0, True, True),
    (GangMatchPolicy.ONCE_SATISFIED, 1, 1, False, False),
])
def test_permit_validity_by_match_policy(policy: GangMatchPolicy, waiting: int, bound: int,
                                         once: bool, valid: bool) -> None:
    gang = Gang("default/g", params=GangParams(2, 2, GangMode.STRICT, policy, 600.0,
                                                ("default/g",)))
    gang.waiting = {f"w{i}" for i in range(waiting)}
    gang.bound = {f"b{i}" for i in range(bound)}
    assert gang.valid_for_permit(once) is valid
