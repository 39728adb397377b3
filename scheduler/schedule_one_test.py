"""Tests of one scheduling decision (``GenericScheduler`` in ``scheduler/schedule_one.py``):
how many nodes are examined and from where, when scoring is skipped, tie-breaking, PreFilter
results and rejections, the nominated-node fast path and room kept for nominated pods."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from scheduler.diagnosis import FitError
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import (
    BindPlugin,
    FilterPlugin,
    Plugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ScorePlugin,
)
from scheduler.framework.nominator import Nominator
from scheduler.framework.plugins.noderesources import Fit
from scheduler.framework.queue import SchedulingQueue
from scheduler.framework.runtime import Framework, FrameworkDeps
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status, unschedulable
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.interface import ExtendedHandle
from scheduler.schedule_one import (
    GenericScheduler,
    NoNodesAvailable,
    SchedulingError,
    num_feasible_nodes_to_find,
)

# Fake plugins, driven by node and pod labels ------------------------------------------------


class Sort(QueueSortPlugin):
    name = "PrioritySort"

    def less(self, a: Any, b: Any) -> bool:
        return bool(a.pod_info.priority > b.pod_info.priority)


class Bind(BindPlugin):
    name = "DefaultBinder"


class LabelFilter(FilterPlugin):
    """Rejects nodes labelled ``<plugin name>: reject``."""

    name = "LabelFilter"

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        if node_info.labels.get(self.name) == "reject":
            return unschedulable(f"node(s) rejected by {self.name}")
        return None


class LabelScore(ScorePlugin):
    """Scores a node by its ``score`` label; counts the nodes it scored."""

    name = "LabelScore"

    def __init__(self, args: object, handle: ExtendedHandle) -> None:
        super().__init__(None, handle)
        self.scored = 0

    def score(self, state: CycleState, pod: PodInfo,
              node_info: NodeInfo) -> tuple[int, Status | None]:
        self.scored += 1
        return int(node_info.labels.get("score", "0")), None


class FailingPreScore(PreScorePlugin):
    name = "FailingPreScore"

    def pre_score(self, state: CycleState, pod: PodInfo,
                  nodes: Sequence[NodeInfo]) -> Status | None:
        return Status(Code.ERROR, "PreScore must not run")


class Restrict(PreFilterPlugin):
    """Restricts the pod to the nodes its ``restrict`` label lists (comma separated), or
    rejects it with the code its ``prefilter`` label names."""

    name = "Restrict"

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   snapshot: Snapshot) -> tuple[PreFilterResult | None, Status | None]:
        verdict = pod.labels.get("prefilter")
        if verdict == "unschedulable":
            return None, unschedulable("pod has an unbound claim")
        if verdict == "error":
            return None, Status(Code.ERROR, "lister is broken")
        names = pod.labels.get("restrict")
        return (PreFilterResult(set(names.split(","))) if names else None), None


PLUGINS: dict[str, type[Plugin]] = {p.name: p for p in (
    Sort, Bind, LabelFilter, LabelScore, FailingPreScore, Restrict, Fit)}


def profile(snapshot: Snapshot, *, pre_filter: Sequence[str] = (),
            filter: Sequence[str] = (LabelFilter.name,), pre_score: Sequence[str] = (),
            score: Sequence[str] = (LabelScore.name,), nominator: Any = None) -> Framework:
    config = {"queueSort": [(Sort.name, 0)], "bind": [(Bind.name, 0)],
              "preFilter": [(n, 0) for n in pre_filter], "filter": [(n, 0) for n in filter],
              "preScore": [(n, 0) for n in pre_score], "score": [(n, 1) for n in score]}
    return Framework("default-scheduler", config, PLUGINS, {},
                     FrameworkDeps(snapshot=snapshot, nominator=nominator))


def make_node(name: str, cpu: str = "4", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}


def make_pod(name: str, *, priority: int = 0, cpu: str | None = None, nominated: str = "",
             **labels: str) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c"}
    if cpu is not None:
        container["resources"] = {"requests": {"cpu": cpu}}
    pod: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                     "labels": labels},
        "spec": {"priority": priority, "containers": [container]}, "status": {}}
    if nominated:
        pod["status"]["nominatedNodeName"] = nominated
    return pod


def snapshot_of(nodes: Sequence[dict[str, Any]]) -> Snapshot:
    snap = Snapshot()
    snap.rebuild([NodeInfo(n) for n in nodes])
    return snap


def names(snap: Snapshot, idx: np.ndarray) -> list[str]:
    return [snap.node_infos[int(i)].name for i in idx]


# numFeasibleNodesToFind -----------------------------------------------------------------------


@pytest.mark.parametrize(("nodes", "percentage", "expected"), [
    (0, 0, 0),
    (10, 0, 10),  # fewer than 100 nodes: all of them
    (99, 30, 99),
    (100, 0, 100),
    (1000, 0, 420),  # adaptive: 50 - 1000/125 = 42 %
    (5000, 0, 500),  # adaptive: 50 - 40 = 10 %
    (6000, 0, 300),  # adaptive 2 % is floored at 5 %
    (200, 10, 100),  # 20 nodes is below the minimum of 100
    (5000, 30, 1500),
    (5000, 100, 5000),
])
def test_num_feasible_nodes_to_find(nodes: int, percentage: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(nodes, percentage) == expected


# Which nodes are examined --------------------------------------------------------------------


def test_the_search_starts_where_the_previous_one_stopped_and_wraps() -> None:
    snap = snapshot_of([make_node(f"n{i:03d}") for i in range(300)])
    fwk = profile(snap)
    algo = GenericScheduler()  # adaptive: 50 - 300/125 = 48 % of 300 = 144 nodes
    starts = []
    for _ in range(3):
        starts.append(algo.next_start_node_index)
        feasible, _, examined = algo.find_nodes_that_fit(fwk, CycleState(), PodInfo(make_pod("p")))
        assert len(feasible) == 144 and examined == 144
        assert names(snap, feasible)[0] == f"n{starts[-1]:03d}"
    assert starts == [0, 144, 288]
    # The third search wrapped around: n288..n299 then n000..n131.
    assert algo.next_start_node_index == 132


def test_the_start_index_advances_by_the_nodes_examined_not_the_nodes_found() -> None:
    # Every other node is rejected, so finding 144 feasible nodes examines 288.
    snap = snapshot_of([make_node(f"n{i:03d}", **({"LabelFilter": "reject"} if i % 2 else {}))
                        for i in range(300)])
    algo = GenericScheduler()
    feasible, _, examined = algo.find_nodes_that_fit(profile(snap), CycleState(),
                                                     PodInfo(make_pod("p")))
    assert len(feasible) == 144
    assert names(snap, feasible)[-1] == "n286"
    assert examined == 287 and algo.next_start_node_index == 287


def test_a_percentage_of_100_examines_every_node() -> None:
    snap = snapshot_of([make_node(f"n{i:03d}") for i in range(300)])
    algo = GenericScheduler(percentage_of_nodes_to_score=100)
    algo.next_start_node_index = 10
    feasible, _, examined = algo.find_nodes_that_fit(profile(snap), CycleState(),
                                                     PodInfo(make_pod("p")))
    assert len(feasible) == 300 and examined == 300
    assert algo.next_start_node_index == 10


def test_no_nodes_is_an_error_not_a_fit_error() -> None:
    with pytest.raises(NoNodesAvailable, match="no nodes available to schedule pods"):
        GenericScheduler().schedule(profile(Snapshot()), CycleState(), PodInfo(make_pod("p")))


# Scoring and host selection ---------------------------------------------------------------


def test_the_highest_total_wins() -> None:
    snap = snapshot_of([make_node("a", score="10"), make_node("b", score="70"),
                        make_node("c", score="40")])
    result = GenericScheduler().schedule(profile(snap), CycleState(), PodInfo(make_pod("p")))
    assert (result.suggested_host, result.evaluated_nodes, result.feasible_nodes) == ("b", 3, 3)


def test_a_single_feasible_node_is_chosen_without_scoring() -> None:
    snap = snapshot_of([make_node("a", LabelFilter="reject"), make_node("b"),
                        make_node("c", LabelFilter="reject")])
    fwk = profile(snap, pre_score=[FailingPreScore.name])
    result = GenericScheduler().schedule(fwk, CycleState(), PodInfo(make_pod("p")))
    assert (result.suggested_host, result.feasible_nodes) == ("b", 1)
    scorer = fwk.plugin(LabelScore.name)
    assert isinstance(scorer, LabelScore) and scorer.scored == 0


def test_with_two_feasible_nodes_prescore_runs_and_its_error_fails_the_cycle() -> None:
    snap = snapshot_of([make_node("a"), make_node("b")])
    fwk = profile(snap, pre_score=[FailingPreScore.name])
    with pytest.raises(SchedulingError, match="PreScore must not run"):
        GenericScheduler().schedule(fwk, CycleState(), PodInfo(make_pod("p")))


class LastOf:
    """A Random stand-in whose randrange always picks the last candidate."""

    def __init__(self) -> None:
        self.asked: list[int] = []

    def randrange(self, n: int) -> int:
        self.asked.append(n)
        return n - 1


def test_ties_are_broken_among_the_best_nodes_only() -> None:
    snap = snapshot_of([make_node("a", score="50"), make_node("b", score="90"),
                        make_node("c", score="10"), make_node("d", score="90"),
                        make_node("e", score="90")])
    rng = LastOf()
    result = GenericScheduler(rng=rng).schedule(  # type: ignore[arg-type]
        profile(snap), CycleState(), PodInfo(make_pod("p")))
    assert rng.asked == [3]
    assert result.suggested_host == "e"


def test_ties_are_broken_uniformly() -> None:
    snap = snapshot_of([make_node(n, score="90") for n in "abc"] + [make_node("d", score="89")])
    fwk = profile(snap)
    algo = GenericScheduler(percentage_of_nodes_to_score=100, rng=random.Random(7))
    chosen = [algo.schedule(fwk, CycleState(), PodInfo(make_pod("p"))).suggested_host
              for _ in range(300)]
    assert set(chosen) == {"a", "b", "c"}
    assert all(70 <= chosen.count(n) <= 130 for n in "abc")


def test_without_a_tie_the_random_source_is_not_consulted() -> None:
    snap = snapshot_of([make_node("a", score="50"), make_node("b", score="90")])
    rng = LastOf()
    GenericScheduler(rng=rng).schedule(profile(snap), CycleState(),  # type: ignore[arg-type]
                                       PodInfo(make_pod("p")))
    assert rng.asked == []


# PreFilter -------------------------------------------------------------------------------------


def test_a_prefilter_result_restricts_the_nodes_considered() -> None:
    snap = snapshot_of([make_node("a", score="100"), make_node("b", score="10"),
                        make_node("c", score="100"), make_node("d", score="20")])
    fwk = profile(snap, pre_filter=[Restrict.name])
    pod = PodInfo(make_pod("p", restrict="b,d,gone"))
    algo = GenericScheduler()
    feasible, _, examined = algo.find_nodes_that_fit(fwk, CycleState(), pod)
    assert sorted(names(snap, feasible)) == ["b", "d"]
    assert examined == 2
    assert algo.schedule(fwk, CycleState(), pod).suggested_host == "d"


def test_nodes_outside_the_prefilter_result_are_reported_as_upstream_does() -> None:
    snap = snapshot_of([make_node("a"), make_node("b", LabelFilter="reject"), make_node("c")])
    fwk = profile(snap, pre_filter=[Restrict.name])
    with pytest.raises(FitError) as err:
        GenericScheduler().schedule(fwk, CycleState(), PodInfo(make_pod("p", restrict="b")))
    assert err.value.message() == (
        "0/3 nodes are available: 1 node(s) rejected by LabelFilter, "
        "2 node(s) didn't satisfy plugin(s) [Restrict].")
    d = err.value.diagnosis
    assert d.node_to_status.get("a").code == (  # type: ignore[union-attr]
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
    # Events of the restricting plugin, too, may make the pod schedulable.
    assert d.unschedulable_plugins == {Restrict.name, LabelFilter.name}


def test_a_prefilter_rejection_is_a_fit_error_with_its_message() -> None:
    snap = snapshot_of([make_node("a"), make_node("b")])
    fwk = profile(snap, pre_filter=[Restrict.name])
    with pytest.raises(FitError) as err:
        GenericScheduler().schedule(fwk, CycleState(),
                                    PodInfo(make_pod("p", prefilter="unschedulable")))
    d = err.value.diagnosis
    assert err.value.message() == "0/2 nodes are available: pod has an unbound claim."
    assert d.pre_filter_msg == "pod has an unbound claim"
    assert d.unschedulable_plugins == {Restrict.name}
    # Every node shares the PreFilter status, so preemption sees why each was rejected.
    assert d.node_to_status.get("b") is not None
    assert d.node_to_status.get("b").code == Code.UNSCHEDULABLE  # type: ignore[union-attr]


def test_a_prefilter_error_is_a_scheduling_error() -> None:
    snap = snapshot_of([make_node("a")])
    fwk = profile(snap, pre_filter=[Restrict.name])
    with pytest.raises(SchedulingError, match="lister is broken"):
        GenericScheduler().schedule(fwk, CycleState(), PodInfo(make_pod("p", prefilter="error")))


def test_a_prefilter_result_of_unknown_nodes_only_fits_nowhere() -> None:
    snap = snapshot_of([make_node("a"), make_node("b")])
    fwk = profile(snap, pre_filter=[Restrict.name])
    with pytest.raises(FitError) as err:
        GenericScheduler().schedule(fwk, CycleState(), PodInfo(make_pod("p", restrict="x")))
    assert err.value.message() == (
        "0/2 nodes are available: 2 node(s) didn't satisfy plugin(s) [Restrict].")


# Nominated node and nominated pods ----------------------------------------------------------------


def test_a_nominated_node_that_still_fits_is_taken_directly() -> None:
    snap = snapshot_of([make_node(f"n{i}", score=str(i)) for i in range(5)])
    fwk = profile(snap)
    algo = GenericScheduler()
    result = algo.schedule(fwk, CycleState(), PodInfo(make_pod("p", nominated="n1")))
    assert (result.suggested_host, result.evaluated_nodes) == ("n1", 1)
    assert algo.next_start_node_index == 0  # the other nodes were not examined


def test_a_nominated_node_that_no_longer_fits_falls_back_to_all_nodes() -> None:
    snap = snapshot_of([make_node("n0", score="1"), make_node("n1", LabelFilter="reject"),
                        make_node("n2", score="9")])
    result = GenericScheduler().schedule(profile(snap), CycleState(),
                                         PodInfo(make_pod("p", nominated="n1")))
    assert (result.suggested_host, result.evaluated_nodes) == ("n2", 3)


def test_a_nominated_node_outside_the_prefilter_result_is_not_taken() -> None:
    snap = snapshot_of([make_node("n0"), make_node("n1")])
    fwk = profile(snap, pre_filter=[Restrict.name])
    result = GenericScheduler().schedule(fwk, CycleState(),
                                         PodInfo(make_pod("p", nominated="n1", restrict="n0")))
    assert result.suggested_host == "n0"


def queue_with_nominations(*pods: dict[str, Any]) -> Nominator:
    queue = SchedulingQueue(lambda a, b: False)
    for p in pods:
        queue.add(p)  # status.nominatedNodeName nominates them
    return queue.nominator


def fit_profile(snap: Snapshot, nominator: Any) -> Framework:
    return profile(snap, pre_filter=[Fit.name], filter=[Fit.name], pre_score=[Fit.name],
                   score=[Fit.name], nominator=nominator)


def test_room_kept_for_a_higher_priority_nominated_pod_blocks_the_node() -> None:
    snap = snapshot_of([make_node("big", cpu="4"), make_node("small", cpu="3")])
    pod = PodInfo(make_pod("p", cpu="2"))
    # Without nominations the emptier node wins.
    assert GenericScheduler().schedule(fit_profile(snap, queue_with_nominations()), CycleState(),
                                       pod).suggested_host == "big"
    nominated = make_pod("vip", priority=100, cpu="3", nominated="big")
    fwk = fit_profile(snap, queue_with_nominations(nominated))
    assert GenericScheduler().schedule(fwk, CycleState(), pod).suggested_host == "small"


def test_lower_priority_nominated_pods_do_not_block_the_node() -> None:
    snap = snapshot_of([make_node("big", cpu="4"), make_node("small", cpu="3")])
    nominated = make_pod("low", priority=-5, cpu="3", nominated="big")
    fwk = fit_profile(snap, queue_with_nominations(nominated))
    result = GenericScheduler().schedule(fwk, CycleState(), PodInfo(make_pod("p", cpu="2")))
    assert result.suggested_host == "big"


def test_a_node_blocked_only_by_nominated_pods_is_diagnosed() -> None:
    snap = snapshot_of([make_node("only", cpu="4")])
    nominated = make_pod("vip", priority=100, cpu="3", nominated="only")
    fwk = fit_profile(snap, queue_with_nominations(nominated))
    with pytest.raises(FitError) as err:
        GenericScheduler().schedule(fwk, CycleState(), PodInfo(make_pod("p", cpu="2")))
    assert err.value.message() == "0/1 nodes are available: 1 Insufficient cpu."
    assert err.value.diagnosis.unschedulable_plugins == {Fit.name}


def test_the_pod_does_not_keep_room_for_itself() -> None:
    snap = snapshot_of([make_node("only", cpu="4")])
    pod = make_pod("p", priority=100, cpu="3", nominated="only")
    fwk = fit_profile(snap, queue_with_nominations(pod))
    assert GenericScheduler().schedule(fwk, CycleState(), PodInfo(pod)).suggested_host == "only"
