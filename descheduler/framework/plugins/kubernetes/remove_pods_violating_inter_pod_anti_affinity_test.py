"""RemovePodsViolatingInterPodAntiAffinity, mirroring upstream's ``pod_antiaffinity_test.go``
cases: a pod whose anti-affinity another pod violates goes, lowest priority first, and once it
is gone the pods it clashed with stay; topology keys spanning nodes; namespaces of the term;
eviction limits."""

from __future__ import annotations

from typing import Any

import pytest

from descheduler.framework.limiter import EvictionLimiter
from descheduler.framework.plugins.kubernetes.testing import Env, with_labels
from descheduler.framework.testing import node, pod

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def anti(name: str, node_name: str = "n1", key: str = HOST, app: str = "web",
         against: str = "web", priority: int | None = None, **extra: Any) -> dict[str, Any]:
    term = {"labelSelector": {"matchExpressions": [
        {"key": "app", "operator": "In", "values": [against]}]}, "topologyKey": key}
    term.update(extra.pop("term", {}))
    spec: dict[str, Any] = {"affinity": {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [term]}}}
    if priority is not None:
        spec["priority"] = priority
    return pod(name, 100, 0, node_name, labels={"app": app}, **spec, **extra)


def plain(name: str, node_name: str = "n1", app: str = "web", **extra: Any) -> dict[str, Any]:
    return pod(name, 100, 0, node_name, labels={"app": app}, **extra)


@pytest.mark.parametrize("name, pods, evicted", [
    ("two pods that repel each other: the first (equal priority) goes, the other then stays",
     [anti("p1"), anti("p2")], ["p1"]),
    ("the lowest priority goes", [anti("high", priority=100), anti("low", priority=1)], ["low"]),
    ("a pod without priority goes before one with",
     [anti("with", priority=0), anti("without")], ["without"]),
    ("anti-affinity against a plain pod", [anti("p1", against="db"), plain("db1", app="db")],
     ["p1"]),
    ("the other pod is on another node", [anti("p1"), plain("p2", node_name="n2")], []),
    ("the same zone counts across nodes",
     [anti("p1", key=ZONE), plain("p2", node_name="n2")], ["p1"]),
    ("another zone does not", [anti("p1", key=ZONE), plain("p3", node_name="n3")], []),
    ("the term looks in its namespaces only",
     [anti("p1", against="db"), plain("db1", app="db", namespace="other")], []),
    ("the term's namespaces",
     [anti("p1", against="db", term={"namespaces": ["other"]}),
      plain("db1", app="db", namespace="other")], ["p1"]),
    ("no anti-affinity, nothing to do", [plain("p1"), plain("p2")], []),
])
def test_inter_pod_anti_affinity(name: str, pods: list[dict[str, Any]],
                                 evicted: list[str]) -> None:
    nodes = [with_labels(node(name), {ZONE: zone})
             for name, zone in (("n1", "a"), ("n2", "a"), ("n3", "b"))]
    assert Env("RemovePodsViolatingInterPodAntiAffinity", nodes, pods).run() == evicted, name


def test_evicted_pods_no_longer_count_but_refused_ones_do() -> None:
    pods = [anti("p1"), anti("p2"), anti("p3")]
    # p1 and p2 go; p3 then clashes with nothing left
    assert Env("RemovePodsViolatingInterPodAntiAffinity", [node("n1")], pods).run() == [
        "p1", "p2"]
    # p1 goes, p2 is refused by the limit, so p3 still clashes with it (and is refused too)
    env = Env("RemovePodsViolatingInterPodAntiAffinity", [node("n1")], pods,
              limiter=EvictionLimiter(max_total=1))
    assert env.run() == ["p1"]
