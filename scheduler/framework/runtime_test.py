"""Tests of a profile's Framework (``scheduler/framework/runtime.py``): building it from a
configuration, and the semantics of each extension point (PreFilter, Filter, PostFilter,
Score, Reserve/Unreserve, Permit and waiting pods, Bind), and the events it registers."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from pkg.util.clock import FakeClock
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import (
    NODE_ADD,
    WILDCARD,
    ClusterEventWithHint,
)
from scheduler.framework.interface import (
    BindPlugin,
    EnqueueExtensions,
    FilterPlugin,
    NodeToStatus,
    PermitPlugin,
    Plugin,
    PostFilterPlugin,
    PostFilterResult,
    PreFilterPlugin,
    PreFilterResult,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    default_normalize_score,
)
from scheduler.framework.runtime import Framework, FrameworkDeps, FrameworkError
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status, unresolvable, unschedulable
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.interface import ExtendedHandle

# A configurable fake: each instance answers what its args say, and records calls ----------------


class Fake(PreFilterPlugin, FilterPlugin, PostFilterPlugin, ScorePlugin, ReservePlugin,
           PermitPlugin, BindPlugin):
    """Answers each extension point from ``args`` (point → answer); logs every call in
    ``args["log"]`` as (plugin, point)."""

    def __init__(self, args: dict[str, Any], handle: ExtendedHandle) -> None:
        super().__init__(args, handle)
        self.args = args

    def _answer(self, point: str, default: Any = None) -> Any:
        self.args["log"].append((self.name, point))
        return self.args.get(point, default)

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   snapshot: Snapshot) -> tuple[PreFilterResult | None, Status | None]:
        return self._answer("preFilter", (None, None))

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        return self._answer("filter")

    def post_filter(self, state: CycleState, pod: PodInfo,
                    statuses: NodeToStatus) -> tuple[PostFilterResult | None, Status | None]:
        return self._answer("postFilter", (None, unschedulable()))

    def score(self, state: CycleState, pod: PodInfo,
              node_info: NodeInfo) -> tuple[int, Status | None]:
        return int(node_info.labels.get(self.name, "0")) * self.args.get("scale", 1), None

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return self._answer("reserve")

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        self._answer("unreserve")
        if self.args.get("unreserve_raises"):
            raise RuntimeError("unreserve failed")

    def permit(self, state: CycleState, pod: PodInfo,
               node_name: str) -> tuple[Status | None, float]:
        return self._answer("permit", (None, 0.0))

    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return self._answer("bind")


def fake(name: str) -> type[Fake]:
    return type(name, (Fake,), {"name": name})


class Sort(QueueSortPlugin):
    name = "PrioritySort"


class FilterOnly(FilterPlugin):
    name = "FilterOnly"


class WithEvents(FilterPlugin, EnqueueExtensions):
    name = "WithEvents"

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(NODE_ADD)]


class Normalized(ScorePlugin):
    """Raw scores 0..1000 (a node's ``raw`` label), normalised to 0..100."""

    name = "Normalized"
    has_normalize = True

    def score(self, state: CycleState, pod: PodInfo,
              node_info: NodeInfo) -> tuple[int, Status | None]:
        return int(node_info.labels.get("raw", "0")), None

    def normalize_score(self, state: CycleState, pod: PodInfo,
                        scores: np.ndarray) -> Status | None:
        default_normalize_score(100, False, scores)
        return None


NAMES = ("A", "B", "C")
REGISTRY: dict[str, type[Plugin]] = {
    **{n: fake(n) for n in NAMES}, Sort.name: Sort, FilterOnly.name: FilterOnly,
    WithEvents.name: WithEvents, Normalized.name: Normalized}


def framework(points: Mapping[str, Sequence[str | tuple[str, int]]],
              answers: Mapping[str, Mapping[str, Any]] | None = None, *,
              snapshot: Snapshot | None = None, clock: Any = None,
              log: list[tuple[str, str]] | None = None) -> Framework:
    """A profile with the plugins at ``points`` (names, or (name, weight) at score); ``answers``
    maps a plugin to its args. PrioritySort and a Bind plugin are added when missing."""
    config: dict[str, list[tuple[str, int]]] = {
        point: [e if isinstance(e, tuple) else (e, 0) for e in entries]
        for point, entries in points.items()}
    config.setdefault("queueSort", [(Sort.name, 0)])
    config.setdefault("bind", [("C", 0)])
    shared_log = log if log is not None else []
    args = {n: {"log": shared_log, **(answers or {}).get(n, {})} for n in NAMES}
    return Framework("default-scheduler", config, REGISTRY, args,
                     FrameworkDeps(snapshot=snapshot or Snapshot(), clock=clock))


def pod(name: str = "p") -> PodInfo:
    return PodInfo({"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
                    "spec": {"containers": [{"name": "c"}]}})


def snapshot_of(*labels: dict[str, str]) -> Snapshot:
    snap = Snapshot()
    snap.rebuild([NodeInfo({"metadata": {"name": f"n{i}", "labels": lb},
                            "status": {"allocatable": {"cpu": "1", "pods": "10"}}})
                  for i, lb in enumerate(labels)])
    return snap


# Building a profile ------------------------------------------------------------------------------


def test_an_unknown_plugin_is_named_in_the_error() -> None:
    with pytest.raises(FrameworkError, match="plugin 'Nope' \\(at filter\\) is not registered"):
        framework({"filter": ["Nope"]})


def test_a_plugin_at_a_point_it_does_not_implement_is_an_error() -> None:
    with pytest.raises(FrameworkError, match="plugin 'FilterOnly' does not extend score"):
        framework({"score": ["FilterOnly"]})


def test_a_profile_needs_exactly_one_queue_sort_plugin() -> None:
    with pytest.raises(FrameworkError, match="exactly one queueSort plugin"):
        framework({"queueSort": []})


def test_a_profile_needs_a_bind_plugin() -> None:
    with pytest.raises(FrameworkError, match="at least one bind plugin"):
        framework({"bind": []})


def test_a_plugin_failing_to_start_is_named() -> None:
    class Broken(FilterPlugin):
        name = "Broken"

        def __init__(self, args: object, handle: ExtendedHandle) -> None:
            raise ValueError("bad args")

    with pytest.raises(FrameworkError, match="initializing plugin 'Broken': bad args"):
        Framework("p", {"queueSort": [(Sort.name, 0)], "bind": [("C", 0)],
                        "filter": [("Broken", 0)]}, {**REGISTRY, "Broken": Broken},
                  {"C": {"log": []}})


def test_one_instance_serves_every_point_and_gets_the_profile_as_handle() -> None:
    fwk = framework({"filter": ["A"], "score": ["A"], "reserve": ["A"]})
    a = fwk.plugin("A")
    assert fwk.filter == [a] and fwk.score == [a] and fwk.reserve == [a]
    assert a is not None and a.handle is fwk


def test_activate_reaches_the_queue_once_the_scheduler_wires_it() -> None:
    fwk = framework({})
    fwk.activate([pod("early").pod])  # no queue yet: nothing happens
    moved: list[Sequence[dict[str, Any]]] = []
    fwk.deps.activate = moved.append
    fwk.activate([pod("a").pod])
    assert [[p["metadata"]["name"] for p in pods] for pods in moved] == [["a"]]


# PreFilter / Filter -------------------------------------------------------------------------------


def test_prefilter_unschedulable_lets_the_others_run_and_unresolvable_wins() -> None:
    log: list[tuple[str, str]] = []
    fwk = framework({"preFilter": ["A", "B"]}, {
        "A": {"preFilter": (None, unschedulable("a says no"))},
        "B": {"preFilter": (None, unresolvable("b says never"))}}, log=log)
    _, status, _ = fwk.run_pre_filter(CycleState(), pod())
    assert log == [("A", "preFilter"), ("B", "preFilter")]
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert (status.plugin, status.message()) == ("B", "b says never")


def test_prefilter_results_intersect_and_an_empty_intersection_names_the_plugins() -> None:
    fwk = framework({"preFilter": ["B", "A", "C"]}, {
        "B": {"preFilter": (PreFilterResult({"n1", "n2"}), None)},
        "A": {"preFilter": (PreFilterResult({"n2", "n3"}), None)},
        "C": {"preFilter": (PreFilterResult({"n3"}), None)}})
    result, status, restricting = fwk.run_pre_filter(CycleState(), pod())
    assert restricting == {"A", "B", "C"}
    assert status is not None and status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == "node(s) didn't satisfy plugin(s) [A B C] simultaneously"


def test_prefilter_results_intersect() -> None:
    fwk = framework({"preFilter": ["A", "B"]}, {
        "A": {"preFilter": (PreFilterResult({"n1", "n2"}), None)},
        "B": {"preFilter": (None, None)}})
    result, status, restricting = fwk.run_pre_filter(CycleState(), pod())
    assert status is None and restricting == {"A"}
    assert result is not None and result.node_names == {"n1", "n2"}


def test_prefilter_error_is_an_error() -> None:
    fwk = framework({"preFilter": ["A"]}, {"A": {"preFilter": (None, Status(Code.ERROR, "x"))}})
    _, status, _ = fwk.run_pre_filter(CycleState(), pod())
    assert status is not None and status.code == Code.ERROR
    assert status.message() == "running PreFilter plugin 'A': x"


def test_prefilter_skip_skips_the_plugins_filter() -> None:
    log: list[tuple[str, str]] = []
    fwk = framework({"preFilter": ["A"], "filter": ["A", "B"]},
                    {"A": {"preFilter": (None, Status(Code.SKIP))}},
                    snapshot=snapshot_of({}), log=log)
    state = CycleState()
    fwk.run_pre_filter(state, pod())
    fwk.filter_masks(state, pod())
    fwk.run_filter_plugins(state, pod(), fwk.snapshot.node_infos[0])
    assert [c for c in log if c[1] == "filter"] == [("B", "filter"), ("B", "filter")]


def test_filter_stops_at_the_first_rejection_and_non_rejections_are_errors() -> None:
    log: list[tuple[str, str]] = []
    ni = snapshot_of({}).node_infos[0]
    fwk = framework({"filter": ["A", "B"]}, {"A": {"filter": unresolvable("no")}}, log=log)
    status = fwk.run_filter_plugins(CycleState(), pod(), ni)
    assert status is not None and status.plugin == "A"
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert log == [("A", "filter")]
    fwk = framework({"filter": ["A"]}, {"A": {"filter": Status(Code.WAIT, "?")}})
    status = fwk.run_filter_plugins(CycleState(), pod(), ni)
    assert status is not None and status.code == Code.ERROR
    assert status.message() == "running 'A' filter plugin: ?"


# PostFilter ---------------------------------------------------------------------------------------


def run_post_filter(answers: dict[str, Any], log: list[tuple[str, str]] | None = None
                    ) -> tuple[PostFilterResult | None, Status]:
    fwk = framework({"postFilter": list(answers)},
                    {n: {"postFilter": a} for n, a in answers.items()}, log=log)
    return fwk.run_post_filter(CycleState(), pod(), NodeToStatus())


def test_postfilter_stops_at_the_first_success() -> None:
    log: list[tuple[str, str]] = []
    result, status = run_post_filter({"A": (None, unschedulable("a")),
                                      "B": (PostFilterResult("n1"), None),
                                      "C": (PostFilterResult("n2"), None)}, log)
    assert status.is_success() and status.plugin == "B"
    assert result == PostFilterResult("n1")
    assert [p for p, _ in log] == ["A", "B"]


def test_postfilter_stops_at_unresolvable() -> None:
    log: list[tuple[str, str]] = []
    result, status = run_post_filter({"A": (None, unresolvable("never")),
                                      "B": (PostFilterResult("n1"), None)}, log)
    assert (status.code, status.plugin, status.message()) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "A", "never")
    assert [p for p, _ in log] == ["A"]


def test_postfilter_error_is_an_error() -> None:
    result, status = run_post_filter({"A": (PostFilterResult("n1"), Status(Code.ERROR, "boom"))})
    assert (status.code, status.plugin, status.message()) == (Code.ERROR, "A", "boom")
    assert result is None


def test_postfilter_rejections_merge_reasons_and_the_last_result_decides() -> None:
    result, status = run_post_filter({"A": (PostFilterResult("n1"), unschedulable("a")),
                                      "B": (None, unschedulable("b")),
                                      "C": (PostFilterResult(""), unschedulable("c"))})
    assert (status.code, status.plugin, status.reasons) == (Code.UNSCHEDULABLE, "A",
                                                            ("a", "b", "c"))
    # C's result without a node clears the nomination: upstream keeps the last non-noop one.
    assert result == PostFilterResult("")


def test_postfilter_without_results_leaves_the_nomination_alone() -> None:
    result, status = run_post_filter({"A": (None, unschedulable("a"))})
    assert result is None and status.code == Code.UNSCHEDULABLE


# Score --------------------------------------------------------------------------------------------


def test_scores_are_weighted_and_summed() -> None:
    snap = snapshot_of({"A": "10", "B": "50", "raw": "1000"}, {"A": "20", "B": "0", "raw": "500"})
    fwk = framework({"score": [("A", 3), ("B", 0), ("Normalized", 2)]}, snapshot=snap)
    per: dict[str, np.ndarray] = {}
    totals, status = fwk.run_score(CycleState(), pod(), np.array([0, 1]), per)
    assert status is None
    # weight 0 counts as 1; Normalized is 100 and 50 after normalising.
    assert totals.tolist() == [10 * 3 + 50 + 100 * 2, 20 * 3 + 0 + 50 * 2]
    assert per["Normalized"].tolist() == [100, 50]


@pytest.mark.parametrize(("value", "scale"), [(101, 1), (5, -1)])
def test_a_score_out_of_range_is_an_error(value: int, scale: int) -> None:
    snap = snapshot_of({"A": str(value)})
    fwk = framework({"score": ["A"]}, {"A": {"scale": scale}}, snapshot=snap)
    _, status = fwk.run_score(CycleState(), pod(), np.array([0]))
    assert status is not None and status.code == Code.ERROR
    assert status.message() == (f"plugin 'A' returns an invalid score {value * scale}, it should "
                                f"in the range of [0, 100] after normalizing")


# Reserve / Unreserve ------------------------------------------------------------------------------


def test_a_reserve_failure_unreserves_every_plugin_in_reverse() -> None:
    log: list[tuple[str, str]] = []
    fwk = framework({"reserve": ["A", "B", "C"]},
                    {"B": {"reserve": unschedulable("no room")},
                     "C": {"unreserve_raises": True}}, log=log)
    status = fwk.run_reserve(CycleState(), pod(), "n1")
    assert status is not None and (status.code, status.plugin) == (Code.UNSCHEDULABLE, "B")
    assert log == [("A", "reserve"), ("B", "reserve")]
    log.clear()
    fwk.run_unreserve(CycleState(), pod(), "n1")
    # C never reserved and its Unreserve raises: the others still run.
    assert log == [("C", "unreserve"), ("B", "unreserve"), ("A", "unreserve")]


def test_a_reserve_error_is_an_error() -> None:
    fwk = framework({"reserve": ["A"]}, {"A": {"reserve": Status(Code.ERROR, "x")}})
    status = fwk.run_reserve(CycleState(), pod(), "n1")
    assert status is not None and status.code == Code.ERROR
    assert status.message() == "running Reserve plugin 'A': x"


# Permit and waiting pods --------------------------------------------------------------------------


def wait_in_thread(fwk: Framework, pi: PodInfo) -> tuple[threading.Thread, list[Status | None]]:
    out: list[Status | None] = []
    t = threading.Thread(target=lambda: out.append(fwk.wait_on_permit(pi)), daemon=True)
    t.start()
    return t, out


def waiting_framework(clock: FakeClock, timeouts: Mapping[str, float]) -> Framework:
    return framework({"permit": list(timeouts)},
                     {n: {"permit": (Status(Code.WAIT), t)} for n, t in timeouts.items()},
                     clock=clock)


def test_a_waiting_pod_is_bound_once_every_waiting_plugin_allowed_it() -> None:
    clock = FakeClock()
    fwk = waiting_framework(clock, {"A": 10, "B": 10})
    pi = pod()
    status = fwk.run_permit(CycleState(), pi, "n1")
    assert status is not None and status.code == Code.WAIT
    wp = fwk.get_waiting_pod(pi.uid)
    assert wp is not None and sorted(wp.pending_plugins()) == ["A", "B"]
    t, out = wait_in_thread(fwk, pi)
    wp.allow("A")
    t.join(0.2)
    assert t.is_alive()  # B has not allowed it yet
    wp.allow("B")
    t.join(2)
    assert out == [None]
    assert fwk.get_waiting_pod(pi.uid) is None


def test_a_waiting_pod_rejected_by_a_plugin_fails_with_its_message() -> None:
    clock = FakeClock()
    fwk = waiting_framework(clock, {"A": 10})
    pi = pod()
    fwk.run_permit(CycleState(), pi, "n1")
    t, out = wait_in_thread(fwk, pi)
    fwk.get_waiting_pod(pi.uid).reject("A", "gang failed")  # type: ignore[union-attr]
    t.join(2)
    assert len(out) == 1 and out[0] is not None
    assert (out[0].code, out[0].plugin, out[0].message()) == (Code.UNSCHEDULABLE, "A",
                                                              "gang failed")


def test_a_waiting_pod_times_out_on_the_scheduler_clock() -> None:
    clock = FakeClock()
    fwk = waiting_framework(clock, {"A": 10, "B": 3600})
    pi = pod()
    fwk.run_permit(CycleState(), pi, "n1")
    t, out = wait_in_thread(fwk, pi)
    assert clock.wait_for_waiters(1)
    clock.step(9)
    t.join(0.1)
    assert t.is_alive()
    clock.step(1)
    t.join(2)
    assert not t.is_alive(), "the FakeClock's step must end the wait"
    assert out[0] is not None and out[0].code == Code.UNSCHEDULABLE
    assert out[0].message() == "rejected due to timeout after waiting 10s at plugin A"


def test_permit_timeouts_are_capped_at_15_minutes() -> None:
    clock = FakeClock()
    fwk = waiting_framework(clock, {"A": 3600})
    pi = pod()
    fwk.run_permit(CycleState(), pi, "n1")
    t, out = wait_in_thread(fwk, pi)
    assert clock.wait_for_waiters(1)
    clock.step(15 * 60)
    t.join(2)
    assert out[0] is not None
    assert out[0].message() == "rejected due to timeout after waiting 15m0s at plugin A"


def test_permit_rejection_and_error() -> None:
    fwk = framework({"permit": ["A", "B"]}, {"A": {"permit": (Status(Code.WAIT), 5)},
                                             "B": {"permit": (unschedulable("no"), 0)}})
    status = fwk.run_permit(CycleState(), pod(), "n1")
    assert status is not None and (status.code, status.plugin) == (Code.UNSCHEDULABLE, "B")
    fwk = framework({"permit": ["A"]}, {"A": {"permit": (Status(Code.SKIP), 0)}})
    status = fwk.run_permit(CycleState(), pod(), "n1")
    assert status is not None and status.code == Code.ERROR


# Bind ---------------------------------------------------------------------------------------------


def test_bind_skip_passes_to_the_next_plugin_and_the_first_answer_decides() -> None:
    log: list[tuple[str, str]] = []
    fwk = framework({"bind": ["A", "B", "C"]}, {"A": {"bind": Status(Code.SKIP)}}, log=log)
    assert fwk.run_bind(CycleState(), pod(), "n1") is None
    assert log == [("A", "bind"), ("B", "bind")]


def test_bind_when_every_plugin_skips() -> None:
    fwk = framework({"bind": ["A", "B"]}, {"A": {"bind": Status(Code.SKIP)},
                                           "B": {"bind": Status(Code.SKIP)}})
    status = fwk.run_bind(CycleState(), pod(), "n1")
    assert status is not None and status.code == Code.SKIP


def test_a_bind_error_fails_the_binding() -> None:
    log: list[tuple[str, str]] = []
    fwk = framework({"bind": ["A", "B"]}, {"A": {"bind": Status(Code.ERROR, "conflict")}},
                    log=log)
    status = fwk.run_bind(CycleState(), pod(), "n1")
    assert status is not None and (status.code, status.plugin) == (Code.ERROR, "A")
    assert "conflict" in status.message()
    assert log == [("A", "bind")]


# Events and ForgetPod ----------------------------------------------------------------------------


def test_plugins_without_enqueue_extensions_are_woken_by_every_event() -> None:
    fwk = framework({"filter": ["FilterOnly", "WithEvents"]})
    events = fwk.events_to_register()
    assert events["FilterOnly"] == [ClusterEventWithHint(WILDCARD)]
    assert events["WithEvents"] == [ClusterEventWithHint(NODE_ADD)]


def test_forget_pod_reaches_the_plugins_that_keep_assigned_pods() -> None:
    forgotten: list[str] = []

    class Keeper(FilterPlugin):
        name = "Keeper"

        def __init__(self, args: object, handle: ExtendedHandle) -> None:
            super().__init__(None, handle)
            handle.register_forget_pod_handler(lambda pod: forgotten.append(pod.key))

    fwk = Framework("p", {"queueSort": [(Sort.name, 0)], "bind": [("C", 0)],
                          "filter": [("Keeper", 0), ("FilterOnly", 0)]},
                    {**REGISTRY, "Keeper": Keeper}, {"C": {"log": []}})
    fwk.forget_pod(pod())
    assert forgotten == ["default/p"]
