"""PodLifeTime, mirroring upstream's ``pod_lifetime_test.go`` cases: age limit, namespaces,
label selector, states (phase, status reason, container waiting reasons), evictor filters and
oldest-first order under an eviction limit."""

from __future__ import annotations

from typing import Any

import pytest

from descheduler.framework.limiter import EvictionLimiter
from descheduler.framework.plugins.kubernetes.testing import Env, ago, waiting, with_status
from descheduler.framework.testing import DS, node, pod

LIMIT = 600


def aged(name: str, age: int, **extra: Any) -> dict[str, Any]:
    return pod(name, 100, 0, "n1", created=ago(age), **extra)


@pytest.mark.parametrize("name, pods, args, evicted", [
    ("one old pod and one new pod: the old one goes",
     [aged("old", 1200), aged("new", 60)], {}, ["old"]),
    ("exactly the limit is not over it", [aged("edge", LIMIT)], {}, []),
    ("the namespace filter keeps other namespaces",
     [aged("dev", 1200, namespace="dev"), aged("prod", 1200, namespace="prod")],
     {"namespaces": {"include": ["dev"]}}, ["dev"]),
    ("excluded namespaces are kept",
     [aged("dev", 1200, namespace="dev"), aged("prod", 1200, namespace="prod")],
     {"namespaces": {"exclude": ["dev"]}}, ["prod"]),
    ("the label selector picks pods",
     [aged("a", 1200, labels={"foo": "bar"}), aged("b", 1200)],
     {"labelSelector": {"matchLabels": {"foo": "bar"}}}, ["a"]),
    ("DaemonSet pods are not evictable", [aged("ds", 1200, owners=DS)], {}, []),
    ("states: phase Pending",
     [with_status(aged("pending", 1200), phase="Pending"), aged("running", 1200)],
     {"states": ["Pending"]}, ["pending"]),
    ("states: a container waiting reason",
     [with_status(aged("crash", 1200), containerStatuses=[waiting("CrashLoopBackOff")]),
      aged("ok", 1200)],
     {"states": ["CrashLoopBackOff"]}, ["crash"]),
    ("states: the pod's status reason",
     [with_status(aged("lost", 1200), reason="NodeLost"), aged("ok", 1200)],
     {"states": ["NodeLost"]}, ["lost"]),
    ("states: init containers count only when asked",
     [with_status(aged("init", 1200), initContainerStatuses=[waiting("ImagePullBackOff")])],
     {"states": ["ImagePullBackOff"]}, []),
    ("states: init containers included",
     [with_status(aged("init", 1200), initContainerStatuses=[waiting("ImagePullBackOff")])],
     {"states": ["ImagePullBackOff"], "includingInitContainers": True}, ["init"]),
])
def test_pod_life_time(name: str, pods: list[dict[str, Any]], args: dict[str, Any],
                       evicted: list[str]) -> None:
    env = Env("PodLifeTime", [node("n1"), node("n2")], pods,
              {"maxPodLifeTimeSeconds": LIMIT} | args)
    assert env.run() == evicted, name


def test_oldest_pods_go_first_when_the_limit_allows_only_some() -> None:
    pods = [aged("p1", 2000), pod("p2", 100, 0, "n2", created=ago(5000)), aged("p3", 3000)]
    env = Env("PodLifeTime", [node("n1"), node("n2")], pods, {"maxPodLifeTimeSeconds": LIMIT},
              limiter=EvictionLimiter(max_total=2))
    assert env.run() == ["p2", "p3"]
