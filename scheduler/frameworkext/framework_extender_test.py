"""Transformers through a whole scheduling decision: what BeforePreFilter, BeforeFilter and
BeforeScore change is what the PreFilter, Filter and Score plugins see, only where the
transformer's plugin is enabled; a transformer's failure is the point's status."""

from __future__ import annotations

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
    QueueSortPlugin,
    ScorePlugin,
)
from scheduler.framework.runtime import Framework, FrameworkDeps
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status, unschedulable
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.interface import (
    FilterTransformer,
    PreFilterTransformer,
    ScoreTransformer,
)
from scheduler.schedule_one import GenericScheduler


def with_label(node_info: NodeInfo, key: str, value: str) -> NodeInfo:
    node = dict(node_info.node or {})
    meta = dict(node.get("metadata") or {})
    meta["labels"] = {**(meta.get("labels") or {}), key: value}
    node["metadata"] = meta
    clone = node_info.clone()
    clone.set_node(node)
    return clone


class Sort(QueueSortPlugin):
    name = "PrioritySort"


class Bind(BindPlugin):
    name = "DefaultBinder"


class Tag(PreFilterPlugin, PreFilterTransformer):
    """Labels the pod ``tagged`` before PreFilter; records AfterPreFilter's result."""

    name = "Tag"

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   snapshot: Snapshot) -> tuple[PreFilterResult | None, Status | None]:
        return None, None

    def before_pre_filter(self, state: CycleState,
                          pod: PodInfo) -> tuple[PodInfo, Status | None]:
        if "refuse" in pod.labels:
            return pod, unschedulable("the pod is refused")
        raw = dict(pod.pod, metadata={**pod.pod["metadata"],
                                      "labels": {**pod.labels, "tagged": "yes"}})
        return PodInfo(raw), None

    def after_pre_filter(self, state: CycleState, pod: PodInfo,
                         result: PreFilterResult | None) -> Status | None:
        state.write("after", (pod.labels.get("tagged"), result))
        return None


class NeedsTag(PreFilterPlugin):
    """Rejects pods without the ``tagged`` label; restricts them to n1 otherwise."""

    name = "NeedsTag"

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   snapshot: Snapshot) -> tuple[PreFilterResult | None, Status | None]:
        if pod.labels.get("tagged") != "yes":
            return None, unschedulable("pod is not tagged")
        return PreFilterResult({"n1"}), None


class Open(FilterPlugin, ScorePlugin, FilterTransformer):
    """Before Filter, opens (labels ``open``) the nodes labelled ``openable``; fails on nodes
    labelled ``broken``. Its own Filter passes every node, its Score is 0."""

    name = "Open"

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        return None

    def score(self, state: CycleState, pod: PodInfo,
              node_info: NodeInfo) -> tuple[int, Status | None]:
        return 0, None

    def before_filter(self, state: CycleState, pod: PodInfo,
                      node_info: NodeInfo) -> tuple[PodInfo, NodeInfo, Status | None]:
        if "broken" in node_info.labels:
            return pod, node_info, unschedulable("node is broken")
        if "openable" in node_info.labels:
            return pod, with_label(node_info, "open", "yes"), None
        return pod, node_info, None


class NeedsOpen(FilterPlugin):
    name = "NeedsOpen"

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        return None if node_info.labels.get("open") == "yes" else unschedulable("node is shut")


class Boost(FilterPlugin, ScorePlugin, ScoreTransformer):
    """Before Score, gives the nodes labelled ``boostable`` a ``score`` of 100. Its own
    Filter passes every node, its Score is 0."""

    name = "Boost"

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        return None

    def score(self, state: CycleState, pod: PodInfo,
              node_info: NodeInfo) -> tuple[int, Status | None]:
        return 0, None

    def before_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
                     ) -> tuple[PodInfo, Sequence[NodeInfo], Status | None]:
        return pod, [with_label(n, "score", "100") if "boostable" in n.labels else n
                     for n in nodes], None


class LabelScore(ScorePlugin):
    name = "LabelScore"

    def score(self, state: CycleState, pod: PodInfo,
              node_info: NodeInfo) -> tuple[int, Status | None]:
        return int(node_info.labels.get("score", "0")), None


class Drop(ScorePlugin, ScoreTransformer):
    """Before Score, drops the first node (which a transformer may not do)."""

    name = "Drop"

    def score(self, state: CycleState, pod: PodInfo,
              node_info: NodeInfo) -> tuple[int, Status | None]:
        return 0, None

    def before_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
                     ) -> tuple[PodInfo, Sequence[NodeInfo], Status | None]:
        return pod, nodes[1:], None


PLUGINS: dict[str, type[Plugin]] = {p.name: p for p in (
    Sort, Bind, Tag, NeedsTag, Open, NeedsOpen, Boost, LabelScore, Drop)}


def profile(nodes: Sequence[dict[str, Any]], **points: Sequence[str]) -> Framework:
    snap = Snapshot()
    snap.rebuild([NodeInfo(n) for n in nodes])
    config = {"queueSort": [(Sort.name, 0)], "bind": [(Bind.name, 0)],
              **{point: [(n, 1) for n in names] for point, names in points.items()}}
    return Framework("default-scheduler", config, PLUGINS, {}, FrameworkDeps(snapshot=snap))


def node(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


def pod(**labels: str) -> PodInfo:
    return PodInfo({"metadata": {"name": "p", "namespace": "default", "uid": "uid-p",
                                 "labels": labels},
                    "spec": {"containers": [{"name": "c"}]}, "status": {}})


def schedule(fwk: Framework, p: PodInfo, state: CycleState | None = None) -> str:
    return GenericScheduler().schedule(fwk, state or CycleState(), p).suggested_host


def test_pre_filter_plugins_see_the_transformed_pod() -> None:
    nodes = [node("n0"), node("n1")]
    with pytest.raises(FitError, match="pod is not tagged"):
        schedule(profile(nodes, preFilter=["NeedsTag"]), pod())
    state = CycleState()
    assert schedule(profile(nodes, preFilter=["Tag", "NeedsTag"]), pod(), state) == "n1"
    tagged, result = state.read("after")
    assert tagged == "yes" and result == PreFilterResult({"n1"})


def test_a_failing_before_pre_filter_is_the_pre_filter_status() -> None:
    fwk = profile([node("n0")], preFilter=["Tag", "NeedsTag"])
    result, status, _ = fwk.run_pre_filter(CycleState(), pod(refuse="yes"))
    assert result is None and status is not None
    assert (status.code, status.plugin, status.message()) == (
        Code.UNSCHEDULABLE, "Tag", "the pod is refused")


def test_filter_plugins_see_the_transformed_node() -> None:
    nodes = [node("n0"), node("n1", openable="yes")]
    with pytest.raises(FitError, match="2 node is shut"):
        schedule(profile(nodes, filter=["NeedsOpen"]), pod())
    fwk = profile(nodes, filter=["Open", "NeedsOpen"])
    assert schedule(fwk, pod()) == "n1"
    # Preemption and nominated pods filter single nodes the same way.
    n0, n1 = fwk.snapshot.node_infos
    assert fwk.run_filter_plugins_with_nominated_pods(CycleState(), pod(), n1) is None
    status = fwk.run_filter_plugins_with_nominated_pods(CycleState(), pod(), n0)
    assert status is not None and status.plugin == "NeedsOpen"


def test_a_transformer_runs_only_where_its_plugin_is_enabled() -> None:
    nodes = [node("n0"), node("n1", openable="yes", boostable="yes", score="10"),
             node("n2", score="50")]
    # Open and Boost are enabled at score only: Filter sees the nodes as they are...
    with pytest.raises(FitError, match="3 node is shut"):
        schedule(profile(nodes, filter=["NeedsOpen"], score=["Open", "LabelScore"]), pod())
    # ... and Boost, not enabled at score, changes no score.
    assert schedule(profile(nodes, filter=["Boost"], score=["LabelScore"]), pod()) == "n2"


def test_a_failing_before_filter_rejects_the_node_as_the_transformer() -> None:
    nodes = [node("n0", broken="yes", openable="yes"), node("n1")]
    with pytest.raises(FitError) as err:
        schedule(profile(nodes, filter=["Open", "NeedsOpen"]), pod())
    diagnosis = err.value.diagnosis
    assert err.value.message() == "0/2 nodes are available: 1 node is broken, 1 node is shut."
    status = diagnosis.node_to_status.get("n0")
    assert status is not None
    assert (status.code, status.plugin, status.message()) == (
        Code.UNSCHEDULABLE, "Open", "node is broken")
    assert diagnosis.unschedulable_plugins == {"Open", "NeedsOpen"}
    assert diagnosis.nearest_miss is not None


def test_score_plugins_see_the_transformed_nodes() -> None:
    nodes = [node("n0", score="50"), node("n1", score="10", boostable="yes")]
    assert schedule(profile(nodes, score=["LabelScore"]), pod()) == "n0"
    assert schedule(profile(nodes, score=["Boost", "LabelScore"]), pod()) == "n1"


def test_before_score_may_not_change_the_nodes_to_score() -> None:
    fwk = profile([node("n0"), node("n1")], score=["Drop"])
    _, status = fwk.run_score(CycleState(), pod(), np.arange(2))
    assert status is not None
    assert (status.code, status.plugin, status.message()) == (
        Code.ERROR, "Drop", "BeforeScore of plugin 'Drop' changed the nodes to score")
