"""The ElasticQuota status writer with a real quota tree: what it writes, that it writes only
changes, how it carries on after a failed write, and each tree's figures under MultiQuotaTree."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from api.extension.elastic_quota import (
    ANNOTATION_ALLOCATED,
    ANNOTATION_CHILD_REQUEST,
    ANNOTATION_GUARANTEED,
    ANNOTATION_NON_PREEMPTIBLE_REQUEST,
    ANNOTATION_NON_PREEMPTIBLE_USED,
    ANNOTATION_REQUEST,
    ANNOTATION_RUNTIME,
    ANNOTATION_TOTAL_RESOURCE,
    LABEL_PREEMPTIBLE,
    LABEL_QUOTA_IS_ROOT,
    LABEL_QUOTA_PARENT,
    LABEL_QUOTA_TREE_ID,
)
from api.thirdparty.schedulerplugins.v1alpha1.elastic_quota import ElasticQuota
from pkg.client.errors import ApiError
from pkg.client.resources import ELASTIC_QUOTAS
from pkg.client.rest import Client
from pkg.features import FeatureGate, default_feature_gate
from pkg.features.features import ELASTIC_QUOTA_GUARANTEE_USAGE, MULTI_QUOTA_TREE
from pkg.features.scheduler_features import SCHEDULER_FEATURE_GATES
from pkg.util.clock import FakeClock
from scheduler.apis.config import ElasticQuotaArgs
from scheduler.plugins.elasticquota.controller import ElasticQuotaController
from scheduler.plugins.elasticquota.core import GroupQuotaManager
from scheduler.plugins.elasticquota.managers import QuotaManagers
from test.apiserver import start
from test.e2e.cluster import install_crds, wait_for

Obj = dict[str, Any]
GI = 1024**3


def quota(name: str, cpu_min: str, cpu_max: str, *, parent: str = "") -> Obj:
    labels = {LABEL_QUOTA_PARENT: parent} if parent else {}
    return {"metadata": {"name": name, "namespace": "team", "labels": labels, "annotations": {}},
            "spec": {"min": {"cpu": cpu_min, "memory": "0"},
                     "max": {"cpu": cpu_max, "memory": "64Gi"}}}


def pod(name: str, cpu: str, memory: str, *, node: str = "n1",
        non_preemptible: bool = False) -> Obj:
    labels = {LABEL_PREEMPTIBLE: "false"} if non_preemptible else {}
    return {"metadata": {"name": name, "namespace": "team", "labels": labels},
            "spec": {"nodeName": node, "containers": [
                {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]},
            "status": {"phase": "Running" if node else "Pending"}}


def merge(into: Obj, patch: Obj) -> None:
    """RFC 7386 merge patch, as the API server applies it."""
    for k, v in patch.items():
        if v is None:
            into.pop(k, None)
        elif isinstance(v, dict):
            child = into.get(k)
            if not isinstance(child, dict):
                child = into[k] = {}
            merge(child, v)
        else:
            into[k] = v


@dataclass
class FakeQuotaClient:
    """Applies merge patches to the objects the lister hands out; ``failures`` refuses that
    many patches first."""

    objects: dict[str, Obj]
    failures: int = 0
    patches: list[tuple[str, Obj]] = field(default_factory=list)

    def request(self, method: str, path: str, *, body: Any = None) -> Any:
        raise AssertionError(f"unexpected {method} {path}")

    def patch(self, resource: Any, name: str, patch: Any, namespace: str | None = None, *,
              patch_type: str = "merge", subresource: str | None = None) -> Any:
        assert (patch_type, subresource, namespace) == ("merge", None, "team")
        if self.failures:
            self.failures -= 1
            raise ApiError(500, "InternalError", "etcd is unhappy")
        self.patches.append((name, patch))
        merge(self.objects[name], patch)
        return self.objects[name]

    def delete(self, resource: Any, name: str, namespace: str | None = None) -> Any:
        raise AssertionError("unexpected delete")

    def list(self) -> Sequence[Obj]:
        return list(self.objects.values())


@pytest.fixture
def tree() -> GroupQuotaManager:
    gqm = GroupQuotaManager({}, {})
    gqm.on_node_add({"metadata": {"name": "n1"},
                     "status": {"allocatable": {"cpu": "10", "memory": str(40 * GI)}}})
    return gqm


def setup(gqm: GroupQuotaManager, *quotas: Obj, clock: FakeClock | None = None
          ) -> tuple[FakeQuotaClient, ElasticQuotaController]:
    for q in quotas:
        gqm.update_quota(q)
    client = FakeQuotaClient({q["metadata"]["name"]: q for q in quotas})
    return client, ElasticQuotaController(gqm, client, client, clock or FakeClock())


def annotation(obj: Obj, key: str) -> dict[str, str]:
    return json.loads(obj["metadata"]["annotations"][key])


def test_writes_the_trees_figures_as_upstream_formats_them(tree: GroupQuotaManager) -> None:
    client, ctrl = setup(tree, quota("a", "2", "8"), quota("b", "2", "8"))
    tree.on_pod_add("a", pod("big", "6", "1Gi"))
    tree.on_pod_add("a", pod("fixed", "500m", "512Mi", non_preemptible=True))
    tree.on_pod_add("a", pod("waiting", "1", "0", node=""))
    # b asks nothing and lends everything: all its figures are zero, as the object says.
    assert ctrl.sync() == 1
    assert client.objects["b"] == quota("b", "2", "8")
    a = client.objects["a"]
    # a asks 7.5 cores of the 10 and gets them.
    assert a["metadata"]["annotations"][ANNOTATION_RUNTIME] == \
        '{"cpu":"7500m","memory":"1536Mi"}'
    assert annotation(a, ANNOTATION_REQUEST) == {"cpu": "7500m", "memory": "1536Mi"}
    assert annotation(a, ANNOTATION_CHILD_REQUEST) == {"cpu": "7500m", "memory": "1536Mi"}
    assert annotation(a, ANNOTATION_NON_PREEMPTIBLE_REQUEST) == {"cpu": "500m",
                                                                 "memory": "512Mi"}
    assert annotation(a, ANNOTATION_NON_PREEMPTIBLE_USED) == {"cpu": "500m", "memory": "512Mi"}
    # Empty without ElasticQuotaGuaranteeUsage, as the object already says (no annotation).
    assert ANNOTATION_GUARANTEED not in a["metadata"]["annotations"]
    assert ANNOTATION_ALLOCATED not in a["metadata"]["annotations"]
    assert a["status"]["used"] == {"cpu": "6500m", "memory": "1536Mi"}


def test_writes_only_what_changed(tree: GroupQuotaManager) -> None:
    client, ctrl = setup(tree, quota("a", "2", "8"))
    tree.on_pod_add("a", pod("p1", "1", "1Gi"))
    assert ctrl.sync() == 1
    assert ctrl.sync() == 0  # the object now carries the figures
    tree.on_pod_add("a", pod("p2", "1", "0", node=""))
    assert ctrl.sync() == 1
    name, patch = client.patches[-1]
    assert name == "a" and "status" not in patch  # used did not move
    assert set(patch["metadata"]["annotations"]) == {
        ANNOTATION_RUNTIME, ANNOTATION_REQUEST, ANNOTATION_CHILD_REQUEST}


def test_used_names_no_longer_used_are_removed(tree: GroupQuotaManager) -> None:
    client, ctrl = setup(tree, quota("a", "2", "8"))
    client.objects["a"]["status"] = {"used": {"cpu": "1", "nvidia.com/gpu": "1"}}
    tree.on_pod_add("a", pod("p1", "1", "0"))
    ctrl.sync()
    assert client.patches[-1][1]["status"]["used"] == {"cpu": "1", "memory": "0",
                                                        "nvidia.com/gpu": None}
    assert client.objects["a"]["status"]["used"] == {"cpu": "1", "memory": "0"}


def test_a_malformed_annotation_is_rewritten(tree: GroupQuotaManager) -> None:
    client, ctrl = setup(tree, quota("a", "2", "8"))
    client.objects["a"]["metadata"]["annotations"][ANNOTATION_RUNTIME] = "{not json"
    tree.on_pod_add("a", pod("p1", "1", "0"))
    ctrl.sync()
    assert annotation(client.objects["a"], ANNOTATION_RUNTIME) == {"cpu": "1", "memory": "0"}


def test_quotas_the_tree_does_not_know_are_left_alone(tree: GroupQuotaManager) -> None:
    client, ctrl = setup(tree)
    client.objects["ghost"] = quota("ghost", "1", "1")
    assert ctrl.sync() == 0 and client.patches == []


def test_a_failed_write_is_logged_once_and_retried(tree: GroupQuotaManager,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    client, ctrl = setup(tree, quota("a", "2", "8"))
    tree.on_pod_add("a", pod("p1", "1", "0"))
    client.failures = 3
    with caplog.at_level(logging.INFO, logger="scheduler.plugins.elasticquota.controller"):
        for _ in range(3):
            assert ctrl.sync() == 0
        assert ctrl.sync() == 1
    messages = [r.getMessage() for r in caplog.records]
    assert sum("failed to update ElasticQuota team/a" in m for m in messages) == 1
    assert any("updated ElasticQuota team/a again" in m for m in messages)
    assert client.objects["a"]["status"]["used"]["cpu"] == "1"


def test_runs_every_second_until_stopped(tree: GroupQuotaManager) -> None:
    clock = FakeClock()
    client, ctrl = setup(tree, quota("a", "2", "8"), clock=clock)
    tree.on_pod_add("a", pod("p1", "1", "0"))
    ctrl.start()
    try:
        wait_for(lambda: len(client.patches) == 1 and clock.has_waiters(), timeout=60,
                 what="the first pass")
        tree.on_pod_add("a", pod("p2", "1", "0"))
        clock.step(1)
        wait_for(lambda: len(client.patches) == 2, timeout=60, what="the next pass")
    finally:
        ctrl.stop()


def test_guarantee_usage_writes_guaranteed_and_allocated() -> None:
    gate = default_feature_gate.copy()
    gate.set_enabled(ELASTIC_QUOTA_GUARANTEE_USAGE, True)
    gqm = GroupQuotaManager({}, {}, feature_gate=gate)
    gqm.on_node_add({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "10"}}})
    client, ctrl = setup(gqm, quota("a", "2", "8"))
    gqm.on_pod_add("a", pod("p1", "3", "0"))
    ctrl.sync()
    a = client.objects["a"]
    assert annotation(a, ANNOTATION_ALLOCATED) == {"cpu": "3", "memory": "0"}
    # max(min, allocated)
    assert annotation(a, ANNOTATION_GUARANTEED) == {"cpu": "3", "memory": "0"}


class ApiLister:
    """The ElasticQuotas as the API server holds them (what the informer would cache)."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def list(self) -> Sequence[Obj]:
        items: list[Obj] = self.client.list(ELASTIC_QUOTAS).get("items") or []
        return items


def test_the_patch_lands_on_an_elastic_quota_of_the_api_server(tree: GroupQuotaManager) -> None:
    """ElasticQuota has no status subresource: status.used goes with the object's patch."""
    srv = start()
    client = Client.from_kubeconfig(srv.kubeconfig)
    try:
        install_crds(client)
        q = {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "ElasticQuota",
             **quota("a", "2", "8")}
        q["metadata"]["namespace"] = "default"
        q["status"] = {"used": {"cpu": "1", "nvidia.com/gpu": "2"}}
        client.create(ELASTIC_QUOTAS, q, "default")
        tree.update_quota(q)
        tree.on_pod_add("a", pod("p1", "1500m", "1Gi"))
        ctrl = ElasticQuotaController(tree, client, ApiLister(client), FakeClock())
        assert ctrl.sync() == 1
        stored = client.get(ELASTIC_QUOTAS, "a", "default")
        assert stored["status"] == {"used": {"cpu": "1500m", "memory": "1Gi"}}
        assert annotation(stored, ANNOTATION_RUNTIME) == {"cpu": "1500m", "memory": "1Gi"}
        assert ctrl.sync() == 0
    finally:
        client.close()
        srv.stop()


def test_a_typed_informer_hands_models(tree: GroupQuotaManager) -> None:
    client, ctrl = setup(tree, quota("a", "2", "8"))
    tree.on_pod_add("a", pod("p1", "1", "0"))
    model = ElasticQuota.model_validate({"apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
                                         "kind": "ElasticQuota", **quota("a", "2", "8")})
    assert ctrl.sync_quota(model)
    assert client.objects["a"]["status"]["used"] == {"cpu": "1", "memory": "0"}


def test_writes_each_quota_trees_figures_under_multi_quota_tree() -> None:
    gate = FeatureGate(SCHEDULER_FEATURE_GATES)
    gate.set_enabled(MULTI_QUOTA_TREE, True)
    trees = QuotaManagers.from_args(ElasticQuotaArgs(), gate)
    trees.default.on_node_add({"metadata": {"name": "n1"},
                               "status": {"allocatable": {"cpu": "10", "memory": str(40 * GI)}}})
    root = quota("pool-root", "4", "1000")
    root["metadata"]["labels"].update({LABEL_QUOTA_TREE_ID: "pool", LABEL_QUOTA_IS_ROOT: "true"})
    root["metadata"]["annotations"][ANNOTATION_TOTAL_RESOURCE] = '{"cpu":"4","memory":"8Gi"}'
    team = quota("team-t", "0", "10", parent="pool-root")
    team["metadata"]["labels"][LABEL_QUOTA_TREE_ID] = "pool"
    plain = quota("plain", "0", "10")
    for q in (root, team, plain):
        trees.update_quota(q)
    trees.for_quota("team-t").on_pod_add("team-t", pod("t", "8", "1Gi"))
    trees.default.on_pod_add("plain", pod("p", "8", "1Gi"))
    client = FakeQuotaClient({q["metadata"]["name"]: json.loads(json.dumps(q))
                              for q in (root, team, plain)})
    ctrl = ElasticQuotaController(trees, client, client, FakeClock())
    assert ctrl.sync() == 3
    # The tree has its root's 4 cpus, the default tree the node's 10 less those.
    assert annotation(client.objects["team-t"], ANNOTATION_RUNTIME)["cpu"] == "4"
    assert annotation(client.objects["plain"], ANNOTATION_RUNTIME)["cpu"] == "6"
