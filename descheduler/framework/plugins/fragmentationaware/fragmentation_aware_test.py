"""FragmentationAware from the in-tree registry with DefaultEvictor, after upstream's
``fragmentation_aware_test.go`` and ``scoring_test.go``: the imbalance score, the best
candidate per node, thresholds, node fit, dry run, and the args' defaults and validation."""

from __future__ import annotations

import logging
import math
from typing import Any

import pytest

from descheduler.apis.config.args import FragmentationAwareArgs
from descheduler.framework.plugins.balance_testing import BalanceRun, balance_run
from descheduler.framework.plugins.fragmentationaware.scoring import NodeImbalance, std_dev
from descheduler.framework.testing import node, pod


def test_std_dev_is_the_population_standard_deviation() -> None:
    assert std_dev([]) == 0.0
    assert std_dev([0.5, 0.5]) == 0.0
    assert math.isclose(std_dev([0.85, 0.4]), 0.225)


def test_imbalance_counts_requests_and_pods_and_skips_resources_the_node_lacks() -> None:
    n = node("n1", 4000, 4000, pods=10)
    pods = [pod("a", 3000, 0, "n1"), pod("b", 400, 1600, "n1")]
    state = NodeImbalance.of(n, pods, ["cpu", "memory", "pods", "example.com/gpu"])
    assert state.resources == ["cpu", "memory", "pods"]
    assert state.requested == [3400, 1600, 2]
    assert math.isclose(state.score(), std_dev([0.85, 0.4, 0.2]))
    assert math.isclose(state.score_without(pods[0]), std_dev([0.1, 0.4, 0.1]))


def nodes() -> list[dict[str, Any]]:
    return [node("n1", 4000, 4000, 10), node("n2", 4000, 4000, 10)]


def cpu_heavy() -> list[dict[str, Any]]:
    """n1: cpu 85%, memory 40% (imbalance 0.225); evicting ``a`` leaves 10%/40% (0.15)."""
    return [pod("a", 3000, 0, "n1"), pod("b", 400, 1600, "n1")]


def env(pods: list[dict[str, Any]], node_list: list[dict[str, Any]] | None = None,
        **extra: Any) -> BalanceRun:
    return balance_run("FragmentationAware", FragmentationAwareArgs.model_validate(extra),
                       node_list or nodes(), pods)


def test_the_pod_that_evens_the_node_out_most_is_evicted(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):
        assert env(cpu_heavy()).run() == ["a"]
    assert "fragmentation reduction: stdBefore=0.2250 stdAfter=0.1500 gain=0.0750" in caplog.text


def test_at_most_one_pod_per_node_and_pass() -> None:
    pods = [*cpu_heavy(), pod("c", 3000, 0, "n2"), pod("d", 400, 1600, "n2")]
    three = [*nodes(), node("n3", 8000, 8000, 10)]
    assert env(pods, three).run() == ["a", "c"]


@pytest.mark.parametrize("extra", [{"imbalanceThreshold": 0.25},
                                   {"minImprovementThreshold": 0.08},
                                   {"paused": True}, {"dryRun": True},
                                   {"nodeSelector": {"matchLabels": {"pool": "x"}}},
                                   {"evictableNamespaces": {"include": ["other"]}},
                                   {"podSelectors": [{"selector": {"matchLabels": {"a": "b"}}}]}])
def test_nothing_is_evicted(extra: dict[str, Any]) -> None:
    assert env(cpu_heavy(), **extra).run() == []


def test_node_fit_needs_another_selected_node_with_room() -> None:
    small = [node("n1", 4000, 4000, 10), node("n2", 1000, 4000, 10)]
    assert env(cpu_heavy(), small).run() == []
    assert env(cpu_heavy(), small, nodeFit=False).run() == ["a"]


def test_defaults() -> None:
    a = FragmentationAwareArgs()
    assert (a.node_fit, a.resources, a.imbalance_threshold, a.min_improvement_threshold) == (
        True, ["cpu", "memory"], 0.15, 0.02)
    assert FragmentationAwareArgs.model_validate({"resources": []}).resources == ["cpu",
                                                                                 "memory"]


@pytest.mark.parametrize("data, error", [
    ({"resources": ["cpu", "cpu"]}, "resources[1]: Duplicate value: 'cpu'"),
    ({"imbalanceThreshold": -0.1}, "imbalanceThreshold: must be greater than or equal to 0"),
    ({"minImprovementThreshold": -1}, "minImprovementThreshold: must be greater than or equal"),
    ({"evictableNamespaces": {"include": ["a"], "exclude": ["b"]}},
     "evictableNamespaces: only one of Include/Exclude namespaces can be set"),
    ({"nodeSelector": {"matchExpressions": [{"key": "a", "operator": "Bad"}]}},
     "nodeSelector"),
])
def test_args_validation(data: dict[str, Any], error: str) -> None:
    errors = [str(e) for e in FragmentationAwareArgs.model_validate(data).validate_args()]
    assert any(e.startswith(error) for e in errors), errors
