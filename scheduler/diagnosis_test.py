"""Tests of the why-pending diagnosis (``scheduler/diagnosis.py``): kube-scheduler's FitError
message, the per-plugin rejection counts, the nearest miss, and the text the CLI prints."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.diagnosis import Diagnosis, FitError, explain_text
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import BindPlugin, NodeToStatus, QueueSortPlugin
from scheduler.framework.plugins.noderesources import Fit
from scheduler.framework.plugins.tainttoleration import TaintToleration
from scheduler.framework.runtime import Framework, FrameworkDeps
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Status, unresolvable, unschedulable
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.schedule_one import GenericScheduler

TAINT = "node(s) had untolerated taint {a: b}"


def fit_error(statuses: dict[str, Status], nodes: int = 3, **fields: Any) -> FitError:
    return FitError("default/p", nodes, Diagnosis(node_to_status=NodeToStatus(statuses),
                                                  **fields))


# The FitError message -----------------------------------------------------------------------


def test_the_message_is_a_sorted_histogram_of_the_reasons() -> None:
    err = fit_error({"n1": unschedulable("Insufficient cpu"), "n2": unresolvable(TAINT),
                     "n3": unschedulable("Insufficient cpu")})
    assert err.message() == ("0/3 nodes are available: 1 node(s) had untolerated taint {a: b}, "
                             "2 Insufficient cpu.")
    assert str(err) == err.message()


def test_every_reason_of_a_node_counts() -> None:
    err = fit_error({"n1": unschedulable("Insufficient cpu", "Insufficient memory"),
                     "n2": unschedulable("Insufficient memory")}, nodes=2)
    assert err.message() == "0/2 nodes are available: 1 Insufficient cpu, 2 Insufficient memory."


def test_nodes_without_their_own_status_share_the_absent_one() -> None:
    d = Diagnosis(node_to_status=NodeToStatus(
        {"n1": unschedulable("Insufficient cpu")},
        absent=unresolvable("node(s) didn't satisfy plugin(s) [NodeAffinity]")))
    assert FitError("default/p", 4, d).message() == (
        "0/4 nodes are available: 1 Insufficient cpu, "
        "3 node(s) didn't satisfy plugin(s) [NodeAffinity].")


def test_a_prefilter_message_replaces_the_histogram() -> None:
    d = Diagnosis(node_to_status=NodeToStatus(absent=unschedulable("too many claims")),
                  pre_filter_msg="too many claims")
    assert FitError("default/p", 3, d).message() == "0/3 nodes are available: too many claims."


def test_the_postfilter_message_is_appended() -> None:
    err = fit_error({"n1": unschedulable("Insufficient cpu"), "n2": unresolvable(TAINT),
                     "n3": unschedulable("Insufficient cpu")},
                    post_filter_msg="preemption: 0/3 nodes are available: 1 Preemption is not "
                                    "helpful for scheduling, 2 No preemption victims found for "
                                    "incoming pod")
    assert err.message() == (
        "0/3 nodes are available: 1 node(s) had untolerated taint {a: b}, 2 Insufficient cpu. "
        "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
        "2 No preemption victims found for incoming pod.")


# Through a profile: counts, nearest miss ------------------------------------------------------


class Sort(QueueSortPlugin):
    name = "PrioritySort"


class Bind(BindPlugin):
    name = "DefaultBinder"


def make_node(name: str, cpu: str, tainted: bool = False) -> dict[str, Any]:
    spec = {"taints": [{"key": "a", "value": "b", "effect": "NoSchedule"}]} if tainted else {}
    return {"metadata": {"name": name}, "spec": spec,
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}


def make_pod(cpu: str) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "default", "uid": "uid-p"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}


def diagnose(nodes: list[dict[str, Any]], cpu: str) -> FitError:
    snap = Snapshot()
    snap.rebuild([NodeInfo(n) for n in nodes])
    plugins = {p.name: p for p in (Sort, Bind, TaintToleration, Fit)}
    config = {"queueSort": [(Sort.name, 0)], "bind": [(Bind.name, 0)],
              "preFilter": [(Fit.name, 0)],
              "filter": [(TaintToleration.name, 0), (Fit.name, 0)]}
    fwk = Framework("default-scheduler", config, plugins, {}, FrameworkDeps(snapshot=snap))
    with pytest.raises(FitError) as err:
        GenericScheduler().schedule(fwk, CycleState(), PodInfo(make_pod(cpu)))
    return err.value


NODES = [make_node("tainted-and-small", "1", tainted=True), make_node("tainted", "8", tainted=True),
         make_node("small", "1500m"), make_node("tiny", "1")]


def test_the_message_counts_the_first_failing_plugin_of_each_node() -> None:
    assert diagnose(NODES, "2").message() == (
        "0/4 nodes are available: 2 Insufficient cpu, "
        "2 node(s) had untolerated taint {a: b}.")


def test_plugin_rejections_count_every_node_each_plugin_rejected() -> None:
    d = diagnose(NODES, "2").diagnosis
    # The tainted small node counts for both plugins.
    assert {k: v.nodes for k, v in d.plugin_rejections.items()} == {
        TaintToleration.name: 2, Fit.name: 3}
    assert dict(d.plugin_rejections[Fit.name].reasons) == {"Insufficient cpu": 3}
    assert d.unschedulable_plugins == {TaintToleration.name, Fit.name}


def test_the_nearest_miss_is_a_node_failing_the_fewest_plugins_with_how_far_it_was() -> None:
    nodes = [make_node("tainted-and-small", "1", tainted=True), make_node("small", "1500m"),
             make_node("tiny", "1", tainted=True)]
    miss = diagnose(nodes, "2").diagnosis.nearest_miss
    assert miss is not None
    assert (miss.node, miss.failed_plugins) == ("small", [Fit.name])
    assert miss.reasons == {Fit.name: ["Insufficient cpu"]}
    assert miss.details == {Fit.name: "cpu: requests 2, free 1500m"}


def test_explain_text_names_the_plugins_and_the_nearest_miss() -> None:
    err = diagnose(NODES, "2")
    err.diagnosis.post_filter_msg = "preemption: not eligible"
    text = explain_text("default/p", err.diagnosis.to_dict(), err.message())
    lines = text.splitlines()
    assert lines[0] == "Pod default/p is pending."
    assert lines[1] == f"  {err.message()}"
    assert "  TaintToleration: 2 node(s) — 2× node(s) had untolerated taint {a: b}" in lines
    assert "  NodeResourcesFit: 3 node(s) — 3× Insufficient cpu" in lines
    assert "Nearest miss: node tainted failed 1 filter(s): TaintToleration" in lines
    assert any(line.startswith("  TaintToleration: node(s) had untolerated taint {a: b} (")
               for line in lines)
    assert lines[-1] == "PostFilter: preemption: not eligible"


def test_explain_text_of_a_prefilter_rejection() -> None:
    d = Diagnosis(pre_filter_msg="too many claims")
    text = explain_text("default/p", d.to_dict(), "0/3 nodes are available: too many claims.")
    assert text.splitlines()[-1] == "  PreFilter: too many claims"
    assert "Nearest miss" not in text
