"""The quota tree: upstream ``group_quota_manager_test.go`` cases and the §8 rules, driven by
ElasticQuota, Pod and Node objects as the informers deliver them."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from api.extension.elastic_quota import (
    ANNOTATION_QUOTA_NAMESPACES,
    ANNOTATION_SHARED_WEIGHT,
    DEFAULT_QUOTA_NAME,
    LABEL_ALLOW_LENT_RESOURCE,
    LABEL_PREEMPTIBLE,
    LABEL_QUOTA_IS_PARENT,
    LABEL_QUOTA_NAME,
    LABEL_QUOTA_PARENT,
    ROOT_QUOTA_NAME,
    SYSTEM_QUOTA_NAME,
)
from api.meta import format_time
from api.thirdparty.schedulerplugins.v1alpha1.elastic_quota import ElasticQuota
from pkg.features import FeatureGate, default_feature_gate
from pkg.features.features import DISABLE_DEFAULT_QUOTA, ELASTIC_QUOTA_GUARANTEE_USAGE
from pkg.features.scheduler_features import (
    ELASTIC_QUOTA_IGNORE_TERMINATING_POD,
    ELASTIC_QUOTA_IMMEDIATE_IGNORE_TERMINATING_POD,
)
from pkg.util.clock import FakeClock
from scheduler.apis.config import ElasticQuotaArgs
from scheduler.plugins.elasticquota.core import group_quota_manager as gqm_module
from scheduler.plugins.elasticquota.core import runtime_quota_calculator
from scheduler.plugins.elasticquota.core.group_quota_manager import GroupQuotaManager

GI = 1024**3
Obj = dict[str, Any]


def quota(name: str, parent: str = ROOT_QUOTA_NAME, max_cpu: float = 96, max_mem: int = 160 * GI,
          min_cpu: float = 0, min_mem: int = 0, *, allow_lent: bool = True,
          is_parent: bool = False, namespace: str = "", weight: dict[str, str] | None = None,
          namespaces: list[str] | None = None) -> Obj:
    """Upstream's CreateQuota: cpu in cores, memory in bytes."""
    annotations = {}
    if weight is not None:
        annotations[ANNOTATION_SHARED_WEIGHT] = json.dumps(weight)
    if namespaces is not None:
        annotations[ANNOTATION_QUOTA_NAMESPACES] = json.dumps(namespaces)
    return {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "ElasticQuota",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations,
                     "labels": {LABEL_QUOTA_PARENT: parent,
                                LABEL_QUOTA_IS_PARENT: str(is_parent).lower(),
                                LABEL_ALLOW_LENT_RESOURCE: str(allow_lent).lower()}},
        "spec": {"max": {"cpu": str(max_cpu), "memory": str(max_mem)},
                 "min": {"cpu": str(min_cpu), "memory": str(min_mem)}},
    }


def pod(name: str, cpu: str, memory: str = "0", *, namespace: str = "default",
        quota_name: str = "", node: str = "", phase: str = "Pending",
        non_preemptible: bool = False, extra: dict[str, str] | None = None) -> Obj:
    labels = {LABEL_QUOTA_NAME: quota_name} if quota_name else {}
    if non_preemptible:
        labels[LABEL_PREEMPTIBLE] = "false"
    requests = {"cpu": cpu, "memory": memory, **(extra or {})}
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"nodeName": node, "containers": [{"name": "c",
                                                       "resources": {"requests": requests}}]},
            "status": {"phase": phase}}


def node(name: str, cpu: float, memory: int) -> Obj:
    return {"metadata": {"name": name},
            "status": {"allocatable": {"cpu": str(cpu), "memory": str(memory)}}}


def rl(cpu_cores: float, memory: int) -> dict[str, int]:
    return {"cpu": int(cpu_cores * 1000), "memory": memory}


def manager(cpu: float = 96, memory: int = 160 * GI, *,
            gate: FeatureGate | None = None) -> GroupQuotaManager:
    m = GroupQuotaManager(rl(1000, 1000 * GI), rl(1000, 1000 * GI),
                          feature_gate=gate or default_feature_gate.copy())
    m.on_node_add(node("n1", cpu, memory))
    return m


def request(m: GroupQuotaManager, quota_name: str, cpu: float, memory: int = 0,
            name: str | None = None) -> None:
    """A pending pod of the quota (upstream's updateGroupDeltaRequestNoLock)."""
    m.on_pod_add(quota_name, pod(name or f"{quota_name}-{cpu}", str(cpu), str(memory)))


def test_quota_add_fills_the_shared_weight_from_max() -> None:
    """Upstream QuotaAdd / AutoMakeUpSharedWeight / AutoMakeUpScaleRatio2."""
    m = manager()
    for i, min_cpu in enumerate((50, 80, 40, 0, 96), 1):
        m.update_quota(quota(f"test{i}", min_cpu=min_cpu, min_mem=min_cpu * GI))
    m.update_quota(quota("zero", weight={"cpu": "0", "memory": "0"}))
    m.update_quota(quota("bad", weight={"cpu": "x"}))
    for name in ("test1", "zero", "bad"):
        info = m.get_quota_info(name)
        assert info is not None and info.shared_weight == rl(96, 160 * GI)
    assert m.resource_keys() == {"cpu", "memory"}
    assert m.quota_names() >= {ROOT_QUOTA_NAME, SYSTEM_QUOTA_NAME, DEFAULT_QUOTA_NAME, "test5"}


def test_quota_model_and_dict_build_the_same_info() -> None:
    m = manager()
    m.update_quota(ElasticQuota.model_validate(quota("a", min_cpu=50)))
    info = m.get_quota_info("a")
    assert info is not None and info.min == rl(50, 0) and info.max == rl(96, 160 * GI)


def test_update_quota_delta_request() -> None:
    """Upstream UpdateQuotaDeltaRequest: 96 cores shared by two hungry quotas."""
    m = manager()
    m.update_quota(quota("test1", min_cpu=50, min_mem=80 * GI))
    m.update_quota(quota("test2", min_cpu=40, min_mem=80 * GI))
    request(m, "test1", 120, 200 * GI)
    assert m.refresh_runtime("test1") == rl(96, 160 * GI)
    request(m, "test2", 150, 210 * GI)
    assert m.refresh_runtime("test1") == rl(53, 80 * GI)
    assert m.refresh_runtime("test2") == rl(43, 80 * GI)


def test_update_quota_internal_and_request() -> None:
    """Upstream UpdateQuotaInternalAndRequest: a smaller max caps the runtime."""
    m = manager()
    m.update_quota(quota("test1", min_cpu=50, min_mem=80 * GI))
    request(m, "test1", 120, 290 * GI)
    assert m.refresh_runtime("test1") == rl(96, 160 * GI)
    m.update_quota(quota("test1", max_cpu=64, max_mem=100 * GI, min_cpu=60, min_mem=90 * GI))
    info = m.get_quota_info("test1")
    assert info is not None and info.max == rl(64, 100 * GI)
    assert m.refresh_runtime("test1") == rl(64, 100 * GI)


def test_not_allow_lent_resource() -> None:
    """Upstream NotAllowLentResource."""
    m = manager(100, 0)
    m.update_quota(quota("test1", max_mem=0, min_cpu=60))
    m.update_quota(quota("test2", max_mem=0, min_cpu=40, allow_lent=False))
    request(m, "test1", 120)
    assert m.refresh_runtime("test1") == rl(60, 0)
    assert m.refresh_runtime("test2") == rl(40, 0)


@pytest.mark.parametrize(("root_lends", "child2_lends", "steps"), [
    # Upstream NotAllowLentResource_2/3/4: (root, child1, child2) runtimes after
    # no request, child1 asking 40, child1 asking 60.
    (False, False, [(60, 20, 20), (60, 40, 20), (80, 60, 20)]),
    (True, True, [(20, 20, 0), (40, 40, 0), (60, 60, 0)]),
    (True, False, [(40, 20, 20), (60, 40, 20), (80, 60, 20)]),
])
def test_not_allow_lent_resource_in_a_tree(root_lends: bool, child2_lends: bool,
                                           steps: list[tuple[int, int, int]]) -> None:
    m = manager(100, 0)
    m.update_quota(quota("test-root", max_mem=0, min_cpu=60, allow_lent=root_lends,
                         is_parent=True))
    m.update_quota(quota("test-child1", "test-root", max_mem=0, min_cpu=20, allow_lent=False))
    m.update_quota(quota("test-child2", "test-root", max_mem=0, min_cpu=20,
                         allow_lent=child2_lends))
    for step, (extra, expected) in enumerate(zip((0, 40, 20), steps, strict=True)):
        if extra:
            request(m, "test-child1", extra, name=f"p{step}")
        got = tuple(m.refresh_runtime(n) for n in ("test-root", "test-child1", "test-child2"))
        assert got == tuple(rl(c, 0) for c in expected)


def test_reference_min_scaling_example() -> None:
    """§8.4: three children with min 100 under 200 → autoScaleMin 66666m, runtime
    66667/66667/66666m."""
    m = manager(200, 0)
    for name in ("a", "b", "c"):
        m.update_quota(quota(name, max_cpu=200, max_mem=0, min_cpu=100))
        request(m, name, 150)
    assert [m.refresh_runtime(n) for n in "abc"] == [{"cpu": 66667, "memory": 0},
                                                       {"cpu": 66667, "memory": 0},
                                                       {"cpu": 66666, "memory": 0}]
    info = m.get_quota_info("a")
    assert info is not None and info.auto_scale_min == {"cpu": 66666, "memory": 0}
    # A bigger cluster: the original min again.
    m.on_node_add(node("n2", 200, 0))
    assert m.refresh_runtime("c") == {"cpu": 133333, "memory": 0}
    assert info.auto_scale_min == {"cpu": 100000, "memory": 0}


def test_min_scaling_disabled_keeps_min() -> None:
    m = GroupQuotaManager({}, {}, scale_min_quota_enabled=False,
                          feature_gate=default_feature_gate.copy())
    m.on_node_add(node("n1", 200, 0))
    for name in "abc":
        m.update_quota(quota(name, max_cpu=200, max_mem=0, min_cpu=100))
        request(m, name, 150)
    assert m.refresh_runtime("a") == {"cpu": 100000, "memory": 0}


def test_pod_lifecycle_request_and_used_propagate_to_the_root() -> None:
    m = manager()
    m.update_quota(quota("parent", is_parent=True, min_cpu=50))
    m.update_quota(quota("leaf", "parent", max_cpu=10, min_cpu=5))
    p = pod("p", "4", "1Gi", quota_name="leaf", extra={"nvidia.com/gpu": "1"})
    m.on_pod_add("leaf", p)
    leaf, parent, root = (m.get_quota_info(n) for n in ("leaf", "parent", ROOT_QUOTA_NAME))
    assert leaf is not None and parent is not None and root is not None
    # gpu is not in the quota's max: not counted.
    assert leaf.request == rl(4, GI) and parent.child_request == rl(4, GI)
    assert leaf.used == {} and root.used == {}
    bound = {**p, "spec": {**p["spec"], "nodeName": "n1"}}
    m.on_pod_update("leaf", "leaf", p, bound)
    assert leaf.used == rl(4, GI) and parent.used == rl(4, GI) and root.used == rl(4, GI)
    # A bigger pod than the leaf's max: its limited request stops at max.
    m.on_pod_add("leaf", pod("big", "20", quota_name="leaf"))
    assert leaf.request == {"cpu": 24000, "memory": GI}
    assert parent.child_request == {"cpu": 10000, "memory": GI}
    m.on_pod_delete("leaf", bound)
    m.on_pod_delete("leaf", pod("big", "20"))
    assert leaf.request == rl(0, 0) and leaf.used == rl(0, 0)
    assert parent.child_request == rl(0, 0) and root.used == rl(0, 0)


def test_reserve_unreserve_and_non_preemptible() -> None:
    m = manager()
    m.update_quota(quota("q"))
    p = pod("p", "2", quota_name="q", non_preemptible=True)
    m.on_pod_add("q", p)
    info = m.get_quota_info("q")
    assert info is not None
    assert info.non_preemptible_request == rl(2, 0) and info.used == {}
    m.reserve_pod("q", p)
    assert info.used == rl(2, 0) and info.non_preemptible_used == rl(2, 0)
    m.reserve_pod("q", p)  # twice is once
    assert info.used == rl(2, 0)
    m.unreserve_pod("q", p)
    assert info.used == rl(0, 0) and info.non_preemptible_used == rl(0, 0)
    assert info.request == rl(2, 0)


def test_terminated_pod_on_a_node_is_not_used() -> None:
    m = manager()
    m.update_quota(quota("q"))
    m.on_pod_add("q", pod("done", "2", node="n1", phase="Succeeded"))
    info = m.get_quota_info("q")
    assert info is not None and info.request == rl(2, 0) and info.used == {}


def test_pod_moves_between_quotas() -> None:
    m = manager()
    m.update_quota(quota("a"))
    m.update_quota(quota("b"))
    p = pod("p", "3", node="n1")
    m.on_pod_add("a", p)
    m.on_pod_update("a", "b", p, p)
    a, b = m.get_quota_info("a"), m.get_quota_info("b")
    assert a is not None and b is not None
    assert (a.request, a.used) == (rl(0, 0), rl(0, 0))
    assert (b.request, b.used) == (rl(3, 0), rl(3, 0))


def test_system_and_default_used_leave_the_root() -> None:
    m = manager(100, 100 * GI)
    m.update_quota(quota("q", max_cpu=100, max_mem=100 * GI))
    request(m, "q", 100, 100 * GI)
    assert m.refresh_runtime("q") == rl(100, 100 * GI)
    m.on_pod_add(SYSTEM_QUOTA_NAME, pod("kube-proxy", "10", "1Gi", node="n1"))
    m.on_pod_add(DEFAULT_QUOTA_NAME, pod("other", "20", node="n1"))
    assert m.refresh_runtime(ROOT_QUOTA_NAME) == rl(70, 99 * GI)
    assert m.refresh_runtime("q") == rl(70, 99 * GI)
    assert m.refresh_runtime(SYSTEM_QUOTA_NAME) == rl(1000, 1000 * GI)
    m.on_node_delete(node("n1", 100, 100 * GI))
    assert m.cluster_total() == rl(0, 0)


def test_node_updates_change_the_total() -> None:
    m = manager(10, GI)
    m.on_node_update(node("n1", 10, GI), node("n1", 20, 2 * GI))
    m.on_node_add(node("n2", 5, GI))
    m.on_node_add(node("n2", 5, GI))  # already known
    assert m.cluster_total() == rl(25, 3 * GI)


def test_child_before_parent_and_moves_between_parents() -> None:
    m = manager(100, 0)
    m.update_quota(quota("leaf", "p1", max_mem=0))
    request(m, "leaf", 30)
    assert m.refresh_runtime("leaf") == rl(0, 0)  # orphan: no share yet
    m.update_quota(quota("p1", max_mem=0, is_parent=True))
    p1 = m.get_quota_info("p1")
    assert p1 is not None and p1.child_request == rl(30, 0)
    assert m.refresh_runtime("leaf") == rl(30, 0)
    m.update_quota(quota("p2", max_mem=0, is_parent=True))
    m.update_quota(quota("leaf", "p2", max_mem=0))
    p2 = m.get_quota_info("p2")
    assert p2 is not None and p2.child_request == rl(30, 0) and p1.child_request == rl(0, 0)
    assert m.children_of("p2") == {"leaf"} and m.children_of("p1") == set()
    assert m.refresh_runtime("leaf") == rl(30, 0)
    assert m.delete_quota("leaf")
    assert p2.child_request == rl(0, 0)
    assert not m.delete_quota(SYSTEM_QUOTA_NAME)


def test_max_names_change_recounts_pods() -> None:
    m = manager()
    m.update_quota({**quota("q"), "spec": {"max": {"cpu": "10"}}})
    m.on_pod_add("q", pod("p", "2", "1Gi"))
    info = m.get_quota_info("q")
    assert info is not None and info.request == {"cpu": 2000}
    m.update_quota(quota("q", max_cpu=10))
    info = m.get_quota_info("q")
    assert info is not None and info.request == rl(2, GI)


def test_malformed_quota_is_refused_and_state_kept() -> None:
    m = manager()
    m.update_quota(quota("q", max_cpu=10))
    with pytest.raises(ValueError, match="q"):
        m.update_quota({**quota("q"), "spec": {"max": {"cpu": "ten"}}})
    info = m.get_quota_info("q")
    assert info is not None and info.max["cpu"] == 10000


def test_pod_to_quota_mapping() -> None:
    m = manager()
    m.update_quota(quota("team-a", namespace="team-a"))
    m.update_quota(quota("shared", namespaces=["ns1", "ns2"]))
    assert m.quota_name_for_pod(pod("p", "1", namespace="team-a")) == "team-a"
    assert m.quota_name_for_pod(pod("p", "1", namespace="ns2")) == "shared"
    assert m.quota_name_for_pod(pod("p", "1", namespace="ns1", quota_name="team-a")) == "team-a"
    assert m.quota_name_for_pod(pod("p", "1", namespace="x")) == DEFAULT_QUOTA_NAME
    assert m.quota_name_for_pod(pod("p", "1", quota_name="nope")) == DEFAULT_QUOTA_NAME
    gate = default_feature_gate.copy()
    gate.set_enabled(DISABLE_DEFAULT_QUOTA, True)
    assert manager(gate=gate).quota_name_for_pod(pod("p", "1", namespace="x")) == ""


def test_one_pod_change_recomputes_only_its_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refreshing after a pod event redistributes the root's children and the pod's
    siblings, nothing else."""
    m = manager(1000, 0)
    for p in range(3):
        m.update_quota(quota(f"p{p}", max_cpu=1000, max_mem=0, is_parent=True))
        for leaf in range(4):
            m.update_quota(quota(f"p{p}-{leaf}", f"p{p}", max_cpu=1000, max_mem=0))
            request(m, f"p{p}-{leaf}", 10 + leaf)
    for name in m.quota_names():
        m.refresh_runtime(name)
    sizes: list[int] = []
    real = runtime_quota_calculator.Dimension.redistribute

    def counting(dimension: runtime_quota_calculator.Dimension, total: int) -> None:
        sizes.append(len(dimension.names))
        real(dimension, total)

    monkeypatch.setattr(runtime_quota_calculator.Dimension, "redistribute", counting)
    request(m, "p1-2", 5, name="extra")
    assert m.refresh_runtime("p1-2") == rl(17, 0)
    # cpu of the root's 3 children, then of p1's 4 children; memory did not move.
    assert sorted(sizes) == [3, 4]
    sizes.clear()
    assert m.refresh_runtime("p1-3") == rl(13, 0)
    assert m.refresh_runtime("p2-0") == rl(10, 0)
    # p1's children were computed already; p2's runtime did not move, so neither did theirs.
    assert sizes == []
    assert gqm_module.GroupQuotaManager is GroupQuotaManager


@pytest.mark.parametrize(("guarantee_usage", "expected"), [(False, (18, 82)), (True, (30, 70))])
def test_guarantee_usage_protects_what_is_used(guarantee_usage: bool,
                                               expected: tuple[int, int]) -> None:
    """ElasticQuotaGuaranteeUsage: guarantee = max(min, allocated), and nothing is lent."""
    gate = default_feature_gate.copy()
    gate.set_enabled(ELASTIC_QUOTA_GUARANTEE_USAGE, guarantee_usage)
    m = manager(100, 0, gate=gate)
    m.update_quota(quota("a", max_cpu=100, max_mem=0, min_cpu=10, weight={"cpu": "1"}))
    m.update_quota(quota("b", max_cpu=100, max_mem=0, min_cpu=10, weight={"cpu": "9"}))
    m.on_pod_add("a", pod("used", "30", node="n1"))
    request(m, "b", 100)
    a, b = m.refresh_runtime("a"), m.refresh_runtime("b")
    assert a is not None and b is not None
    assert (a["cpu"], b["cpu"]) == (expected[0] * 1000, expected[1] * 1000)
    info = m.get_quota_info("a")
    assert info is not None
    assert info.guaranteed == ({"cpu": 30000, "memory": 0} if guarantee_usage else {})
    root = m.get_quota_info(ROOT_QUOTA_NAME)
    # The root has allocated its children's guarantees: a's use and b's min.
    assert root is not None
    assert root.allocated == ({"cpu": 40000, "memory": 0} if guarantee_usage else {})


def test_update_quota_request_step_by_step() -> None:
    """Upstream UpdateQuotaRequest: below min, above max, then shared with a sibling."""
    m = manager()
    m.update_quota(quota("test1", min_cpu=50, min_mem=80 * GI))
    m.update_quota(quota("test2", min_cpu=40, min_mem=80 * GI))
    request(m, "test1", 60, 100 * GI, name="first")
    assert m.refresh_runtime("test1") == rl(60, 100 * GI)
    m.on_pod_delete("test1", pod("first", "60"))
    request(m, "test1", 120, 200 * GI)
    assert m.refresh_runtime("test1") == rl(96, 160 * GI)
    request(m, "test2", 150, 210 * GI)
    assert m.refresh_runtime("test1") == rl(53, 80 * GI)
    assert m.refresh_runtime("test2") == rl(43, 80 * GI)


def test_multi_quota_add() -> None:
    """Upstream MultiQuotaAdd: every parent gets its own set of children."""
    m = manager()
    m.update_quota(quota("test1", min_cpu=60, min_mem=100 * GI, is_parent=True))
    for i, (min_cpu, min_mem) in enumerate(((10, 30), (20, 30), (30, 40)), 1):
        m.update_quota(quota(f"test1-sub{i}", "test1", min_cpu=min_cpu, min_mem=min_mem * GI))
    m.update_quota(quota("test2", max_cpu=300, max_mem=400 * GI, min_cpu=200,
                         min_mem=300 * GI, is_parent=True))
    m.update_quota(quota("test2-sub1", "test2", min_cpu=96, min_mem=160 * GI))
    m.update_quota(quota("test2-sub2", "test2", max_cpu=82, max_mem=100 * GI, min_cpu=80,
                         min_mem=80 * GI, is_parent=True))
    m.update_quota(quota("test2-sub2-1", "test2-sub2"))
    assert len(m.quota_names()) == 11
    assert m.children_of(ROOT_QUOTA_NAME) == {"test1", "test2"}
    assert m.children_of("test2") == {"test2-sub1", "test2-sub2"}
    assert m.children_of("test2-sub2") == {"test2-sub2-1"}


def test_multi_update_quota_request_follows_the_child_max() -> None:
    """Upstream MultiUpdateQuotaRequest: a parent's request is its children's limited request."""
    m = manager()
    m.update_quota(quota("test1", min_cpu=50, min_mem=80 * GI, is_parent=True))
    m.update_quota(quota("test1-a", "test1", min_cpu=50, min_mem=80 * GI, is_parent=True))
    m.update_quota(quota("a-123", "test1-a", min_cpu=50, min_mem=80 * GI))
    request(m, "a-123", 96, 130 * GI)
    for name in ("a-123", "test1-a", "test1"):
        assert m.refresh_runtime(name) == rl(96, 130 * GI)
    m.update_quota(quota("a-123", "test1-a", max_cpu=64, max_mem=128 * GI, min_cpu=50,
                         min_mem=80 * GI))
    parent, leaf = m.get_quota_info("test1-a"), m.get_quota_info("a-123")
    assert parent is not None and leaf is not None
    assert parent.max == rl(96, 160 * GI)
    assert m.refresh_runtime("a-123") == rl(64, 128 * GI) == parent.request
    assert leaf.request == rl(96, 130 * GI)
    m.update_quota(quota("a-123", "test1-a", max_cpu=100, max_mem=200 * GI, min_cpu=90,
                         min_mem=160 * GI))
    leaf = m.get_quota_info("a-123")
    assert leaf is not None and parent.request == rl(96, 130 * GI)
    assert m.refresh_runtime("a-123") == rl(96, 130 * GI) == leaf.request


def test_multi_update_quota_request_below_min_between_and_above_max() -> None:
    """Upstream MultiUpdateQuotaRequest2."""
    m = manager()
    m.update_quota(quota("test1", min_cpu=80, min_mem=80 * GI, is_parent=True))
    m.update_quota(quota("test1-a", "test1", max_cpu=60, max_mem=80 * GI, min_cpu=50,
                         min_mem=80 * GI, is_parent=True))
    m.update_quota(quota("a-123", "test1-a", max_cpu=30, max_mem=60 * GI, min_cpu=20,
                         min_mem=40 * GI))
    request(m, "a-123", 10, 30 * GI)
    for name in ("a-123", "test1-a", "test1"):
        assert m.refresh_runtime(name) == rl(10, 30 * GI)
    for add, expected in (((15, 15), (25, 45)), ((30, 30), (30, 60))):
        request(m, "a-123", add[0], add[1] * GI)
        assert m.refresh_runtime("a-123") == rl(expected[0], expected[1] * GI)
        for name in ("test1-a", "test1"):
            info = m.get_quota_info(name)
            assert info is not None and info.request == rl(expected[0], expected[1] * GI)


def test_update_default_quota_group() -> None:
    """Upstream UpdateDefaultQuotaGroup: the default quota's runtime is its max."""
    m = manager()
    m.update_quota({"metadata": {"name": DEFAULT_QUOTA_NAME},
                    "spec": {"max": {"cpu": "100", "memory": "1000"}}})
    assert m.refresh_runtime(DEFAULT_QUOTA_NAME) == rl(100, 1000)


def test_scaled_min_quota_then_a_bigger_cluster() -> None:
    """Upstream MultiUpdateQuotaRequest_WithScaledMinQuota1."""
    m = GroupQuotaManager({}, {}, feature_gate=default_feature_gate.copy())
    m.update_quota(quota("p", max_cpu=1000, max_mem=1000 * GI, min_cpu=300, min_mem=300 * GI,
                         is_parent=True))
    for name in "abc":
        m.update_quota(quota(name, "p", max_cpu=1000, max_mem=1000 * GI, min_cpu=100,
                             min_mem=100 * GI))
        request(m, name, 200, 200 * GI)
    m.on_node_add(node("n1", 200, 200 * GI))
    assert m.refresh_runtime("p") == rl(200, 200 * GI)
    third = {"cpu": 66666, "memory": 200 * GI // 3}
    plus_one = {"cpu": 66667, "memory": 200 * GI // 3 + 1}
    assert [m.refresh_runtime(n) for n in "abc"] == [plus_one, plus_one, third]
    infos = {n: m.get_quota_info(n) for n in "pabc"}
    assert all(i is not None for i in infos.values())
    assert [i.auto_scale_min for i in infos.values() if i] == [rl(200, 200 * GI)] + [third] * 3

    m.on_node_add(node("n2", 400, 400 * GI))
    assert m.refresh_runtime("p") == rl(600, 600 * GI)
    assert [m.refresh_runtime(n) for n in "abc"] == [rl(200, 200 * GI)] * 3
    assert [i.auto_scale_min for i in infos.values() if i] == \
        [rl(300, 300 * GI)] + [rl(100, 100 * GI)] * 3


def test_scaled_min_quota_with_an_idle_sibling() -> None:
    """Upstream MultiUpdateQuotaRequest_WithScaledMinQuota2: an idle child lends its scaled min."""
    m = manager(1, GI)
    m.update_quota(quota("p", max_cpu=1000, max_mem=1000 * GI, min_cpu=300, min_mem=300 * GI,
                         is_parent=True))
    for name in "abc":
        m.update_quota(quota(name, "p", max_cpu=1000, max_mem=1000 * GI, min_cpu=100,
                             min_mem=100 * GI))
    request(m, "a", 200, 200 * GI)
    request(m, "c", 200, 200 * GI)
    m.on_node_add(node("n2", 199, 199 * GI))
    assert m.refresh_runtime("p") == rl(200, 200 * GI)
    assert [m.refresh_runtime(n) for n in "abc"] == \
        [rl(100, 100 * GI), rl(0, 0), rl(100, 100 * GI)]
    b = m.get_quota_info("b")
    assert b is not None and b.auto_scale_min == {"cpu": 66666, "memory": 200 * GI // 3}


def test_request_and_non_preemptible_request_through_three_levels() -> None:
    """Upstream MultiUpdateQuotaRequestAndNonPreemptibleRequest: parents see the limited
    request but the whole non-preemptible request."""
    m = manager()
    m.update_quota(quota("test1", min_cpu=50, min_mem=80 * GI, is_parent=True))
    m.update_quota(quota("test1-sub1", "test1", min_cpu=50, min_mem=80 * GI, is_parent=True))
    m.update_quota(quota("test1-sub1-1", "test1-sub1", min_cpu=50, min_mem=80 * GI))
    m.on_pod_add("test1-sub1-1", pod("np", "50", str(100 * GI), non_preemptible=True))
    m.on_pod_add("test1-sub1-1", pod("p", "70", str(190 * GI)))
    leaf, mid, top = (m.get_quota_info(n) for n in ("test1-sub1-1", "test1-sub1", "test1"))
    assert leaf is not None and mid is not None and top is not None
    assert leaf.request == rl(120, 290 * GI)
    assert leaf.non_preemptible_request == rl(50, 100 * GI)
    for info in (mid, top):
        assert info.request == rl(96, 160 * GI)
        assert info.non_preemptible_request == rl(50, 100 * GI)
        assert info.self_request == {}


def test_update_quota_parent_name_moves_request_and_used() -> None:
    """Upstream UpdateQuotaParentName."""
    m = manager()
    m.update_quota(quota("test1", min_cpu=100, min_mem=160 * GI, is_parent=True))
    m.update_quota(quota("test1-a", "test1", min_cpu=50, min_mem=80 * GI, is_parent=True))
    m.update_quota(quota("a-123", "test1-a", min_cpu=50, min_mem=80 * GI))
    m.update_quota(quota("test2", min_cpu=100, min_mem=160 * GI, is_parent=True))
    m.update_quota(quota("test2-a", "test2", min_cpu=50, min_mem=80 * GI))
    m.on_pod_add("a-123", pod("a", "60", str(100 * GI), node="n1"))
    m.on_pod_add("test2-a", pod("b", "20", str(40 * GI), node="n1"))
    infos = {n: m.get_quota_info(n) for n in ("test1", "test1-a", "a-123", "test2", "test2-a")}
    for name in ("test1", "test1-a", "a-123"):
        info = infos[name]
        assert info is not None and (info.request, info.used) == (rl(60, 100 * GI),) * 2
        assert m.refresh_runtime(name) == rl(60, 100 * GI)
    assert infos["test1"] is not None and infos["test1"].self_request == {}

    m.update_quota(quota("a-123", "test2", min_cpu=50, min_mem=80 * GI))
    expected = {"test1": rl(0, 0), "test1-a": rl(0, 0), "a-123": rl(60, 100 * GI),
                "test2-a": rl(20, 40 * GI), "test2": rl(80, 140 * GI)}
    for name, value in expected.items():
        info = m.get_quota_info(name)
        assert info is not None
        assert m.refresh_runtime(name) == value
        assert (info.request, info.used) == (value, value)
        assert info.parent == ("test2" if name == "a-123" else info.parent)


def test_update_cluster_total_resource() -> None:
    """Upstream UpdateClusterTotalResource: nodes change the total, system and default used
    leave it."""
    m = GroupQuotaManager(rl(1000, 1000 * GI), rl(1000, 1000 * GI),
                          feature_gate=default_feature_gate.copy())
    m.on_node_add(node("n1", 96, 160 * GI))
    assert m.refresh_runtime(ROOT_QUOTA_NAME) == rl(96, 160 * GI)
    m.on_node_update(node("n1", 96, 160 * GI), node("n1", 64, 360 * GI))
    assert m.cluster_total() == m.refresh_runtime(ROOT_QUOTA_NAME) == rl(64, 360 * GI)
    m.on_node_add(node("n2", 36, 180 * GI))
    assert m.cluster_total() == rl(100, 540 * GI)
    m.on_pod_add(SYSTEM_QUOTA_NAME, pod("s1", "10", str(30 * GI), node="n1"))
    assert m.refresh_runtime(ROOT_QUOTA_NAME) == rl(90, 510 * GI)
    m.on_pod_add(SYSTEM_QUOTA_NAME, pod("s2", "10", "30", node="n1"))
    m.on_pod_add(DEFAULT_QUOTA_NAME, pod("d1", "10", "30", node="n1"))
    m.on_pod_add(DEFAULT_QUOTA_NAME, pod("d2", "10", "30", node="n1"))
    assert m.refresh_runtime(ROOT_QUOTA_NAME) == {"cpu": 60000, "memory": 510 * GI - 90}
    assert m.cluster_total() == rl(100, 540 * GI)
    m.on_pod_delete(SYSTEM_QUOTA_NAME, pod("s1", "10"))
    assert m.refresh_runtime(ROOT_QUOTA_NAME) == {"cpu": 70000, "memory": 540 * GI - 90}


def test_child_max_greater_than_parent_max_and_total() -> None:
    """Upstream MultiChildMaxGreaterParentMax_MaxGreaterThanTotalRes."""
    m = GroupQuotaManager({}, {}, feature_gate=default_feature_gate.copy())
    m.on_node_add(node("n1", 300, 8000))
    m.update_quota(quota("test1", max_cpu=600, max_mem=4096, min_cpu=100, min_mem=100,
                         is_parent=True))
    m.update_quota(quota("test1-sub1", "test1", max_cpu=500, max_mem=2048, min_cpu=100,
                         min_mem=100))
    request(m, "test1-sub1", 500, 4096)
    assert m.refresh_runtime("test1-sub1") == rl(300, 2048)
    request(m, "test1-sub1", 550, 4096)
    top, sub = m.get_quota_info("test1"), m.get_quota_info("test1-sub1")
    assert top is not None and sub is not None
    assert top.request == top.limited_request() == rl(500, 2048)
    assert top.runtime == rl(300, 2048)
    assert sub.request == rl(1050, 8192) and sub.limited_request() == rl(500, 2048)
    assert m.refresh_runtime("test1-sub1") == rl(300, 2048)


def test_default_quota_max_change_recounts_its_pods() -> None:
    m = GroupQuotaManager({"cpu": 1000_000}, {"cpu": 1000_000},
                          feature_gate=default_feature_gate.copy())
    m.on_node_add(node("n1", 100, 100 * GI))
    m.on_pod_add(DEFAULT_QUOTA_NAME, pod("d", "10", str(GI), node="n1"))
    assert m.refresh_runtime(ROOT_QUOTA_NAME) == rl(90, 100 * GI)
    m.update_quota({"metadata": {"name": DEFAULT_QUOTA_NAME},
                    "spec": {"max": {"cpu": "100", "memory": "100Gi"}}})
    assert m.refresh_runtime(ROOT_QUOTA_NAME) == rl(90, 99 * GI)
    assert m.refresh_runtime(DEFAULT_QUOTA_NAME) == rl(100, 100 * GI)
    root = m.get_quota_info(ROOT_QUOTA_NAME)
    assert root is not None and root.used == rl(10, GI)


def test_from_args_uses_the_plugin_configuration() -> None:
    args = ElasticQuotaArgs.model_validate({"systemQuotaGroupMax": {"cpu": "2", "memory": "1Gi"},
                                            "enableMinQuotaScale": False})
    m = GroupQuotaManager.from_args(args, default_feature_gate.copy())
    assert m.refresh_runtime(SYSTEM_QUOTA_NAME) == rl(2, GI)
    default = m.refresh_runtime(DEFAULT_QUOTA_NAME)
    assert default is not None and set(default) == {"cpu", "memory"}
    m.on_node_add(node("n1", 200, 0))
    for name in "abc":
        m.update_quota(quota(name, max_cpu=200, max_mem=0, min_cpu=100))
        request(m, name, 150)
    assert m.refresh_runtime("a") == {"cpu": 100000, "memory": 0}  # no min scaling


@pytest.mark.parametrize("gate_name", [ELASTIC_QUOTA_IMMEDIATE_IGNORE_TERMINATING_POD,
                                       ELASTIC_QUOTA_IGNORE_TERMINATING_POD])
def test_terminating_pods_stop_counting(gate_name: str) -> None:
    """Upstream shouldBeIgnored: at once, or once deletionTimestamp + grace has passed."""
    gate = default_feature_gate.copy()
    gate.set_enabled(gate_name, True)
    clock = FakeClock()
    m = GroupQuotaManager({}, {}, feature_gate=gate, clock=clock)
    m.update_quota(quota("q"))
    p = pod("p", "2", node="n1")
    m.on_pod_add("q", p)
    deleting = {**p, "metadata": {**p["metadata"], "deletionGracePeriodSeconds": 30,
                                  "deletionTimestamp": format_time(
                                      datetime.fromtimestamp(clock.now(), UTC))}}
    m.on_pod_update("q", "q", p, deleting)
    info = m.get_quota_info("q")
    assert info is not None
    immediate = gate_name == ELASTIC_QUOTA_IMMEDIATE_IGNORE_TERMINATING_POD
    assert info.used == (rl(0, 0) if immediate else rl(2, 0))
    clock.step(31)
    m.on_pod_update("q", "q", deleting, deleting)
    assert (info.request, info.used) == (rl(0, 0), rl(0, 0))
    m.on_pod_add("q", deleting)  # a resync does not bring it back
    assert info.request == rl(0, 0) and not info.pods


def test_without_the_gates_a_terminating_pod_counts_until_deleted() -> None:
    m = manager()
    m.update_quota(quota("q"))
    p = pod("p", "2", node="n1")
    p["metadata"]["deletionTimestamp"] = "2020-01-01T00:00:00Z"
    m.on_pod_add("q", p)
    info = m.get_quota_info("q")
    assert info is not None and info.used == rl(2, 0)


def test_quota_summary_is_a_refreshed_copy() -> None:
    m = manager(100, 0)
    m.update_quota(quota("q", max_cpu=10, max_mem=0, min_cpu=5))
    m.on_pod_add("q", pod("p", "4", node="n1"))
    summary = m.quota_summary("q")
    assert summary is not None
    assert (summary.runtime, summary.used, summary.request) == (rl(4, 0), rl(4, 0), rl(4, 0))
    summary.used["cpu"] = 0
    summary.pods["default/p"].request["cpu"] = 0
    info = m.get_quota_info("q")
    assert info is not None and info.used == rl(4, 0)
    assert info.pods["default/p"].request["cpu"] == 4000
    root = m.quota_summary(ROOT_QUOTA_NAME)
    assert root is not None and root.runtime == rl(100, 0)
    assert m.quota_summary("nope") is None


def small_tree(total: int = 50, **mins: int) -> GroupQuotaManager:
    """Upstream's "1" and "2" quotas (max 40/40) on a 50-core, 50-byte cluster."""
    m = GroupQuotaManager({}, {}, feature_gate=default_feature_gate.copy())
    m.on_node_add(node("n1", total, total))
    for name in ("1", "2"):
        m.update_quota(quota(name, max_cpu=40, max_mem=40, min_cpu=mins.get(f"q{name}", 10),
                             min_mem=mins.get(f"q{name}", 10)))
    return m


def test_refresh_and_get_runtime_quota() -> None:
    """Upstream RefreshAndGetRuntimeQuota_UpdateQuota."""
    m = small_tree(q1=10, q2=0)
    assert m.resource_keys() == {"cpu", "memory"}
    assert m.refresh_runtime("1") == rl(0, 0)
    assert m.refresh_runtime("5") is None
    for name in ("1", "2"):
        request(m, name, 5, 5, name=f"{name}-a")
    assert (m.refresh_runtime("1"), m.refresh_runtime("2")) == (rl(5, 5), rl(5, 5))
    for name in ("1", "2"):
        request(m, name, 25, 25, name=f"{name}-b")
    # 1 keeps its min 10, 2 has none; the 40 left are shared equally.
    assert (m.refresh_runtime("1"), m.refresh_runtime("2")) == (rl(30, 30), rl(20, 20))


def test_update_shared_weight() -> None:
    """Upstream UpdateSharedWeight_UpdateQuota."""
    m = small_tree(60, q1=10, q2=0)
    for name, weight in (("1", 30), ("2", 10)):
        info = m.get_quota_info(name)
        assert info is not None and info.shared_weight == rl(40, 40)
        m.update_quota(quota(name, max_cpu=40, max_mem=40, min_cpu=10 if name == "1" else 0,
                             min_mem=10 if name == "1" else 0,
                             weight={"cpu": str(weight), "memory": str(weight)}))
        info = m.get_quota_info(name)
        assert info is not None and info.shared_weight == {"cpu": weight * 1000, "memory": weight}


@pytest.mark.parametrize(("max_value", "limited"), [(40, 35), (30, 30), (50, 35)])
def test_update_one_group_max_quota(max_value: int, limited: int) -> None:
    """Upstream UpdateOneGroupMaxQuota_UpdateQuota: 35 asked, max 40 → 30 → 50."""
    m = small_tree()
    for name in ("1", "2"):
        request(m, name, 35, 35)
    for name in ("1", "2"):
        m.update_quota(quota(name, max_cpu=max_value, max_mem=max_value, min_cpu=10,
                             min_mem=10))
    for name in ("1", "2"):
        info = m.get_quota_info(name)
        assert m.refresh_runtime(name) == rl(25, 25)
        assert info is not None and info.limited_request() == rl(limited, limited)


@pytest.mark.parametrize(("mins", "extra", "expected"), [
    ((10, 10), 0, (15, 15)),  # min < request < max
    ((15, 15), 0, (15, 15)),  # request = min
    ((20, 20), 0, (15, 15)),  # request < min: a lending quota gets its request
    ((5, 5), 0, (15, 15)),  # min < request
    ((40, 5), 100, (40, 10)),  # min = max, request > max
])
def test_update_one_group_min_quota(mins: tuple[int, int], extra: int,
                                    expected: tuple[int, int]) -> None:
    """Upstream UpdateOneGroupMinQuota_UpdateQuota."""
    m = small_tree()
    for name, min_value in zip(("1", "2"), mins, strict=True):
        request(m, name, 15, 15)
        m.update_quota(quota(name, max_cpu=40, max_mem=40, min_cpu=min_value,
                             min_mem=min_value))
        if extra:
            request(m, name, extra, extra, name=f"{name}-extra")
    assert (m.refresh_runtime("1"), m.refresh_runtime("2")) == \
        tuple(rl(v, v) for v in expected)


def test_delete_one_group() -> None:
    """Upstream DeleteOneGroup_UpdateQuota."""
    m = small_tree()
    for name in ("1", "2"):
        request(m, name, 15, 15)
    assert m.delete_quota("1")
    assert m.refresh_runtime("2") == rl(15, 15)
    assert m.get_quota_info("1") is None and not m.delete_quota("1")
    root = m.get_quota_info(ROOT_QUOTA_NAME)
    assert root is not None and root.request == rl(15, 15)


def test_a_new_resource_name_becomes_a_dimension() -> None:
    """Upstream UpdateQuotaTreeDimension_UpdateQuota."""
    m = manager()
    m.update_quota({**quota("3", max_cpu=1000, max_mem=10000, min_cpu=100, min_mem=1000),
                    "spec": {"max": {"cpu": "1000", "memory": "10000", "tmp": "1"}}})
    assert m.resource_keys() == {"cpu", "memory", "tmp"}
    m.update_quota(quota("3", max_cpu=1000, max_mem=10000))
    assert m.resource_keys() == {"cpu", "memory"}


def test_reserve_then_bind_counts_once() -> None:
    """Upstream OnPodUpdateAfterReserve."""
    m = small_tree()
    p = pod("1", "10", "10")
    m.on_pod_add("1", p)
    m.reserve_pod("1", p)
    m.on_pod_update("1", "1", p, {**p, "spec": {**p["spec"], "nodeName": "node1"}})
    info = m.get_quota_info("1")
    assert info is not None and (info.request, info.used) == (rl(10, 10), rl(10, 10))


def test_pod_created_before_its_quota_counts_from_its_next_update() -> None:
    """Upstream UpdatePod_WhenQuotaCreateAfterPodCreate."""
    m = GroupQuotaManager({}, {}, feature_gate=default_feature_gate.copy())
    p = pod("1", "10", "10")
    m.on_pod_add("1", p)
    m.update_quota(quota("1", max_cpu=40, max_mem=40, min_cpu=20, min_mem=20))
    info = m.get_quota_info("1")
    assert info is not None and not info.pods and info.request == {}
    relabelled = {**p, "metadata": {**p["metadata"], "labels": {"aaa": "aaa"}}}
    m.on_pod_update("1", "1", p, relabelled)
    assert (len(info.pods), info.request, info.used) == (1, rl(10, 10), {})
    bound = {**relabelled, "spec": {**relabelled["spec"], "nodeName": "node1"}}
    m.on_pod_update("1", "1", relabelled, bound)
    assert (len(info.pods), info.request, info.used) == (1, rl(10, 10), rl(10, 10))


def test_child_request_and_request_when_nothing_lends() -> None:
    """Upstream ChildRequestAndRequest_All_not_allowLent: (childRequest, request) of 1, 2, 3."""
    m = small_tree()
    m.update_quota(quota("1", max_cpu=40, max_mem=40, min_cpu=20, min_mem=20,
                         allow_lent=False))
    m.update_quota(quota("2", "1", max_cpu=40, max_mem=40, min_cpu=10, min_mem=10,
                         allow_lent=False))
    m.update_quota(quota("3", "1", max_cpu=40, max_mem=40, min_cpu=5, min_mem=5,
                         allow_lent=False))

    def state() -> list[tuple[dict[str, int], dict[str, int]]]:
        infos = [m.get_quota_info(n) for n in ("1", "2", "3")]
        return [(i.child_request, i.request) for i in infos if i is not None]

    def both(cpu: int) -> dict[str, int]:
        return {"cpu": cpu * 1000, "memory": cpu}

    assert state() == [(both(15), both(20)), ({}, both(10)), ({}, both(5))]
    for name, cpu, expected in (("p1", 5, [(both(15), both(20)), (both(5), both(10))]),
                                ("p2", 10, [(both(20), both(20)), (both(15), both(15))]),
                                ("p3", 10, [(both(30), both(30)), (both(25), both(25))])):
        m.on_pod_add("2", pod(name, str(cpu), str(cpu)))
        assert state() == [*expected, ({}, both(5))]


def test_guarantee_usage_through_a_parent() -> None:
    """Upstream OnPodUpdateUsedForGuarantee and UpdateQuotaInternalNoLock: a parent
    allocates its children's guarantees."""
    gate = default_feature_gate.copy()
    gate.set_enabled(ELASTIC_QUOTA_GUARANTEE_USAGE, True)
    m = GroupQuotaManager({}, {}, feature_gate=gate)
    m.on_node_add(node("n1", 50, 50))

    def both(v: int) -> dict[str, int]:
        return {"cpu": v * 1000, "memory": v}

    m.update_quota(quota("1", max_cpu=40, max_mem=40, min_cpu=20, min_mem=20, is_parent=True))
    m.update_quota(quota("2", "1", max_cpu=40, max_mem=40, min_cpu=10, min_mem=10))
    m.update_quota(quota("3", "1", max_cpu=40, max_mem=40, min_cpu=5, min_mem=5))
    one, two = m.get_quota_info("1"), m.get_quota_info("2")
    assert one is not None and two is not None
    for name, value, child, parent in (("p1", 5, (5, 10, 5, 5, 10), (15, 20)),
                                       ("p2", 10, (15, 15, 15, 15, 15), (20, 20)),
                                       ("p3", 10, (25, 25, 25, 25, 25), (30, 30))):
        m.on_pod_add("2", pod(name, str(value), str(value), node="n1"))
        assert (two.child_request, two.request, two.used, two.allocated, two.guaranteed) == \
            tuple(both(v) for v in child)
        assert (one.allocated, one.guaranteed) == tuple(both(v) for v in parent)
    # A bigger min raises the child's guarantee and the parent's allocation.
    m.update_quota(quota("2", "1", max_cpu=40, max_mem=40, min_cpu=30, min_mem=30))
    two = m.get_quota_info("2")
    assert two is not None and two.guaranteed == both(30) and two.allocated == both(25)
    assert (one.allocated, one.guaranteed) == (both(35), both(35))


def test_parents_own_pods_and_childrens_limited_requests() -> None:
    """Upstream UpdateQuotaInternalNoLock_ParenstSelf: a parent's request is its own pods
    plus its children's limited requests."""
    m = small_tree()

    def both(cpu: int, mem: int) -> dict[str, int]:
        return {"cpu": cpu * 1000, "memory": mem}

    m.update_quota(quota("1", max_cpu=40, max_mem=40, min_cpu=20, min_mem=20, is_parent=True))
    m.update_quota(quota("2", "1", max_cpu=30, max_mem=10, min_cpu=10, min_mem=10,
                         is_parent=True))
    m.update_quota(quota("3", "1", max_cpu=20, max_mem=10, min_cpu=5, min_mem=5))
    m.update_quota(quota("4", "2", max_cpu=30, max_mem=10, min_cpu=10, min_mem=10))
    m.on_pod_add("2", pod("own-np", "10", "10", non_preemptible=True))
    m.on_pod_add("2", pod("own", "10", "10"))
    m.on_pod_add("3", pod("np", "5", "5", non_preemptible=True))
    m.on_pod_add("3", pod("p", "15", "15"))
    m.on_pod_add("4", pod("np", "10", "10", non_preemptible=True))
    m.on_pod_add("4", pod("p", "10", "10"))
    infos = {n: m.get_quota_info(n) for n in "1234"}
    expected = {  # (self request, request, non-preemptible request)
        "4": (both(20, 20), both(20, 20), both(10, 10)),
        "3": (both(20, 20), both(20, 20), both(5, 5)),
        "2": (both(20, 20), both(40, 30), both(20, 20)),
        "1": ({}, both(50, 20), both(25, 25)),
    }
    for name, (own, request_, non_preemptible) in expected.items():
        info = infos[name]
        assert info is not None
        assert (info.self_request, info.request, info.non_preemptible_request) == \
            (own, request_, non_preemptible)


def test_root_used_and_request_include_every_quota() -> None:
    """Upstream UpdateRootQuotaUsed / UpdateRootQuotaRequest / RootQuotaRuntime."""
    m = GroupQuotaManager(rl(1000, 1000), rl(1000, 1000),
                          feature_gate=default_feature_gate.copy())
    m.on_node_add(node("n1", 1000, 1000))
    m.on_pod_add(SYSTEM_QUOTA_NAME, pod("s", "10", "30", node="n1", non_preemptible=True))
    m.on_pod_add(DEFAULT_QUOTA_NAME, pod("d", "2", "5", node="n1", non_preemptible=True))
    root = m.get_quota_info(ROOT_QUOTA_NAME)
    assert root is not None
    assert root.used == root.request == root.non_preemptible_request == rl(12, 35)
    m.update_quota(quota("1", max_cpu=20, max_mem=20, min_cpu=10, min_mem=10, is_parent=True))
    m.update_quota(quota("2", max_cpu=30, max_mem=30, min_cpu=8, min_mem=6))
    m.update_quota(quota("3", "1", max_cpu=30, max_mem=20, min_cpu=8, min_mem=5))
    m.on_pod_add("2", pod("a", "5", "5", node="n1", non_preemptible=True))
    m.on_pod_add("3", pod("b", "7", "5", node="n1", non_preemptible=True))
    assert root.used == root.request == root.non_preemptible_request == rl(24, 45)
    assert m.refresh_runtime(ROOT_QUOTA_NAME) == rl(988, 965)


def test_terminating_pod_added_after_its_grace_is_ignored() -> None:
    """Upstream OnTerminatingPodAdd."""
    gate = default_feature_gate.copy()
    gate.set_enabled(ELASTIC_QUOTA_IGNORE_TERMINATING_POD, True)
    clock = FakeClock()
    m = GroupQuotaManager({}, {}, feature_gate=gate, clock=clock)
    m.update_quota(quota("1", max_cpu=40, max_mem=40, min_cpu=10, min_mem=10))
    p = pod("1", "10", "10", node="node1")
    p["metadata"]["deletionTimestamp"] = format_time(
        datetime.fromtimestamp(clock.now() - 40, UTC))
    p["metadata"]["deletionGracePeriodSeconds"] = 30
    m.on_pod_add("1", p)
    info = m.get_quota_info("1")
    assert info is not None and (info.request, info.used, info.pods) == ({}, {}, {})


def test_a_parent_cycle_does_not_hang() -> None:
    m = manager()
    m.update_quota(quota("a", "b", is_parent=True))
    m.update_quota(quota("b", "a", is_parent=True))
    request(m, "a", 1)
    assert m.refresh_runtime("a") == rl(0, 0)


def test_assigned_pods_lists_the_quotas_own_pods_on_nodes_or_reserved() -> None:
    gqm = GroupQuotaManager({}, {})
    gqm.update_quota(quota("team"))
    gqm.on_pod_add("team", pod("bound", "2", node="n1", phase="Running"))
    gqm.on_pod_add("team", pod("pending", "1"))
    reserved = pod("reserved", "3")
    gqm.on_pod_add("team", reserved)
    gqm.reserve_pod("team", reserved)
    pods = gqm.assigned_pods("team")
    assert sorted(pods) == ["default/bound", "default/reserved"]
    assert pods["default/bound"].request["cpu"] == 2000
    pods["default/bound"].request["cpu"] = 0  # a copy: the tree is untouched
    assert gqm.assigned_pods("team")["default/bound"].request["cpu"] == 2000
    assert gqm.assigned_pods("nobody") == {}
