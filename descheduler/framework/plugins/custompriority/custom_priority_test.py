"""CustomPriority from the in-tree registry with DefaultEvictor, after upstream's
``custom_priority_test.go``: levels from node selectors, BestEffort (smallest pods first,
node fit, the 5-miss early stop), DrainNode (all or nothing, reservations, cordons), dry run,
pause, and the args' validation."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from descheduler.apis.config.args import CustomPriorityArgs
from descheduler.framework.plugins.balance_testing import BalanceRun, balance_run
from descheduler.framework.testing import node, pod
from pkg.client.errors import ApiError

GOLD = {"name": "gold", "nodeSelector": {"matchLabels": {"tier": "gold"}}}
SILVER = {"name": "silver", "nodeSelector": {"matchLabels": {"tier": "silver"}}}
BRONZE = {"name": "bronze", "nodeSelector": {"matchLabels": {"tier": "bronze"}}}


def args(**extra: Any) -> CustomPriorityArgs:
    return CustomPriorityArgs.model_validate({"evictionOrder": [GOLD, SILVER]} | extra)


def env(pods: list[dict[str, Any]], nodes: list[dict[str, Any]] | None = None,
        **extra: Any) -> BalanceRun:
    nodes = nodes or [node("g1", 4000, 4000, 10, tier="gold"),
                      node("s1", 2000, 4000, 10, tier="silver")]
    return balance_run("CustomPriority", args(**extra), nodes, pods)


def test_best_effort_moves_pods_that_fit_a_cheaper_node_smallest_first(
        caplog: pytest.LogCaptureFixture) -> None:
    pods = [pod("big", 3000, 0, "g1"), pod("mid", 500, 200, "g1"), pod("small", 500, 100, "g1")]
    with caplog.at_level(logging.INFO):
        assert env(pods).run() == ["small", "mid"]
    assert "evicting from gold priority resource to lower priority resource" in caplog.text


def test_without_node_fit_every_filtered_pod_moves() -> None:
    pods = [pod("big", 3000, 0, "g1"), pod("small", 500, 100, "g1")]
    assert env(pods, nodeFit=False).run() == ["small", "big"]


def test_best_effort_gives_up_on_a_node_after_five_misses_in_a_row() -> None:
    # Pods whose node selector no target matches sort first (smaller cpu); the pod that would
    # fit comes after them.
    def misses(n: int) -> list[dict[str, Any]]:
        return [pod(f"m{i}", 100, 0, "g1", nodeSelector={"zone": "x"}) for i in range(n)]
    assert env([*misses(5), pod("fits", 200, 0, "g1")]).run() == []
    assert env([*misses(4), pod("fits", 200, 0, "g1")]).run() == ["fits"]


def test_levels_come_from_the_first_matching_selector_and_need_two_with_nodes() -> None:
    nodes = [node("g1", tier="gold"), node("x1", tier="none")]
    assert env([pod("p1", 100, 0, "g1")], nodes).run() == []
    # Every later level is a target; a level without nodes is skipped.
    nodes = [node("g1", tier="gold"), node("b1", tier="bronze")]
    assert balance_run("CustomPriority",
                       args(evictionOrder=[GOLD, SILVER, BRONZE]), nodes,
                       [pod("p1", 100, 0, "g1")]).run() == ["p1"]


def test_the_cheapest_level_is_never_a_source() -> None:
    assert env([pod("p1", 100, 0, "s1")]).run() == []


def test_node_selector_namespaces_and_pod_selectors_narrow_the_candidates() -> None:
    pods = [pod("web", 100, 0, "g1", labels={"app": "web"}),
            pod("db", 100, 0, "g1", labels={"app": "db"}),
            pod("other-ns", 100, 0, "g1", namespace="kept", labels={"app": "web"})]
    run = env(pods, podSelectors=[{"name": "web", "selector": {"matchLabels": {"app": "web"}}}],
              evictableNamespaces={"exclude": ["kept"]})
    assert run.run() == ["web"]
    assert env(pods, nodeSelector={"matchLabels": {"tier": "gold"}}).run() == []


def test_paused_and_dry_run_evict_nothing() -> None:
    assert env([pod("p1", 100, 0, "g1")], paused=True).run() == []
    assert env([pod("p1", 100, 0, "g1")], dryRun=True).run() == []


# --- DrainNode -------------------------------------------------------------------------------

def drain_nodes() -> list[dict[str, Any]]:
    return [node("g1", 4000, 4000, 10, tier="gold"), node("g2", 4000, 4000, 10, tier="gold"),
            node("s1", 2000, 4000, 10, tier="silver")]


def test_drain_node_evicts_a_node_only_when_all_its_pods_can_be_placed() -> None:
    # g1's pods (1500m) fit s1's 2000m; g2's (1000m) no longer fit the 500m left.
    pods = [pod("a", 1000, 0, "g1"), pod("b", 500, 0, "g1"), pod("c", 1000, 0, "g2")]
    run = env(pods, drain_nodes(), mode="DrainNode", autoCordon=True)
    assert run.run() == ["b", "a"]
    assert run.kube.patches == [("Node", "g1", {"spec": {"unschedulable": True}})]


def test_drain_node_skips_a_node_with_a_pod_that_fits_nowhere() -> None:
    pods = [pod("a", 100, 0, "g1"), pod("huge", 3000, 0, "g1"), pod("c", 1000, 0, "g2")]
    assert env(pods, drain_nodes(), mode="DrainNode").run() == ["c"]


def test_drain_node_uncordons_when_an_eviction_fails() -> None:
    pods = [pod("a", 100, 0, "g1"), pod("b", 200, 0, "g1")]
    run = env(pods, drain_nodes(), mode="DrainNode", autoCordon=True)
    run.client.refuse["/api/v1/namespaces/default/pods/a/eviction"] = ApiError(429, "TooMany")
    # The refused attempt on a is the last: b is not tried.
    assert run.run() == ["a"]
    assert [p[2] for p in run.kube.patches] == [{"spec": {"unschedulable": True}},
                                                {"spec": {"unschedulable": False}}]


def test_drain_node_dry_run_still_cordons_as_upstream_does() -> None:
    run = env([pod("a", 100, 0, "g1")], drain_nodes(), mode="DrainNode", autoCordon=True,
              dryRun=True)
    assert run.run() == []
    assert run.kube.patches == [("Node", "g1", {"spec": {"unschedulable": True}})]


# --- args ------------------------------------------------------------------------------------

def test_defaults() -> None:
    a = CustomPriorityArgs()
    assert (a.node_fit, a.mode, a.auto_cordon, a.paused, a.dry_run) == (
        True, "BestEffort", False, False, False)


@pytest.mark.parametrize("data, error", [
    ({}, "evictionOrder: CustomPriority requires at least 2 resource priority levels"),
    ({"evictionOrder": [GOLD, GOLD]}, "evictionOrder[1].name: duplicate priority name: gold"),
    ({"evictionOrder": [GOLD, {"name": "p2"}]}, "evictionOrder[1].nodeSelector: cannot be nil"),
    ({"evictionOrder": [GOLD, SILVER | {"name": ""}]}, "evictionOrder[1].name: cannot be empty"),
    ({"evictionOrder": [GOLD, SILVER | {"name": "Bad_Name"}]},
     "evictionOrder[1].name: Bad_Name is invalid"),
    ({"evictionOrder": [GOLD, SILVER | {"keepThreshold": {"cpu": 120}}]},
     "evictionOrder[1].keepThreshold.cpu: resource threshold for cpu must be between 0 and 100"),
    ({"evictionOrder": [GOLD, SILVER], "mode": "Drain"}, "mode: unsupported value 'Drain'"),
    ({"evictionOrder": [GOLD, SILVER], "podSelectors": [{"selector": {}}]},
     "podSelectors[0].name: cannot be empty"),
])
def test_args_validation(data: dict[str, Any], error: str) -> None:
    errors = [str(e) for e in CustomPriorityArgs.model_validate(data).validate_args()]
    assert any(e.startswith(error) for e in errors), errors
