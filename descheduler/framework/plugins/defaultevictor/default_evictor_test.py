"""DefaultEvictor: the pods its filter protects, nodeFit before evicting, and evicting through
the Eviction API."""

from __future__ import annotations

from typing import Any

import pytest

from descheduler.apis.config.args import DefaultEvictorArgs
from descheduler.framework.plugins.defaultevictor import DefaultEvictor, EvictorFilter
from descheduler.framework.testing import FakeClient, listers
from descheduler.framework.types import EvictOptions
from pkg.client.errors import ApiError

RS = [{"kind": "ReplicaSet", "name": "rs", "uid": "1", "apiVersion": "apps/v1"}]


def pod(owners: list[dict[str, Any]] = RS, annotations: dict[str, str] | None = None,
        phase: str = "Running", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u1", "ownerReferences": owners,
                         "annotations": annotations or {}, "labels": {"app": "web"}},
            "spec": {"nodeName": "n1", **spec}, "status": {"phase": phase}}


@pytest.mark.parametrize("args, obj, evictable", [
    ({}, pod(), True),
    ({}, pod(owners=[]), False),
    ({}, pod(owners=[], phase="Failed"), False),
    ({"evictFailedBarePods": True}, pod(owners=[], phase="Failed"), True),
    ({}, pod(owners=[{"kind": "DaemonSet", "name": "ds"}]), False),
    ({}, pod(annotations={"kubernetes.io/config.mirror": "x"}), False),
    ({}, pod(annotations={"kubernetes.io/config.source": "file"}), False),
    ({}, pod(priority=2_000_000_000), False),
    ({}, pod(priorityClassName="system-node-critical"), False),
    ({"evictSystemCriticalPods": True}, pod(priority=2_000_000_000), True),
    ({"priorityThreshold": {"value": 100}}, pod(priority=100), False),
    ({"priorityThreshold": {"value": 100}}, pod(priority=99), True),
    ({}, pod(volumes=[{"name": "v", "emptyDir": {}}]), False),
    ({"evictLocalStoragePods": True}, pod(volumes=[{"name": "v", "emptyDir": {}}]), True),
    ({"ignorePvcPods": True}, pod(volumes=[{"name": "v", "persistentVolumeClaim": {}}]), False),
    ({}, pod(volumes=[{"name": "v", "persistentVolumeClaim": {}}]), True),
    ({"labelSelector": {"matchLabels": {"app": "db"}}}, pod(), False),
    ({"labelSelector": {"matchLabels": {"app": "web"}}}, pod(), True),
    ({}, pod(owners=[], annotations={"descheduler.alpha.kubernetes.io/evict": ""}), True),
])
def test_filter(args: dict[str, Any], obj: dict[str, Any], evictable: bool) -> None:
    plugin = DefaultEvictor(DefaultEvictorArgs.model_validate(args), FakeClient())
    assert plugin.filter(obj) is evictable


def test_terminating_pods_are_not_evictable() -> None:
    obj = pod()
    obj["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    assert not DefaultEvictor(DefaultEvictorArgs(), FakeClient()).filter(obj)


def test_evict_posts_an_eviction_with_the_uid_precondition() -> None:
    client = FakeClient()
    assert DefaultEvictor(DefaultEvictorArgs(), client).evict(pod(), EvictOptions("X", "why"))
    (method, path, body), = client.requests
    assert (method, path) == ("POST", "/api/v1/namespaces/ns/pods/p/eviction")
    assert body["deleteOptions"] == {"preconditions": {"uid": "u1"}}


def test_a_refused_eviction_is_a_failure() -> None:
    client = FakeClient(refuse={"/api/v1/namespaces/ns/pods/p/eviction": ApiError(429, "TooMany")})
    assert not DefaultEvictor(DefaultEvictorArgs(), client).evict(pod(), EvictOptions())


def node(name: str, cpu: str = "2", ready: str = "True",
         labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}},
            "status": {"allocatable": {"cpu": cpu, "memory": "1Gi", "pods": "10"},
                       "conditions": [{"type": "Ready", "status": ready}]}}


def test_node_fit_needs_another_node_taking_the_pod() -> None:
    big = pod(containers=[{"name": "c", "resources": {"requests": {"cpu": "1"}}}])

    def evictor(*nodes: dict[str, Any], fit: bool = True, selector: str = "") -> EvictorFilter:
        return EvictorFilter(DefaultEvictorArgs(node_fit=fit), nodes=listers(nodes).nodes,
                             pods_on_node=lambda _: [], node_selector=selector)

    assert evictor(node("n1"), node("n2")).pre_eviction_filter(big)
    # Its own node does not count, nor a node too small, not ready or not selected.
    assert not evictor(node("n1")).pre_eviction_filter(big)
    assert not evictor(node("n1"), node("n2", cpu="500m")).pre_eviction_filter(big)
    assert not evictor(node("n1"), node("n2", ready="False")).pre_eviction_filter(big)
    assert not evictor(node("n1"), node("n2"), selector="pool=a").pre_eviction_filter(big)
    assert evictor(node("n1"), node("n2", labels={"pool": "a"}),
                   selector="pool=a").pre_eviction_filter(big)
    assert evictor(node("n1"), fit=False).pre_eviction_filter(big)


def test_default_evictor_pre_eviction_filter_checks_node_fit() -> None:
    ls = listers([node("n1")], [pod()])
    plugin = DefaultEvictor(DefaultEvictorArgs(node_fit=True), FakeClient(), nodes=ls.nodes,
                            pods_on_node=lambda _: [])
    assert not plugin.pre_eviction_filter(pod())
