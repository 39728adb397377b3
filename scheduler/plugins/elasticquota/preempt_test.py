"""Preemption within a quota (§8.6), mirroring upstream's preempt_test.go and the PostFilter
cases of plugin_test.go: a higher-priority pod over its quota evicts just enough
lower-priority pods of the same quota; pods of other quotas, non-preemptible pods, pods of
equal priority and (by default) pods of the default quota are never victims — also when
Coscheduling's job preemption runs first, as the chart configures it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from scheduler.plugins.elasticquota.testing import (
    QuotaCluster,
    make_quota,
    make_quota_pod,
)

NO_VICTIMS = ("0/1 nodes are available: Insufficient quotas, quotaName: {quota}, "
              "runtime: cpu:2, used: cpu:2, pod's request: cpu:1, exceedDimensions: [cpu]. "
              "preemption: 0/1 nodes are available: 1 No victims found on node n1 for "
              "preemptor pod {pod}..")

JOB_PREEMPTION_STEPS_ASIDE = "preemption not helpful: ElasticQuota refused the pod at PreFilter"


@pytest.fixture(params=[False, True], ids=["quota-preemption", "with-job-preemption"])
def cluster(request: pytest.FixtureRequest) -> Iterator[QuotaCluster]:
    # The chart's default runs Coscheduling's job preemption before ElasticQuota's PostFilter:
    # for a pod its quota refuses, it must leave the decision (and other quotas' pods) alone.
    c = QuotaCluster(gangs=request.param, job_preemption=request.param)
    c.add_quota(make_quota("a", {"cpu": "2"}))
    c.add_quota(make_quota("b", {"cpu": "2"}))
    yield c
    c.stop()


def _bound(c: QuotaCluster, name: str, quota: str, **kw: Any) -> None:
    c.add_pod(make_quota_pod(name, quota, node="n1", **kw))


def test_a_higher_priority_pod_evicts_just_enough_pods_of_its_own_quota(
        cluster: QuotaCluster) -> None:
    _bound(cluster, "low-0", "a", start_time="2026-01-01T00:00:00Z")
    _bound(cluster, "low-1", "a", start_time="2026-01-01T00:01:00Z")
    _bound(cluster, "other", "b")
    cluster.add_pod(make_quota_pod("high", "a", priority=100))
    assert cluster.schedule() == {}
    # The reprieve keeps the more important (earlier started) pod: its return still leaves
    # room in the quota for the preemptor's 1 cpu.
    assert cluster.client.deleted() == ["low-1"]
    events = [(reason, note) for pod, _, _, reason, _, note in cluster.recorder.events
              if pod == "low-1"]
    assert ("Preempted", "Preempted by pod uid-high on node n1") in events


@pytest.mark.parametrize("victim", [
    {"quota": "b"},  # another quota
    {"quota": "a", "preemptible": False},
    {"quota": "a", "priority": 100},  # not lower
])
def test_pods_that_are_no_victims_stay(cluster: QuotaCluster, victim: dict[str, Any]) -> None:
    victim = dict(victim)  # the parameter is shared by both fixtures' runs
    quota = victim.pop("quota")
    _bound(cluster, "v0", quota, **victim)
    _bound(cluster, "v1", quota, **victim)
    if quota != "a":
        _bound(cluster, "a0", "a", priority=100)
        _bound(cluster, "a1", "a", priority=100)
    cluster.add_pod(make_quota_pod("high", "a", priority=100))
    assert cluster.schedule() == {}
    assert cluster.client.deleted() == []
    expected = NO_VICTIMS.format(quota="a", pod="high")
    if cluster.gangs is not None:  # each PostFilter's reason, in the configured order
        expected = expected.replace("preemption: ", f"{JOB_PREEMPTION_STEPS_ASIDE}, preemption: ")
    assert cluster.failure("high") == expected


@pytest.mark.parametrize("disable", [True, False])
def test_default_quota_pods_are_victims_only_when_allowed(disable: bool) -> None:
    c = QuotaCluster(cpu="2", disableDefaultQuotaPreemption=disable)
    try:
        _bound(c, "low-0", "")
        _bound(c, "low-1", "")
        c.add_pod(make_quota_pod("high", "", priority=100))
        assert c.schedule() == {}
        assert c.client.deleted() == ([] if disable else ["low-1"])
    finally:
        c.stop()


def test_a_pod_that_never_preempts_evicts_nothing(cluster: QuotaCluster) -> None:
    _bound(cluster, "low-0", "a")
    _bound(cluster, "low-1", "a")
    pod = make_quota_pod("polite", "a", priority=100)
    pod["spec"]["preemptionPolicy"] = "Never"
    cluster.add_pod(pod)
    assert cluster.schedule() == {}
    assert cluster.failure("polite").endswith(
        "preemption: not eligible due to preemptionPolicy=Never..")
    assert cluster.client.deleted() == []


@pytest.mark.parametrize("preemption", ["job", "default"])
def test_a_pod_its_quota_refuses_never_evicts_another_quotas_pods(preemption: str) -> None:
    """The node is full and the pod's own quota has no lower-priority pod: Coscheduling's job
    preemption (before ElasticQuota, the chart's default) and DefaultPreemption (after it,
    upstream's shipped config) would otherwise make room on the node with team b's pods,
    which frees nothing in quota a."""
    c = QuotaCluster(cpu="4", gangs=preemption == "job", job_preemption=preemption == "job",
                     default_preemption=preemption == "default")
    try:
        c.add_quota(make_quota("a", {"cpu": "2"}))
        c.add_quota(make_quota("b", {"cpu": "2"}))
        for name, quota, priority in (("a0", "a", 100), ("a1", "a", 100),
                                      ("b0", "b", 0), ("b1", "b", 0)):
            _bound(c, name, quota, priority=priority)
        c.add_pod(make_quota_pod("high", "a", priority=100))
        assert c.schedule() == {}
        assert c.client.deleted() == []
        assert "ElasticQuota refused the pod at PreFilter" in c.failure("high")
    finally:
        c.stop()
