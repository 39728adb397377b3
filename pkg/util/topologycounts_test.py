"""PodCounter follows replaced nodes and recounts only those; DomainCounts sums and updates."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pkg.util.topologycounts import DomainCounts, PodCounter


@dataclass(eq=False)
class Node:
    pods: dict[str, str] = field(default_factory=dict)  # pod name → app label

    def with_pod(self, name: str, app: str) -> Node:
        return Node({**self.pods, name: app})


@dataclass(frozen=True)
class Column:
    codes: np.ndarray
    index: dict[str, int]


class Recorder:
    """A predicate (app == "web") that records the pods it was asked about."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, app: Any) -> bool:
        self.asked.append(app)
        return bool(app == "web")


def test_counts_follow_replaced_nodes_and_recount_only_them() -> None:
    nodes = [Node({"a": "web", "b": "db"}), Node(), Node({"c": "web"})] + [
        Node({f"x{i}": "db"}) for i in range(600)]
    counter, match = PodCounter(), Recorder()
    first = counter.counts(nodes, "web", match)
    assert first[:3].tolist() == [1, 0, 1] and first[3:].sum() == 0
    assert len(match.asked) == 603

    match.asked.clear()
    assert counter.counts(nodes, "web", match) is first
    assert match.asked == []

    nodes[1] = nodes[1].with_pod("d", "web")
    nodes[500] = nodes[500].with_pod("e", "web")
    second = counter.counts(nodes, "web", match)
    assert sorted(match.asked) == ["db", "web", "web"]  # only the two replaced nodes
    assert second[:3].tolist() == [1, 1, 1] and second[500] == 1
    # Arrays handed out earlier never change, and nobody may write to them.
    assert first[1] == 0 and not second.flags.writeable


def test_a_different_node_list_is_counted_afresh() -> None:
    counter = PodCounter()
    assert counter.counts([Node({"a": "web"})], "web", Recorder()).tolist() == [1]
    assert counter.counts([Node(), Node({"b": "web"})], "web", Recorder()).tolist() == [0, 1]


def test_least_recently_asked_questions_are_dropped() -> None:
    nodes = [Node({"a": "web"})]
    counter = PodCounter(capacity=2)
    for key in ("k1", "k2", "k3"):
        counter.counts(nodes, key, Recorder())
    match = Recorder()
    counter.counts(nodes, "k1", match)
    assert match.asked == ["web"]  # k1 was evicted: counted again
    match.asked.clear()
    counter.counts(nodes, "k3", match)
    assert match.asked == []


def test_domain_counts_sum_eligible_nodes_per_domain() -> None:
    # Nodes: z1, z1, z2, (no label), z3
    column = Column(np.array([0, 0, 1, -1, 2]), {"z1": 0, "z2": 1, "z3": 2})
    per_node = np.array([2, 1, 4, 7, 0])
    eligible = np.array([True, True, True, True, False])
    counts = DomainCounts.summed(column, per_node, eligible)
    assert [counts.get(z) for z in ("z1", "z2", "z3", "zz")] == [3, 4, 0, 0]
    # z3's only node is not eligible: the domain is not present.
    assert counts.num_present() == 2 and counts.min_present() == 3
    assert counts.at().tolist() == [3, 3, 4, 0, 0]
    assert counts.at(np.array([4, 2])).tolist() == [0, 4]


def test_domain_counts_add_tracks_minimum_and_new_values() -> None:
    column = Column(np.array([0, 1]), {"z1": 0, "z2": 1})
    counts = DomainCounts.summed(column, np.array([2, 5]))
    clone = counts.clone()
    counts.add("z1", 4)
    assert counts.min_present() == 5 and clone.min_present() == 2
    counts.add("z9", 1)  # a value no node of the snapshot has
    assert counts.get("z9") == 1 and counts.num_present() == 3 and counts.min_present() == 1
    assert column.index == {"z1": 0, "z2": 1} and counts.at().tolist() == [6, 5]
    counts.add_summed(np.array([1, 1]), weight=-2)
    assert [counts.get(z) for z in ("z1", "z2", "z9")] == [4, 3, 1]


def test_summed_without_numbers_marks_domains_present() -> None:
    column = Column(np.array([0, -1]), {"z1": 0})
    counts = DomainCounts.summed(column, None)
    assert counts.num_present() == 1 and counts.min_present() == 0
    assert not DomainCounts.zeros(column).num_present()
