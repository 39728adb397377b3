"""Which victims would violate a PodDisruptionBudget."""

from __future__ import annotations

from typing import Any

from scheduler.framework.plugins.defaultpreemption.pdb import (
    budgets_of,
    filter_pods_with_pdb_violation,
)
from scheduler.framework.plugins.defaultpreemption.testing import make_pod
from scheduler.framework.types import PodInfo


def pdb(selector: Any, allowed: int, namespace: str = "default",
        disrupted: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"metadata": {"name": "pdb", "namespace": namespace},
            "spec": {"selector": selector},
            "status": {"disruptionsAllowed": allowed,
                       "disruptedPods": {name: "2024-01-01T00:00:00Z" for name in disrupted}}}


def split(pods: list[PodInfo], *pdbs: dict[str, Any]) -> tuple[list[str], list[str]]:
    violating, ok = filter_pods_with_pdb_violation(pods, budgets_of(pdbs))
    return [p.name for p in violating], [p.name for p in ok]


APP = {"matchLabels": {"app": "web"}}


def web(name: str, namespace: str = "default") -> PodInfo:
    return PodInfo(make_pod(name, namespace=namespace, labels={"app": "web"}))


def test_the_budget_runs_out_in_order() -> None:
    pods = [web("w1"), web("w2"), web("w3")]
    assert split(pods, pdb(APP, 1)) == (["w2", "w3"], ["w1"])


def test_other_namespaces_and_labels_are_not_budgeted() -> None:
    pods = [web("w1", namespace="other"), PodInfo(make_pod("plain")),
            PodInfo(make_pod("db", labels={"app": "db"}))]
    assert split(pods, pdb(APP, 0)) == ([], ["w1", "plain", "db"])


def test_pods_the_server_already_counted_do_not_use_the_budget() -> None:
    pods = [web("w1"), web("w2")]
    assert split(pods, pdb(APP, 1, disrupted=("w1",))) == ([], ["w1", "w2"])


def test_empty_missing_and_invalid_selectors_match_nothing() -> None:
    pods = [web("w1")]
    for selector in ({}, None, {"matchExpressions": [{"key": "app", "operator": "Bogus"}]}):
        assert split(pods, pdb(selector, 0)) == ([], ["w1"])


def test_every_matching_budget_counts() -> None:
    pods = [web("w1")]
    exists = {"matchExpressions": [{"key": "app", "operator": "Exists"}]}
    assert split(pods, pdb(APP, 1), pdb(exists, 0)) == (["w1"], [])
