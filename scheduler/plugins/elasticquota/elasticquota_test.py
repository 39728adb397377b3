"""ElasticQuota through the scheduling loop: admission against the runtime with upstream's
messages, borrowing up to max while a sibling is idle, non-preemptible pods bounded by min,
the parent check, preemption within the quota, pods without quota in the default quota, pods
moving when their quota appears or goes, the built-in quotas, malformed quotas, and gangs
(Coscheduling) admitted or refused whole by their quota.
Mirrors upstream's plugin_test.go (PreFilter, Reserve/Unreserve, checkQuotaRecursive) and
preempt_test.go cases."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from api.extension.coscheduling import LABEL_POD_GROUP
from api.extension.elastic_quota import (
    DEFAULT_QUOTA_NAME,
    ROOT_QUOTA_NAME,
    SYSTEM_QUOTA_NAME,
)
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.plugins.defaultpreemption.testing import make_node, node_infos
from scheduler.framework.types import PodInfo
from scheduler.plugins.coscheduling.testing import make_pod_group
from scheduler.plugins.elasticquota.handlers import REASON_INVALID_QUOTA
from scheduler.plugins.elasticquota.testing import (
    QuotaCluster,
    cpu_pods,
    make_quota,
    make_quota_pod,
)
from test.e2e.cluster import wait_for


@pytest.fixture
def cluster() -> Iterator[QuotaCluster]:
    c = QuotaCluster()
    yield c
    c.stop()


def test_a_pod_over_its_quota_runtime_is_refused_with_upstreams_message(
        cluster: QuotaCluster) -> None:
    cluster.add_quota(make_quota("team-a", {"cpu": "2", "memory": "4Gi"}))
    names = cpu_pods(cluster, "p", "team-a", 3)
    bound = cluster.schedule()
    assert len(bound) == 2
    [left] = [n for n in names if f"default/{n}" not in bound]
    # memory's runtime is the quota's request (3Gi); cpu's is capped by max.
    assert cluster.failure(left) == (
        "0/1 nodes are available: Insufficient quotas, quotaName: team-a, "
        "runtime: cpu:2,memory:3Gi, used: cpu:2,memory:2Gi, pod's request: cpu:1,memory:1Gi, "
        "exceedDimensions: [cpu]. preemption: 0/1 nodes are available: 1 No victims found on "
        f"node n1 for preemptor pod {left}..")


def test_a_quota_borrows_up_to_its_max_while_its_sibling_is_idle(
        cluster: QuotaCluster) -> None:
    cluster.add_quota(make_quota("a", {"cpu": "6"}, {"cpu": "2"}))
    cluster.add_quota(make_quota("b", {"cpu": "6"}, {"cpu": "2"}))
    names = cpu_pods(cluster, "a", "a", 7)
    bound = cluster.schedule()
    assert len(bound) == 6  # min 2, 4 borrowed from b's idle share and the free cluster
    [left] = [n for n in names if f"default/{n}" not in bound]
    assert cluster.failure(left).startswith(
        "0/1 nodes are available: Insufficient quotas, quotaName: a, runtime: cpu:6, "
        "used: cpu:6, pod's request: cpu:1, exceedDimensions: [cpu].")
    # b's demand now takes back its min: a's runtime shrinks to what b leaves of 8 cpu.
    cpu_pods(cluster, "b", "b", 2)
    assert len(cluster.schedule()) == 8
    summary = cluster.plugin.manager.quota_summary("a")
    assert summary is not None and summary.runtime == {"cpu": 6000}


def test_non_preemptible_pods_are_limited_by_min(cluster: QuotaCluster) -> None:
    cluster.add_quota(make_quota("a", {"cpu": "6"}, {"cpu": "2"}))
    names = cpu_pods(cluster, "np", "a", 3, preemptible=False)
    bound = cluster.schedule()
    assert len(bound) == 2
    [left] = [n for n in names if f"default/{n}" not in bound]
    assert cluster.failure(left).startswith(
        "0/1 nodes are available: Insufficient non-preemptible quotas, quotaName: a, "
        "min: cpu:2, nonPreemptibleUsed: cpu:2, pod's request: cpu:1, exceedDimensions: [cpu].")
    # Preemptible pods still borrow beyond min.
    cpu_pods(cluster, "p", "a", 2)
    assert len(cluster.schedule()) == 4


@pytest.mark.parametrize("check_parent", [True, False])
def test_enable_check_parent_quota_bounds_children_by_their_parents_limit(
        check_parent: bool) -> None:
    c = QuotaCluster(enableRuntimeQuota=False, enableCheckParentQuota=check_parent)
    try:
        c.add_quota(make_quota("parent", {"cpu": "4"}, is_parent=True))
        c.add_quota(make_quota("c1", {"cpu": "4"}, parent="parent"))
        c.add_quota(make_quota("c2", {"cpu": "4"}, parent="parent"))
        cpu_pods(c, "x", "c1", 3)
        assert len(c.schedule()) == 3
        c.add_pod(make_quota_pod("y", "c2", cpu="2"))
        bound = c.schedule()
        if not check_parent:
            assert "default/y" in bound
            return
        assert "default/y" not in bound
        assert c.failure("y").startswith(
            "0/1 nodes are available: Insufficient quotas, quotaNameTopo: [parent c2], "
            "runtime: cpu:4, used: cpu:3, pod's request: cpu:2, exceedDimensions: [cpu].")
    finally:
        c.stop()


def test_pods_without_quota_fall_to_the_default_quota_and_schedule(
        cluster: QuotaCluster) -> None:
    cluster.add_pod(make_quota_pod("plain", cpu="4"))
    assert cluster.schedule() == {"default/plain": "n1"}
    default = cluster.plugin.manager.quota_summary(DEFAULT_QUOTA_NAME)
    assert default is not None and default.used["cpu"] == 4000


def test_a_namespace_quota_created_after_its_pods_takes_them_over(
        cluster: QuotaCluster) -> None:
    cluster.add_pod(make_quota_pod("early", cpu="2", namespace="team", node="n1"))
    manager = cluster.plugin.manager
    assert manager.get_quota_info(DEFAULT_QUOTA_NAME).used["cpu"] == 2000  # type: ignore[union-attr]
    cluster.add_quota(make_quota("team", {"cpu": "3"}, namespace="team"))
    assert manager.get_quota_info("team").used == {"cpu": 2000}  # type: ignore[union-attr]
    assert manager.get_quota_info(DEFAULT_QUOTA_NAME).used["cpu"] == 0  # type: ignore[union-attr]
    cluster.add_pod(make_quota_pod("late", cpu="2", namespace="team"))
    assert "team/late" not in cluster.schedule()
    assert "quotaName: team, runtime: cpu:3, used: cpu:2" in cluster.failure("late")
    # The quota goes: its pods return to the default quota, which admits them.
    cluster.plugin.feeder.on_quota_delete(make_quota("team", {"cpu": "3"}, namespace="team"))
    assert manager.get_quota_info(DEFAULT_QUOTA_NAME).used["cpu"] == 2000  # type: ignore[union-attr]


def test_reserve_counts_a_pod_as_used_before_it_is_bound_and_unreserve_undoes_it(
        cluster: QuotaCluster) -> None:
    cluster.add_quota(make_quota("a", {"cpu": "4"}))
    pod = make_quota_pod("p", "a", cpu="1")
    cluster.plugin.feeder.on_pod_add(pod)
    manager = cluster.plugin.manager
    cluster.plugin.reserve(CycleState(), PodInfo(pod), "n1")
    assert manager.get_quota_info("a").used == {"cpu": 1000}  # type: ignore[union-attr]
    cluster.plugin.unreserve(CycleState(), PodInfo(pod), "n1")
    assert manager.get_quota_info("a").used == {"cpu": 0}  # type: ignore[union-attr]


def test_the_built_in_quotas_are_created_in_the_quota_group_namespace() -> None:
    c = QuotaCluster(quotaGroupNamespace="quotas")
    try:
        wait_for(lambda: len(c.client.calls) >= 3, 60, what="built-in quotas created")
        created = {body["metadata"]["name"]: (path, body) for _, path, body, _ in c.client.calls}
        assert set(created) == {ROOT_QUOTA_NAME, SYSTEM_QUOTA_NAME, DEFAULT_QUOTA_NAME}
        assert all(path == "/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/quotas/"
                          "elasticquotas" for path, _ in created.values())
        root = created[ROOT_QUOTA_NAME][1]
        assert root["metadata"]["labels"] == {
            "quota.scheduling.koordinator.sh/is-parent": "true",
            "quota.scheduling.koordinator.sh/allow-lent-resource": "false",
            "quota.scheduling.koordinator.sh/parent": ""}
        assert created[DEFAULT_QUOTA_NAME][1]["spec"]["max"] == {
            "cpu": "1844674407370955161", "memory": "1844674407370955161"}
    finally:
        c.stop()


def test_a_malformed_quota_is_reported_and_its_last_good_state_kept(
        cluster: QuotaCluster) -> None:
    for builtin in cluster.plugin.builtin_quotas():
        cluster.add_quota(builtin)
    assert cluster.recorder.events == []
    cluster.add_quota(make_quota("a", {"cpu": "2"}))
    cluster.add_quota(make_quota("a", {"cpu": "lots"}))
    events = [(reason, note) for name, _, type_, reason, _, note in cluster.recorder.events
              if name == "a" and type_ == "Warning"]
    assert len(events) == 1 and events[0][0] == REASON_INVALID_QUOTA
    assert "elastic quota default/a: spec.max:" in events[0][1]
    cpu_pods(cluster, "p", "a", 3)
    assert len(cluster.schedule()) == 2  # still max cpu 2
    cluster.add_quota(make_quota("orphan", {"cpu": "2"}, parent="missing"))
    notes = [note for name, _, _, reason, _, note in cluster.recorder.events
             if name == "orphan" and reason == REASON_INVALID_QUOTA]
    assert notes and "parent quota 'missing'" in notes[0]


def test_add_pod_and_remove_pod_move_the_snapshot_used_for_pods_of_the_quota_only(
        cluster: QuotaCluster) -> None:
    cluster.add_quota(make_quota("a", {"cpu": "2"}))
    cluster.add_quota(make_quota("b", {"cpu": "2"}))
    mine = make_quota_pod("mine", "a", node="n1")
    theirs = make_quota_pod("theirs", "b", node="n1")
    cluster.add_pod(mine)
    cluster.add_pod(theirs)
    plugin, state = cluster.plugin, CycleState()
    incoming = PodInfo(make_quota_pod("new", "a"))
    plugin.pre_filter(state, incoming, cluster.sched.profiles["koord-scheduler"].snapshot)
    [ni] = node_infos([make_node("n1")], [mine, theirs])
    snap = state.read("PostFilterElasticQuota")
    assert snap.used == {"cpu": 1000}
    assert plugin.remove_pod(state, incoming, PodInfo(theirs), ni) is None
    assert snap.used == {"cpu": 1000}
    assert plugin.remove_pod(state, incoming, PodInfo(mine), ni) is None
    assert snap.used == {"cpu": 0}
    cloned = state.clone()
    assert plugin.add_pod(cloned, incoming, PodInfo(mine), ni) is None
    assert cloned.read("PostFilterElasticQuota").used == {"cpu": 1000}
    assert snap.used == {"cpu": 0}  # a simulation on a clone leaves the cycle's state alone
    status = plugin.add_pod(CycleState(), incoming, PodInfo(mine), ni)
    assert status is not None and not status.is_success()


# Gangs with quotas: members reserve their quota one by one (as upstream, which has no
# gang-wide quota check); a Strict gang that cannot be completed sends its waiting members
# back, and their Unreserve gives the quota back.

def _gang(c: QuotaCluster, name: str, quota: str, n: int, **pod_group: Any) -> list[str]:
    c.add_pod_group(make_pod_group(name, n, **pod_group))
    names = [f"{name}-{i}" for i in range(n)]
    for member in names:
        pod = make_quota_pod(member, quota)
        pod["metadata"]["labels"][LABEL_POD_GROUP] = name
        c.add_pod(pod)
    return names


@pytest.fixture
def gang_cluster() -> Iterator[QuotaCluster]:
    c = QuotaCluster(gangs=True)
    yield c
    c.stop()


def test_a_gang_within_its_quota_binds_whole(gang_cluster: QuotaCluster) -> None:
    gang_cluster.add_quota(make_quota("team", {"cpu": "3"}))
    names = _gang(gang_cluster, "job", "team", 3)
    assert sorted(gang_cluster.schedule()) == [f"default/{n}" for n in names]
    assert gang_cluster.plugin.manager.get_quota_info("team").used == {"cpu": 3000}  # type: ignore[union-attr]


def test_a_gang_one_member_over_its_quota_binds_no_member_and_leaks_no_used(
        gang_cluster: QuotaCluster) -> None:
    c = gang_cluster
    c.add_quota(make_quota("team", {"cpu": "3"}))
    c.add_pod(make_quota_pod("base", "team", node="n1"))
    names = _gang(c, "job", "team", 3)  # room in the quota for two of them
    assert c.schedule() == {}
    manager = c.plugin.manager
    assert manager.get_quota_info("team").used == {"cpu": 1000}  # type: ignore[union-attr]
    assert not c.sched.profiles["koord-scheduler"].waiting_pods()
    # Every member says which quota stopped the gang.
    quota_says = ("Insufficient quotas, quotaName: team, runtime: cpu:3, used: cpu:3, "
                  "pod's request: cpu:1, exceedDimensions: [cpu]")
    for name in names:
        diagnosis = c.sched.diagnosis_of(f"default/{name}")
        assert diagnosis is not None and quota_says in diagnosis["message"], diagnosis


def test_a_non_strict_gangs_waiting_members_hold_their_quota_until_the_timeout(
        gang_cluster: QuotaCluster) -> None:
    c = gang_cluster
    c.add_quota(make_quota("team", {"cpu": "2"}))
    _gang(c, "job", "team", 3, timeout=5,
          annotations={"gang.scheduling.koordinator.sh/mode": "NonStrict"})
    while c.sched.schedule_one(timeout=0):
        pass
    manager = c.plugin.manager
    # Two members wait at Permit with the quota's two cores reserved.
    assert len(c.sched.profiles["koord-scheduler"].waiting_pods()) == 2
    assert manager.get_quota_info("team").used == {"cpu": 2000}  # type: ignore[union-attr]
    assert c.clock.wait_for_waiters(1)
    c.clock.step(5)
    assert c.sched.wait_for_bindings(30)
    assert c.binder.bindings == {}
    assert manager.get_quota_info("team").used == {"cpu": 0}  # type: ignore[union-attr]
