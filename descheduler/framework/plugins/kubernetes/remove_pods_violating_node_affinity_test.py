"""RemovePodsViolatingNodeAffinity, mirroring upstream's ``node_affinity_test.go`` cases: a pod
whose node lost the required label moves only when another node fits it; preferred terms move a
pod to a node that scores higher; nodeAffinityType and namespaces choose what is checked."""

from __future__ import annotations

from typing import Any

import pytest

from descheduler.framework.plugins.kubernetes.testing import Env, with_labels
from descheduler.framework.testing import node, pod

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
TERM = {"matchExpressions": [{"key": "kubernetes.io/desiredNode", "operator": "In",
                              "values": ["yes"]}]}


def required(name: str, node_name: str = "n1", cpu: int = 100, **extra: Any) -> dict[str, Any]:
    return pod(name, cpu, 0, node_name, affinity={"nodeAffinity": {REQUIRED: {
        "nodeSelectorTerms": [TERM]}}}, **extra)


def preferred(name: str, node_name: str = "n1") -> dict[str, Any]:
    return pod(name, 100, 0, node_name, affinity={"nodeAffinity": {PREFERRED: [
        {"weight": 10, "preference": TERM}]}})


def desired(name: str, **extra: Any) -> dict[str, Any]:
    """A node with the label the pods' terms ask for."""
    return with_labels(node(name, **extra), {"kubernetes.io/desiredNode": "yes"})


@pytest.mark.parametrize("name, nodes, pods, args, evicted", [
    ("required: a pod on a node without the label goes when another node has it",
     [node("n1"), desired("n2")], [required("p1")], {"nodeAffinityType": [REQUIRED]},
     ["p1"]),
    ("required: the pod's node still matches",
     [desired("n1"), desired("n2")], [required("p1")],
     {"nodeAffinityType": [REQUIRED]}, []),
    ("required: no other node matches, nothing to gain",
     [node("n1"), node("n2")], [required("p1")], {"nodeAffinityType": [REQUIRED]}, []),
    ("required: the matching node is unschedulable",
     [node("n1"), desired("n2", unschedulable=True)], [required("p1")],
     {"nodeAffinityType": [REQUIRED]}, []),
    ("required: the matching node has no room",
     [node("n1"), desired("n2", cpu=50)], [required("p1")],
     {"nodeAffinityType": [REQUIRED]}, []),
    ("required: pods without affinity stay",
     [node("n1"), desired("n2")], [pod("plain", 100, 0, "n1")],
     {"nodeAffinityType": [REQUIRED]}, []),
    ("required: excluded namespace",
     [node("n1"), desired("n2")], [required("p1", namespace="kube-public")],
     {"nodeAffinityType": [REQUIRED], "namespaces": {"exclude": ["kube-public"]}}, []),
    ("preferred: a node scoring higher exists",
     [node("n1"), desired("n2")], [preferred("p1")], {"nodeAffinityType": [PREFERRED]},
     ["p1"]),
    ("preferred: already on the best node",
     [desired("n1"), node("n2")], [preferred("p1")], {"nodeAffinityType": [PREFERRED]},
     []),
    ("preferred terms are not checked for the required type",
     [node("n1"), desired("n2")], [preferred("p1")], {"nodeAffinityType": [REQUIRED]},
     []),
])
def test_node_affinity(name: str, nodes: list[dict[str, Any]], pods: list[dict[str, Any]],
                       args: dict[str, Any], evicted: list[str]) -> None:
    assert Env("RemovePodsViolatingNodeAffinity", nodes, pods, args).run() == evicted, name
