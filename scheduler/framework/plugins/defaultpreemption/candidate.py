"""Preemption candidates and the choice of the node to preempt on.

Corresponds to kube-scheduler ``pkg/scheduler/framework/preemption`` (``Candidate``,
``pickOneNodeForPreemption``) and ``extender/v1.Victims``. Without custom score functions the
node is chosen by, in order: fewest PDB violations, lowest highest-victim priority, smallest
sum of victim priorities, fewest victims, latest start of the highest-priority victims, and
then the first candidate.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from scheduler.framework.plugins.defaultpreemption.ordering import (
    earliest_start_of_highest_priority,
)
from scheduler.framework.types import PodInfo

# Shifts every priority to >= 0 in the sum, so that a node with a few negative-priority
# victims does not beat one with fewer victims of the same priority.
_PRIORITY_SHIFT = 2**31

ScoreFunc = Callable[[str], float]


@dataclass(slots=True)
class Victims:
    """Pods to evict from one node, most important first, and how many PDBs that violates."""

    pods: list[PodInfo] = field(default_factory=list)
    num_pdb_violations: int = 0


@dataclass(slots=True)
class Candidate:
    name: str
    victims: Victims


def default_score_funcs(nodes_to_victims: Mapping[str, Victims], now: float) -> list[ScoreFunc]:
    """Upstream's tie-breakers, each scoring higher what it prefers."""

    def min_pdb_violations(node: str) -> float:
        return -nodes_to_victims[node].num_pdb_violations

    def min_highest_priority(node: str) -> float:
        return -nodes_to_victims[node].pods[0].priority

    def min_sum_priorities(node: str) -> float:
        return -sum(p.priority + _PRIORITY_SHIFT for p in nodes_to_victims[node].pods)

    def min_num_pods(node: str) -> float:
        return -len(nodes_to_victims[node].pods)

    def latest_start_time(node: str) -> float:
        return earliest_start_of_highest_priority(nodes_to_victims[node].pods, now)

    return [min_pdb_violations, min_highest_priority, min_sum_priorities, min_num_pods,
            latest_start_time]


def pick_one_node_for_preemption(nodes_to_victims: Mapping[str, Victims],
                                 score_funcs: Sequence[ScoreFunc]) -> str:
    """The node whose victims the score functions prefer; "" when there is none.

    Each function narrows the nodes to those with its highest score; the next one only breaks
    ties. The victims of each node are expected most important first.
    """
    nodes = list(nodes_to_victims)
    if not nodes:
        return ""
    for score in score_funcs:
        scores = [score(n) for n in nodes]
        best = max(scores)
        nodes = [n for n, s in zip(nodes, scores, strict=True) if s == best]
        if len(nodes) == 1:
            break
    return nodes[0]
