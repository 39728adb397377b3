"""RemoveFailedPods, mirroring upstream's ``failedpods_test.go`` cases: only Failed pods; reasons
from container waiting/terminated states and the pod; init containers; exit codes; excluded
owner kinds; minimum lifetime; namespaces and label selector."""

from __future__ import annotations

from typing import Any

import pytest

from descheduler.framework.plugins.kubernetes.testing import (
    Env,
    ago,
    terminated,
    waiting,
    with_status,
)
from descheduler.framework.testing import node, pod

JOB = [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "j-1"}]


def failed(name: str, *statuses: dict[str, Any], init: list[dict[str, Any]] | None = None,
           reason: str = "", age: int = 7200, **extra: Any) -> dict[str, Any]:
    p = pod(name, 100, 0, "n1", created=ago(age), **extra)
    return with_status(p, phase="Failed", reason=reason, containerStatuses=list(statuses),
                       initContainerStatuses=init or [])


@pytest.mark.parametrize("name, pods, args, evicted", [
    ("default args: every failed pod older than an hour",
     [failed("f"), failed("young", age=3000), pod("running", 100, 0, "n1")], {}, ["f"]),
    ("a terminated reason that is listed",
     [failed("oom", terminated("OOMKilled")), failed("other", terminated("Error"))],
     {"reasons": ["OOMKilled"]}, ["oom"]),
    ("a waiting reason that is listed",
     [failed("cfg", waiting("CreateContainerConfigError")), failed("other")],
     {"reasons": ["CreateContainerConfigError"]}, ["cfg"]),
    ("the pod's own reason", [failed("evicted", reason="Evicted"), failed("other")],
     {"reasons": ["Evicted"]}, ["evicted"]),
    ("init containers' reasons count only when asked",
     [failed("init", init=[terminated("Error")])], {"reasons": ["Error"]}, []),
    ("init containers' reasons included",
     [failed("init", init=[terminated("Error")])],
     {"reasons": ["Error"], "includingInitContainers": True}, ["init"]),
    ("exit codes", [failed("137", terminated("Error", 137)), failed("1", terminated("Error", 1))],
     {"exitCodes": [137]}, ["137"]),
    ("excluded owner kinds are kept", [failed("job", owners=JOB), failed("rs")],
     {"excludeOwnerKinds": ["Job"]}, ["rs"]),
    ("younger than minPodLifetimeSeconds is kept",
     [failed("young", age=100), failed("old", age=400)],
     {"minPodLifetimeSeconds": 300}, ["old"]),
    ("minPodLifetimeSeconds 0: any age", [failed("young", age=100)],
     {"minPodLifetimeSeconds": 0}, ["young"]),
    ("namespaces", [failed("a", namespace="a"), failed("b", namespace="b")],
     {"namespaces": {"exclude": ["a"]}}, ["b"]),
    ("label selector", [failed("a", labels={"app": "x"}), failed("b")],
     {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}}, ["a"]),
])
def test_remove_failed_pods(name: str, pods: list[dict[str, Any]], args: dict[str, Any],
                            evicted: list[str]) -> None:
    assert Env("RemoveFailedPods", [node("n1"), node("n2")], pods, args).run() == evicted, name


def test_failed_bare_pods_need_the_evictor_to_allow_them() -> None:
    bare = failed("bare", owners=[])
    assert Env("RemoveFailedPods", [node("n1")], [bare]).run() == []
    assert Env("RemoveFailedPods", [node("n1")], [bare],
               evictor={"evictFailedBarePods": True}).run() == ["bare"]
