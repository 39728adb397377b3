"""Over-use revocation: upstream's quota_overuse_revoke_test.go victim choices, and a real quota
tree whose runtime shrinks under a quota's running pods until they are evicted."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from api.extension.elastic_quota import DEFAULT_QUOTA_NAME, LABEL_PREEMPTIBLE, SYSTEM_QUOTA_NAME
from api.extension.objects import KubeDict
from pkg.client.errors import ApiError
from pkg.util.clock import FakeClock
from scheduler.apis.config import ElasticQuotaArgs
from scheduler.framework.plugins.defaultpreemption.testing import FakeRecorder
from scheduler.plugins.elasticquota.core import GroupQuotaManager
from scheduler.plugins.elasticquota.quota_overuse_revoke import (
    Candidate,
    QuotaOverUsedRevokeController,
    choose_victims,
)
from test.e2e.cluster import wait_for

Obj = dict[str, Any]


def pod(name: str, priority: int, cpu: str, *, node: str = "n1",
        non_preemptible: bool = False) -> Obj:
    labels = {LABEL_PREEMPTIBLE: "false"} if non_preemptible else {}
    return {"metadata": {"name": name, "namespace": "team", "uid": f"uid-{name}",
                         "labels": labels},
            "spec": {"nodeName": node, "priority": priority, "containers": [
                {"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
            "status": {"phase": "Running" if node else "Pending"}}


def candidate(name: str, cpu: int, mem: int) -> Candidate:
    return Candidate({"metadata": {"name": name}}, {"cpu": cpu, "memory": mem})


def names(pods: list[KubeDict]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


# Upstream's TestQuotaOverUsedRevokeController_GetToRevokePodList: pods 1..4 by priority
# 10, 9, 8, 7 with cpu 20, 10, 20, 40 and pod 2 also 1 of memory; least important first.
UPSTREAM_PODS = [candidate("4", 40, 0), candidate("3", 20, 0), candidate("2", 10, 1),
                 candidate("1", 20, 0)]
UPSTREAM_USED = {"cpu": 90, "memory": 1}


def test_upstream_case_takes_until_it_fits_then_puts_back_what_fits() -> None:
    # Taking 4, 3 and 2 makes it fit; 2 cannot come back (memory), 3 can, 4 cannot.
    victims = choose_victims(UPSTREAM_USED, {"cpu": 50, "memory": 0}, UPSTREAM_PODS)
    assert names(victims) == ["2", "4"]


def test_upstream_case_evicts_all_taken_when_even_all_do_not_fit() -> None:
    assert names(choose_victims(UPSTREAM_USED, {"cpu": -1, "memory": 0}, UPSTREAM_PODS)) == \
        ["4", "3", "2", "1"]
    # Pod 4 no longer assigned: the other three.
    used = {"cpu": 50, "memory": 1}
    assert names(choose_victims(used, {"cpu": -1, "memory": 0}, UPSTREAM_PODS[1:])) == \
        ["3", "2", "1"]


def test_nothing_is_evicted_when_used_fits_or_a_dimension_is_not_limited() -> None:
    assert choose_victims(UPSTREAM_USED, {"cpu": 90, "memory": 1}, UPSTREAM_PODS) == []
    # Only the runtime's dimensions count.
    assert choose_victims(UPSTREAM_USED, {"cpu": 90}, UPSTREAM_PODS) == []


@dataclass
class EvictingClient:
    """Records evictions; names in ``blocked`` answer 429 (a disruption budget), every name
    403 while ``forbidden`` (no RBAC grant)."""

    blocked: set[str] = field(default_factory=set)
    forbidden: bool = False
    evicted: list[str] = field(default_factory=list)

    def request(self, method: str, path: str, *, body: Any = None) -> Any:
        assert method == "POST" and path.endswith("/eviction"), path
        assert body["apiVersion"] == "policy/v1" and body["kind"] == "Eviction"
        name = body["metadata"]["name"]
        assert body["deleteOptions"]["preconditions"]["uid"] == f"uid-{name}"
        if self.forbidden:
            raise ApiError(403, "Forbidden", f'pods "{name}" is forbidden: cannot create '
                           'resource "pods/eviction"')
        if name in self.blocked:
            raise ApiError(429, "TooManyRequests", "Cannot evict pod as it would violate "
                           "the pod's disruption budget.")
        self.evicted.append(f"{body['metadata']['namespace']}/{name}")
        return {}

    def patch(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("unexpected patch")

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("unexpected delete")


@dataclass
class Cluster:
    tree: GroupQuotaManager
    pods: dict[str, Obj]
    client: EvictingClient
    clock: FakeClock

    def add(self, quota_name: str, p: Obj) -> None:
        self.pods[f"team/{p['metadata']['name']}"] = p
        self.tree.on_pod_add(quota_name, p)

    def get_by_key(self, key: str) -> Obj | None:
        return self.pods.get(key)

    def controller(self, **args: Any) -> QuotaOverUsedRevokeController:
        return QuotaOverUsedRevokeController(
            self.tree, self.client, self, self.clock,
            ElasticQuotaArgs(monitor_all_quotas=True, **args))


def quota(name: str, cpu_min: str) -> Obj:
    return {"metadata": {"name": name, "namespace": "team"},
            "spec": {"min": {"cpu": cpu_min}, "max": {"cpu": "10"}}}


@pytest.fixture
def cluster() -> Cluster:
    """10 cores; quota ``a`` (min 0) runs 10 cores of pods while ``b`` (min 6) asks nothing."""
    tree = GroupQuotaManager({}, {})
    tree.on_node_add({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "10"}}})
    tree.update_quota(quota("a", "0"))
    tree.update_quota(quota("b", "6"))
    c = Cluster(tree, {}, EvictingClient(), FakeClock())
    c.add("a", pod("fixed", 0, "1", non_preemptible=True))
    c.add("a", pod("low", 1, "3"))
    c.add("a", pod("mid", 5, "2"))
    c.add("a", pod("high", 10, "4"))
    return c


def test_a_quota_over_its_runtime_for_longer_than_the_delay_gives_pods_back(
        cluster: Cluster) -> None:
    ctrl = cluster.controller(delay_evict_time=120)
    assert ctrl.revoke() == []  # a uses 10 of its runtime 10
    # b claims its min: a's runtime drops to 4 while it uses 10.
    cluster.add("b", pod("claim", 0, "6", node=""))
    assert cluster.tree.quota_summary("a").runtime["cpu"] == 4000  # type: ignore[union-attr]
    assert ctrl.revoke() == []
    cluster.clock.step(120)
    assert ctrl.revoke() == []  # not longer than the delay yet
    cluster.clock.step(1)
    # Take low, mid, high (1 core left with the non-preemptible pod); high cannot come back
    # (5 > 4), mid can (3), low cannot (6).
    assert ctrl.revoke() == ["team/high", "team/low"]
    # The wait starts again: the next round a second later does nothing.
    cluster.clock.step(1)
    assert ctrl.revoke() == []


def test_each_revoked_pod_gets_an_event_naming_its_quotas_used_and_runtime(
        cluster: Cluster) -> None:
    recorder = FakeRecorder()
    ctrl = QuotaOverUsedRevokeController(
        cluster.tree, cluster.client, cluster, cluster.clock,
        ElasticQuotaArgs(monitor_all_quotas=True, delay_evict_time=0), recorder)
    cluster.client.blocked.add("high")  # a refused eviction: no event
    cluster.add("b", pod("claim", 0, "6", node=""))
    ctrl.revoke()
    cluster.clock.step(1)
    assert ctrl.revoke() == ["team/low"]
    assert recorder.events == [
        ("low", "", "Normal", "Revoked", "Revoking",
         "quota a used cpu:10 over its runtime cpu:4 for longer than 0s")]


def test_a_quota_that_fits_again_starts_its_wait_again(cluster: Cluster) -> None:
    ctrl = cluster.controller(delay_evict_time=10)
    ctrl.revoke()
    claim = pod("claim", 0, "6", node="")
    cluster.add("b", claim)
    ctrl.revoke()
    cluster.clock.step(8)
    cluster.tree.on_pod_delete("b", claim)  # b's demand goes away: a fits again
    ctrl.revoke()
    cluster.add("b", claim)
    cluster.clock.step(8)
    assert ctrl.revoke() == []  # 8 s over, not 16
    cluster.clock.step(3)
    assert ctrl.revoke() == ["team/high", "team/low"]


def test_a_refused_eviction_is_skipped_and_the_others_go_on(cluster: Cluster) -> None:
    ctrl = cluster.controller(delay_evict_time=0)
    cluster.client.blocked.add("high")
    cluster.add("b", pod("claim", 0, "6", node=""))
    ctrl.revoke()
    cluster.clock.step(1)
    assert ctrl.revoke() == ["team/low"]


def test_system_quota_and_non_preemptible_pods_are_never_revoked() -> None:
    tree = GroupQuotaManager({"cpu": 1000}, {})
    tree.on_node_add({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4"}}})
    tree.update_quota(quota("a", "0"))
    c = Cluster(tree, {}, EvictingClient(), FakeClock())
    c.add(SYSTEM_QUOTA_NAME, pod("sys", 0, "2"))  # over the system quota's 1 core
    c.add("a", pod("fixed", 0, "3", non_preemptible=True))  # over a's runtime of 2
    ctrl = c.controller(delay_evict_time=0)
    for _ in range(3):
        c.clock.step(1)
        assert ctrl.revoke() == []


def test_runs_every_revoke_interval_only_when_enabled(cluster: Cluster) -> None:
    off = QuotaOverUsedRevokeController(cluster.tree, cluster.client, cluster, cluster.clock,
                                        ElasticQuotaArgs())
    off.start()
    assert not cluster.clock.has_waiters()
    off.stop()
    ctrl = cluster.controller(delay_evict_time=0, revoke_pod_interval=5)
    cluster.add("b", pod("claim", 0, "6", node=""))
    ctrl.start()

    def stepped() -> bool:
        if cluster.clock.has_waiters():
            cluster.clock.step(5)
        return len(cluster.client.evicted) == 2

    try:
        wait_for(stepped, timeout=60, what="the revocation rounds")
    finally:
        ctrl.stop()
    assert sorted(cluster.client.evicted) == ["team/high", "team/low"]


def test_pods_not_on_a_node_are_never_revoked(cluster: Cluster) -> None:
    # Upstream's GetToRevokePodList case: pod 4 no longer assigned leaves three candidates.
    ctrl = cluster.controller(delay_evict_time=0)
    cluster.add("a", pod("waiting", 0, "5", node=""))  # a's lowest, but not running
    cluster.add("b", pod("claim", 0, "6", node=""))
    ctrl.revoke()
    cluster.clock.step(1)
    assert ctrl.revoke() == ["team/high", "team/low"]


def test_every_quota_over_its_runtime_is_watched_and_a_deleted_one_is_forgotten() -> None:
    # Upstream's GetToMonitorQuotas: three quotas over their runtime are all revoked; the
    # default quota is watched too, the system and root quotas are not.
    tree = GroupQuotaManager({}, {})
    tree.on_node_add({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "9"}}})
    c = Cluster(tree, {}, EvictingClient(), FakeClock())
    for name in ("q1", "q2", "q3"):
        tree.update_quota(quota(name, "0"))
        c.add(name, pod(f"{name}-low", 0, "2"))
        c.add(name, pod(f"{name}-high", 10, "1"))
    ctrl = c.controller(delay_evict_time=0)
    ctrl.revoke()
    assert set(ctrl._monitors) == {"q1", "q2", "q3", DEFAULT_QUOTA_NAME}
    # The cluster shrinks to 6 cores: each quota's runtime drops to 2 while it uses 3.
    tree.on_node_update(None, {"metadata": {"name": "n1"},
                               "status": {"allocatable": {"cpu": "6"}}})
    c.clock.step(1)
    assert sorted(ctrl.revoke()) == ["team/q1-low", "team/q2-low", "team/q3-low"]
    tree.delete_quota("q1")
    ctrl.revoke()
    assert set(ctrl._monitors) == {"q2", "q3", DEFAULT_QUOTA_NAME}


def test_a_forbidden_eviction_says_which_grant_is_missing(
        cluster: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    ctrl = cluster.controller(delay_evict_time=0)
    cluster.client.forbidden = True
    cluster.add("b", pod("claim", 0, "6", node=""))
    ctrl.revoke()
    cluster.clock.step(1)
    assert ctrl.revoke() == []
    assert "team/high of quota a: koord-scheduler's ServiceAccount needs create on " \
        "pods/eviction" in caplog.text


def test_a_lowered_max_is_revoked_down_to(cluster: Cluster) -> None:
    ctrl = cluster.controller(delay_evict_time=0)
    ctrl.revoke()
    # kubectl patch: a's max drops from 10 to 7 cores while it uses 10.
    cluster.tree.update_quota({**quota("a", "0"), "spec": {"min": {"cpu": "0"},
                                                           "max": {"cpu": "7"}}})
    cluster.clock.step(1)
    # Taking low (3) makes it fit at 7.
    assert ctrl.revoke() == ["team/low"]
