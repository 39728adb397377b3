"""NodeResourcesFit inside a profile: the FitError a user reads, and a scored placement."""

from __future__ import annotations

import pytest

from scheduler.diagnosis import FitError
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import BindPlugin, Plugin, QueueSortPlugin
from scheduler.framework.plugins.noderesources import BalancedAllocation, Fit
from scheduler.framework.plugins.noderesources.testing import (
    make_node,
    make_pod,
    node_info,
    snapshot_of,
)
from scheduler.framework.runtime import Framework, FrameworkDeps
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.types import PodInfo
from scheduler.schedule_one import GenericScheduler


class Sort(QueueSortPlugin):
    name = "PrioritySort"


class Bind(BindPlugin):
    name = "DefaultBinder"


def profile(snapshot: Snapshot) -> Framework:
    plugins: list[type[Plugin]] = [Fit, BalancedAllocation, Sort, Bind]
    config = {"queueSort": [(Sort.name, 0)], "bind": [(Bind.name, 0)],
              "preFilter": [(Fit.name, 0)], "filter": [(Fit.name, 0)],
              "preScore": [(Fit.name, 0), (BalancedAllocation.name, 0)],
              "score": [(Fit.name, 1), (BalancedAllocation.name, 1)]}
    return Framework("default-scheduler", config, {p.name: p for p in plugins}, {},
                     FrameworkDeps(snapshot=snapshot))


def test_the_fit_error_counts_every_reason_of_every_node() -> None:
    snap = snapshot_of(node_info(make_node("small", cpu=2, memory="8Gi")),
                       node_info(make_node("thin", cpu=8, memory="1Gi")),
                       node_info(make_node("tiny", cpu=1, memory="1Gi")),
                       node_info(make_node("full", cpu=8, memory="8Gi", pods=1),
                                 make_pod("a", {"cpu": 1}, "full")))
    with pytest.raises(FitError) as err:
        GenericScheduler().schedule(profile(snap), CycleState(),
                                    PodInfo(make_pod("p", {"cpu": 3, "memory": "2Gi"})))
    # Upstream sorts the "<count> <reason>" strings.
    assert err.value.message() == ("0/4 nodes are available: 1 Too many pods, "
                                   "2 Insufficient cpu, 2 Insufficient memory.")


def test_the_emptier_and_more_balanced_node_wins() -> None:
    snap = snapshot_of(node_info(make_node("busy", cpu=8, memory="16Gi"),
                                 make_pod("a", {"cpu": 6, "memory": "2Gi"}, "busy")),
                       node_info(make_node("idle", cpu=8, memory="16Gi")))
    result = GenericScheduler().schedule(profile(snap), CycleState(),
                                         PodInfo(make_pod("p", {"cpu": 1, "memory": "2Gi"})))
    assert result.suggested_host == "idle"
