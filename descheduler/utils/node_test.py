"""Node readiness, NodeFit and PodFitsAnyOtherNode (upstream ``pkg/descheduler/node`` cases:
selector, taints, requests incl. extended resources and the pod count, unschedulable)."""

from __future__ import annotations

from typing import Any

from descheduler.framework.testing import node as sized_node
from descheduler.framework.testing import pod as sized_pod
from descheduler.utils.node import (
    NodeFit,
    node_fit,
    node_ready,
    pod_fits_any_node,
    pod_fits_any_other_node,
)

Dict = dict[str, Any]
TOLERATE = [{"key": "k", "operator": "Exists"}]


def pod(name: str, requests: dict[str, str] | None = None, **spec: Any) -> Dict:
    return {"metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": requests or {}}}],
                     **spec}}


def node(name: str, *, cpu: str = "2", pods: str = "2", ready: str = "True",
         **spec: Any) -> Dict:
    return {"metadata": {"name": name, "labels": {"zone": "a"}}, "spec": spec,
            "status": {"allocatable": {"cpu": cpu, "memory": "1Gi", "pods": pods},
                       "conditions": [{"type": "Ready", "status": ready}]}}


def test_node_fit() -> None:
    target = node("t", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])
    on_target: list[Dict] = [pod("x", {"cpu": "1500m"}, nodeName="t")]

    def fit(p: Dict) -> list[str]:
        return node_fit(p, target, lambda name: on_target if name == "t" else [])

    assert fit(pod("ok", {"cpu": "500m"}, tolerations=TOLERATE)) == []
    assert fit(pod("taint", {"cpu": "500m"})) == ["pod does not tolerate taints on the node: k"]
    assert fit(pod("cpu", {"cpu": "600m"}, tolerations=TOLERATE)) == ["insufficient cpu"]
    assert fit(pod("sel", nodeSelector={"zone": "b"}, tolerations=TOLERATE)) == [
        "pod node selector does not match the node label"]
    assert fit(pod("ext", {"example.com/foo": "1"}, tolerations=TOLERATE)) == [
        "insufficient example.com/foo"]
    on_target.append(pod("y", nodeName="t"))
    assert fit(pod("pods", tolerations=TOLERATE)) == ["insufficient pods"]
    assert node_fit(pod("u"), node("u", unschedulable=True), lambda _: []) == [
        "node is not schedulable"]


def test_node_ready() -> None:
    assert node_ready(node("a"))
    assert not node_ready(node("b", ready="False"))
    assert not node_ready(node("c", ready="Unknown"))
    assert node_ready({"metadata": {"name": "bare"}})


def test_pod_fits_any_other_node_skips_its_own() -> None:
    p = pod("p", {"cpu": "1"}, nodeName="a")
    fit = NodeFit(lambda _: [])
    assert not pod_fits_any_other_node(fit, p, [node("a")])
    assert pod_fits_any_other_node(fit, p, [node("a"), node("b")])
    assert not pod_fits_any_other_node(fit, p, [node("a"), node("b", cpu="500m")])


def test_a_full_node_still_fits_the_pod_running_on_it() -> None:
    full = sized_pod("big", 4000, 0, "n1")
    n1, n2 = sized_node("n1"), sized_node("n2", cpu=1000)
    fit = NodeFit(lambda name: [full] if name == "n1" else [])
    assert fit.errors(full, n1) == []
    assert fit.errors(full, n2) == ["insufficient cpu"]
    assert pod_fits_any_node(fit, full, [n1, n2])
    assert not pod_fits_any_other_node(fit, full, [n1, n2])
    assert pod_fits_any_other_node(fit, sized_pod("small", 500, 0, "n1"), [n1, n2])
