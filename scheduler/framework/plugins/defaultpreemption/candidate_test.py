"""Choosing the node to preempt on: each tie-breaker in upstream's order."""

from __future__ import annotations

import pytest

from api.meta import parse_time
from scheduler.framework.plugins.defaultpreemption.candidate import (
    Victims,
    default_score_funcs,
    pick_one_node_for_preemption,
)
from scheduler.framework.plugins.defaultpreemption.testing import make_pod
from scheduler.framework.types import PodInfo

NOW = parse_time("2024-01-02T00:00:00Z").timestamp()


def pods(*specs: tuple[int, str | None]) -> list[PodInfo]:
    """Victims as (priority, start time), listed most important first."""
    return [PodInfo(make_pod(f"v{i}", prio, start_time=start))
            for i, (prio, start) in enumerate(specs)]


def pick(nodes: dict[str, Victims]) -> str:
    return pick_one_node_for_preemption(nodes, default_score_funcs(nodes, NOW))


@pytest.mark.parametrize("nodes, want", [
    pytest.param({"a": Victims(pods((1, None)), 1), "b": Victims(pods((9, None), (9, None)))},
                 "b", id="fewest PDB violations first"),
    pytest.param({"a": Victims(pods((5, None))), "b": Victims(pods((3, None), (3, None)))},
                 "b", id="then the lowest highest-priority victim"),
    pytest.param({"a": Victims(pods((5, None), (4, None))),
                  "b": Victims(pods((5, None), (1, None)))},
                 "b", id="then the smallest sum of priorities"),
    pytest.param({"a": Victims(pods((-5, None), (-5, None))), "b": Victims(pods((-5, None)))},
                 "b", id="negative priorities do not make more victims cheaper"),
    pytest.param({"a": Victims(pods((5, None))),
                  "b": Victims(pods((5, None), (-2**31, None)))},
                 "a", id="then the fewest victims (equal sums need the lowest priority)"),
    pytest.param({"a": Victims(pods((5, "2024-01-01T00:00:00Z"), (1, "2024-01-01T12:00:00Z"))),
                  "b": Victims(pods((5, "2024-01-01T06:00:00Z"), (1, "2023-01-01T00:00:00Z")))},
                 "b", id="then the latest start of the highest-priority victims"),
    pytest.param({"a": Victims(pods((5, "2024-01-01T00:00:00Z"))),
                  "b": Victims(pods((5, "2024-01-01T00:00:00Z")))},
                 "a", id="then the first"),
])
def test_pick_one_node_for_preemption(nodes: dict[str, Victims], want: str) -> None:
    assert pick(nodes) == want


def test_a_victim_not_started_counts_as_starting_now() -> None:
    nodes = {"a": Victims(pods((5, None))), "b": Victims(pods((5, "2024-01-01T00:00:00Z")))}
    assert pick(nodes) == "a"


def test_no_candidates() -> None:
    assert pick({}) == ""


def test_custom_score_funcs_replace_the_defaults() -> None:
    nodes = {"a": Victims(pods((1, None))), "b": Victims(pods((9, None)))}
    assert pick_one_node_for_preemption(nodes, [lambda n: n == "b"]) == "b"
