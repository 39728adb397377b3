"""MultiQuotaTree: each quota tree has its own manager and total, taken from the default tree
(upstream ``quota_handler_test.go``, the MultiQuotaTree cases), and the scheduler admits each
tree's pods within that tree's total; over-use revocation follows a tree's total."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from api.extension.elastic_quota import (
    ANNOTATION_TOTAL_RESOURCE,
    DEFAULT_QUOTA_NAME,
    SYSTEM_QUOTA_NAME,
)
from api.extension.objects import KubeDict
from pkg.features import FeatureGate, default_feature_gate
from pkg.features.features import MULTI_QUOTA_TREE
from pkg.features.scheduler_features import SCHEDULER_FEATURE_GATES
from pkg.util.clock import FakeClock
from scheduler.apis.config import ElasticQuotaArgs
from scheduler.plugins.elasticquota.handlers import QuotaTreeFeeder
from scheduler.plugins.elasticquota.managers import QuotaManagers
from scheduler.plugins.elasticquota.quota_overuse_revoke import QuotaOverUsedRevokeController
from scheduler.plugins.elasticquota.testing import (
    QuotaCluster,
    cpu_pods,
    make_quota,
    make_quota_pod,
    make_tree_quota,
)

NODE = {"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "10", "memory": "40Gi"}}}
GI = 1 << 30


def feeder_with(multi_tree: bool) -> QuotaTreeFeeder:
    gate = FeatureGate(SCHEDULER_FEATURE_GATES)
    gate.set_enabled(MULTI_QUOTA_TREE, multi_tree)
    f = QuotaTreeFeeder(QuotaManagers.from_args(ElasticQuotaArgs(), gate), None)
    f.node_handler().on_add(NODE, True)
    return f


@pytest.fixture
def feeder() -> QuotaTreeFeeder:
    return feeder_with(True)


def root(tree: str, cpu: str, **kw: Any) -> dict[str, Any]:
    return make_tree_quota(f"{tree}-root", tree, {"cpu": "1000", "memory": "1000Gi"},
                           total={"cpu": cpu, "memory": "8Gi"}, is_parent=True, **kw)


def test_gate_off_keeps_one_tree() -> None:
    f = feeder_with(False)
    f.on_quota_add(root("t1", "4"))
    f.on_quota_add(make_tree_quota("a", "t1", {"cpu": "4"}, parent="t1-root"))
    assert f.managers.trees().keys() == {""}
    assert f.manager.get_quota_info("a") is not None
    # total-resource means nothing without the gate.
    assert f.manager.cluster_total() == {"cpu": 10_000, "memory": 40 * GI}


def test_quota_with_tree_id_gets_its_own_tree(feeder: QuotaTreeFeeder) -> None:
    feeder.on_quota_add(make_tree_quota("a", "t1", {"cpu": "4"}))
    feeder.on_quota_add(make_quota("plain", {"cpu": "4"}))
    tree = feeder.managers.trees()["t1"]
    assert feeder.managers.for_quota("a") is tree
    assert tree.get_quota_info("a") is not None
    assert feeder.manager.get_quota_info("a") is None
    assert feeder.managers.for_quota("plain") is feeder.manager
    # Built-in quotas and unknown names stay in the default tree.
    for name in (DEFAULT_QUOTA_NAME, SYSTEM_QUOTA_NAME, "nope"):
        assert feeder.managers.for_quota(name) is feeder.manager
    assert {"a", "plain", DEFAULT_QUOTA_NAME}.issubset(feeder.managers.quota_names())


def test_root_total_is_taken_from_the_default_tree(feeder: QuotaTreeFeeder) -> None:
    feeder.on_quota_add(root("t1", "4"))
    tree = feeder.managers.trees()["t1"]
    assert tree.cluster_total() == {"cpu": 4000, "memory": 8 * GI}
    assert feeder.manager.cluster_total() == {"cpu": 6000, "memory": 32 * GI}
    # A new total (the profile's nodes changed) moves only the difference.
    feeder.on_quota_update(root("t1", "4"), root("t1", "6"))
    assert tree.cluster_total()["cpu"] == 6000
    assert feeder.manager.cluster_total()["cpu"] == 4000
    # Nodes keep feeding the default tree.
    feeder.node_handler().on_add({**NODE, "metadata": {"name": "n2"}}, False)
    assert feeder.manager.cluster_total()["cpu"] == 14_000
    assert tree.cluster_total()["cpu"] == 6000


def test_ignore_default_tree_leaves_the_default_total(feeder: QuotaTreeFeeder) -> None:
    feeder.on_quota_add(root("t1", "4", ignore_default_tree=True))
    assert feeder.managers.trees()["t1"].cluster_total()["cpu"] == 4000
    assert feeder.manager.cluster_total()["cpu"] == 10_000


def test_deleting_the_root_gives_the_total_back(feeder: QuotaTreeFeeder) -> None:
    feeder.on_quota_add(root("t1", "4"))
    feeder.on_quota_add(root("t2", "3"))
    assert feeder.manager.cluster_total()["cpu"] == 3000
    feeder.on_quota_delete(root("t1", "4"))
    assert feeder.manager.cluster_total()["cpu"] == 7000
    assert "t1" not in feeder.managers.trees()
    assert feeder.managers.trees()["t2"].cluster_total()["cpu"] == 3000
    # Back again: a fresh tree takes its total once more.
    feeder.on_quota_add(root("t1", "4"))
    assert feeder.manager.cluster_total()["cpu"] == 3000


def test_runtime_of_a_tree_is_bounded_by_its_total(feeder: QuotaTreeFeeder) -> None:
    feeder.on_quota_add(root("t1", "4"))
    feeder.on_quota_add(make_tree_quota("a", "t1", {"cpu": "100", "memory": "100Gi"},
                                        parent="t1-root"))
    feeder.on_quota_add(make_quota("plain", {"cpu": "100", "memory": "100Gi"}))
    for i in range(8):
        feeder.on_pod_add(make_quota_pod(f"a{i}", "a", cpu="1", memory="1Gi"))
        feeder.on_pod_add(make_quota_pod(f"p{i}", "plain", cpu="1", memory="1Gi"))
    a = feeder.managers.quota_summary("a")
    plain = feeder.managers.quota_summary("plain")
    assert a is not None and plain is not None
    assert a.runtime["cpu"] == 4000
    assert plain.runtime["cpu"] == 6000
    assert a.request["cpu"] == plain.request["cpu"] == 8000


def test_pod_moves_between_trees_with_its_use(feeder: QuotaTreeFeeder) -> None:
    feeder.on_quota_add(make_tree_quota("a", "t1", {"cpu": "4"}))
    feeder.on_quota_add(make_tree_quota("b", "t2", {"cpu": "4"}))
    pod = make_quota_pod("p", "a", cpu="1")
    feeder.on_pod_add(pod)
    feeder.managers.for_quota("a").reserve_pod("a", pod)
    moved = make_quota_pod("p", "b", cpu="1")
    feeder.on_pod_update(pod, moved)
    a, b = feeder.managers.quota_summary("a"), feeder.managers.quota_summary("b")
    assert a is not None and b is not None
    assert (a.request.get("cpu", 0), a.used.get("cpu", 0)) == (0, 0)
    # Reserved, not bound yet: it keeps using whichever quota it is in.
    assert (b.request["cpu"], b.used["cpu"]) == (1000, 1000)
    assert feeder.quota_of(moved) == "b"


def test_pod_of_a_deleted_tree_quota_falls_back_to_the_default(feeder: QuotaTreeFeeder) -> None:
    quota = make_tree_quota("a", "t1", {"cpu": "4"})
    feeder.on_quota_add(quota)
    pod = make_quota_pod("p", "a", cpu="1", node="n1")
    feeder.on_pod_add(pod)
    feeder.on_quota_delete(quota)
    assert feeder.quota_of(pod) == DEFAULT_QUOTA_NAME
    default = feeder.manager.get_quota_info(DEFAULT_QUOTA_NAME)
    assert default is not None and default.used["cpu"] == 1000
    assert "t1" not in feeder.managers.trees()


def test_malformed_total_resource_changes_nothing(feeder: QuotaTreeFeeder) -> None:
    bad = root("t1", "4")
    bad["metadata"]["annotations"][ANNOTATION_TOTAL_RESOURCE] = "{not json"
    with pytest.raises(ValueError, match="total-resource"):
        feeder.managers.update_quota(bad)
    assert feeder.managers.trees().keys() == {""}
    assert feeder.manager.cluster_total()["cpu"] == 10_000


@pytest.fixture
def multi_tree_cluster() -> Iterator[QuotaCluster]:
    was = default_feature_gate.enabled(MULTI_QUOTA_TREE)
    default_feature_gate.set_enabled(MULTI_QUOTA_TREE, True)
    try:
        c = QuotaCluster("8")
    finally:
        # The plugin read the gate when it was built.
        default_feature_gate.set_enabled(MULTI_QUOTA_TREE, was)
    yield c
    c.stop()


def test_trees_admit_pods_within_their_own_totals(multi_tree_cluster: QuotaCluster) -> None:
    c = multi_tree_cluster
    for tree, cpu in (("t1", "3"), ("t2", "2")):
        c.add_quota(make_tree_quota(f"{tree}-root", tree, {"cpu": "1000"},
                                    total={"cpu": cpu}, is_parent=True))
    c.add_quota(make_tree_quota("a", "t1", {"cpu": "10"}, parent="t1-root"))
    c.add_quota(make_tree_quota("b", "t2", {"cpu": "10"}, parent="t2-root"))
    c.add_quota(make_quota("plain", {"cpu": "10"}))
    pods = {q: cpu_pods(c, q, q, 4) for q in ("a", "b", "plain")}
    bound = c.schedule()
    # 8 cpus: 3 for tree t1, 2 for tree t2, the 3 left for the default tree.
    left = {q: [p for p in pods[q] if f"default/{p}" not in bound] for q in pods}
    assert [len(left[q]) for q in ("a", "b", "plain")] == [1, 2, 1]
    for q in pods:
        assert f"Insufficient quotas, quotaName: {q}," in c.failure(left[q][0])
    # Why pending: the path within the pod's own tree, its root's runtime the tree's total.
    state = c.plugin.explain_pod(f"default/{left['a'][0]}")
    assert state is not None
    path = state.data["path"]
    assert isinstance(path, list)
    assert [(level["name"], level["runtime"]) for level in path] == [
        ("koordinator-root-quota", {"cpu": "3"}), ("t1-root", {"cpu": "3"}),
        ("a", {"cpu": "3"})]


@dataclass
class Evictions:
    """A client that records evictions (``namespace/name``); nothing else is expected."""

    evicted: list[str] = field(default_factory=list)
    pods: dict[str, KubeDict] = field(default_factory=dict)

    def request(self, method: str, path: str, *, body: Any = None) -> Any:
        assert method == "POST" and path.endswith("/eviction"), path
        self.evicted.append(f"{body['metadata']['namespace']}/{body['metadata']['name']}")
        return {}

    def patch(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("unexpected patch")

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("unexpected delete")

    def get_by_key(self, key: str) -> KubeDict | None:
        return self.pods.get(key)


def test_revocation_follows_a_trees_shrinking_total(feeder: QuotaTreeFeeder) -> None:
    # 10 node cpus: 6 for tree t1, where a uses 6; 4 left for plain, which uses 3.
    feeder.on_quota_add(root("t1", "6"))
    feeder.on_quota_add(make_tree_quota("a", "t1", {"cpu": "10"}, parent="t1-root"))
    feeder.on_quota_add(make_quota("plain", {"cpu": "10"}))
    client, clock = Evictions(), FakeClock()
    for name, quota, cpu, priority in (("a0", "a", "2", 1), ("a1", "a", "2", 5),
                                       ("a2", "a", "2", 10), ("p0", "plain", "3", 0)):
        pod = make_quota_pod(name, quota, cpu=cpu, node="n1", priority=priority)
        client.pods[f"default/{name}"] = pod
        feeder.on_pod_add(pod)
    revoker = QuotaOverUsedRevokeController(
        feeder.managers, client, client, clock,
        ElasticQuotaArgs(monitor_all_quotas=True, delay_evict_time=0))
    assert revoker.revoke() == []
    clock.step(1)
    assert revoker.revoke() == []
    # The profile's nodes shrink: tree t1 has 4 cpus for a's 6; a's least important pod goes.
    feeder.on_quota_update(root("t1", "6"), root("t1", "4"))
    clock.step(1)
    assert revoker.revoke() == ["default/a0"]
