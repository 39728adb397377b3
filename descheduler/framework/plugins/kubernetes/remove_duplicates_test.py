"""RemoveDuplicates, mirroring upstream's ``removeduplicates_test.go`` cases: duplicates of one
owner and image set, excluded owner kinds, pods the evictor protects, different images, and the
uniform spread over the nodes the duplicates may run on (taints, node selectors, affinity)."""

from __future__ import annotations

from typing import Any

import pytest

from descheduler.framework.plugins.kubernetes.testing import Env, taint
from descheduler.framework.testing import DS, node, pod

RS2 = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs2", "uid": "rs-2"}]


def dup(name: str, node_name: str = "n1", image: str = "nginx", **extra: Any) -> dict[str, Any]:
    p = pod(name, 100, 0, node_name, **extra)
    p["spec"]["containers"][0]["image"] = image
    return p


def two_containers(name: str) -> dict[str, Any]:
    p = dup(name)
    p["spec"]["containers"].append({"name": "side", "image": "envoy"})
    return p


@pytest.mark.parametrize("name, pods, args, evicted", [
    ("three pods of one ReplicaSet on one of two nodes: one goes",
     [dup("p1"), dup("p2"), dup("p3")], {}, ["p3"]),
    ("the owner's kind is excluded", [dup("p1"), dup("p2"), dup("p3")],
     {"excludeOwnerKinds": ["ReplicaSet"]}, []),
    ("other namespaces are not looked at", [dup("p1"), dup("p2"), dup("p3")],
     {"namespaces": {"exclude": ["default"]}}, []),
    ("different images are not duplicates", [dup("p1"), dup("p2", image="redis")], {}, []),
    ("different owners are not duplicates", [dup("p1"), dup("p2", owners=RS2)], {}, []),
    ("pods the evictor protects are not duplicates",
     [dup("ds1", owners=DS), dup("ds2", owners=DS), dup("bare1", owners=[]),
      dup("bare2", owners=[])], {}, []),
    ("several containers: a pod is no duplicate of itself",
     [two_containers("p1"), two_containers("p2"), two_containers("p3")], {}, ["p3"]),
    ("one pod per node is already spread",
     [dup("p1"), dup("p2", node_name="n2")], {}, []),
])
def test_duplicates_on_two_nodes(name: str, pods: list[dict[str, Any]], args: dict[str, Any],
                                 evicted: list[str]) -> None:
    assert Env("RemoveDuplicates", [node("n1"), node("n2")], pods, args).run() == evicted, name


SIX = [dup(f"p{i}") for i in range(1, 7)]


@pytest.mark.parametrize("name, nodes, pods, evicted", [
    ("six pods over three nodes: two stay", [node("n1"), node("n2"), node("n3")], SIX,
     ["p3", "p4", "p5", "p6"]),
    ("a node whose taint the pods do not tolerate is left out: three stay",
     [node("n1"), node("n2"), taint(node("n3"), "hardware", "gpu")], SIX, ["p4", "p5", "p6"]),
    ("only the pods' own node is feasible: nothing moves",
     [node("n1"), taint(node("n2"), "a"), taint(node("n3"), "b")], SIX, []),
    ("the node selector leaves one node out",
     [node("n1", disk="ssd"), node("n2", disk="ssd"), node("n3")],
     [dup(f"p{i}", nodeSelector={"disk": "ssd"}) for i in range(1, 7)], ["p4", "p5", "p6"]),
    ("pods elsewhere count towards the average",
     [node("n1"), node("n2"), node("n3")],
     [*SIX, dup("q1", node_name="n2"), dup("q2", node_name="n2"), dup("q3", node_name="n3")],
     ["p4", "p5", "p6"]),
])
def test_uniform_spread(name: str, nodes: list[dict[str, Any]], pods: list[dict[str, Any]],
                        evicted: list[str]) -> None:
    assert Env("RemoveDuplicates", nodes, pods).run() == evicted, name
