"""RemovePodsHavingTooManyRestarts, mirroring upstream's ``toomanyrestarts_test.go`` cases:
the threshold over the summed restarts, init containers, states, namespaces and the eviction
limit per node."""

from __future__ import annotations

from typing import Any

import pytest

from descheduler.framework.limiter import EvictionLimiter
from descheduler.framework.plugins.kubernetes.testing import Env, terminated, waiting, with_status
from descheduler.framework.testing import node, pod


def restarted(name: str, restarts: int, init_restarts: int = 0, state: str = "",
              node_name: str = "n1", **extra: Any) -> dict[str, Any]:
    main = waiting(state, restarts) if state else terminated(restarts=restarts)
    return with_status(pod(name, 100, 0, node_name, **extra), containerStatuses=[main],
                       initContainerStatuses=[terminated(restarts=init_restarts)])


PODS = [restarted(f"p{i}", restarts=i * 5, init_restarts=i) for i in range(1, 5)]


@pytest.mark.parametrize("name, args, evicted", [
    ("threshold 1: every pod", {"podRestartThreshold": 1}, ["p1", "p2", "p3", "p4"]),
    ("threshold 15 reaches p3 and p4", {"podRestartThreshold": 15}, ["p3", "p4"]),
    ("threshold 16 without init containers", {"podRestartThreshold": 16}, ["p4"]),
    ("threshold 16 with init containers (p3 restarted 15 + 3)",
     {"podRestartThreshold": 16, "includingInitContainers": True}, ["p3", "p4"]),
    ("threshold over every pod", {"podRestartThreshold": 100}, []),
    ("states Running: all are running", {"podRestartThreshold": 1, "states": ["Running"]},
     ["p1", "p2", "p3", "p4"]),
])
def test_too_many_restarts(name: str, args: dict[str, Any], evicted: list[str]) -> None:
    assert Env("RemovePodsHavingTooManyRestarts", [node("n1")], PODS, args).run() == evicted, name


def test_states_pick_crash_looping_pods() -> None:
    pods = [restarted("crash", 10, state="CrashLoopBackOff"),
            with_status(restarted("pending", 10), phase="Pending")]
    env = Env("RemovePodsHavingTooManyRestarts", [node("n1")], pods,
              {"podRestartThreshold": 5, "states": ["CrashLoopBackOff"]})
    assert env.run() == ["crash"]


def test_the_limit_per_node_stops_evictions_there() -> None:
    pods = [restarted("a", 9), restarted("b", 9), restarted("c", 9, node_name="n2")]
    env = Env("RemovePodsHavingTooManyRestarts", [node("n1"), node("n2")], pods,
              {"podRestartThreshold": 3}, limiter=EvictionLimiter(max_per_node=1))
    assert env.run() == ["a", "c"]
