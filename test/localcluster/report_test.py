"""The local cluster's report: koord-scheduler's events.k8s.io Events read through the core/v1
view (occurrences counted from ``series``, the latest FailedScheduling message by
``series.lastObservedTime``/``eventTime``), and absurd NodeMetric usage clamped to allocatable
with the node flagged, never a utilisation above 100 %; the scenario's ElasticQuotas over time
and the pods preempted or revoked from them; the memory QoS CgroupReconcile wrote into a
simulated node's cgroup tree, read back."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from api.slo.v1alpha1.nodeslo import NodeSLO
from koordlet.metriccache.metric_cache import MetricCache
from koordlet.qosmanager.cgreconcile import CgroupReconcile
from koordlet.qosmanager.framework import Context
from koordlet.qosmanager.testing import FakeStates
from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.util.system.fake_tree import ensure_fake_v1_tree, ensure_pod_dirs, fake_v1_env
from pkg.features import koordlet_feature_gate
from pkg.features.koordlet_features import CGROUP_RECONCILE
from pkg.util.clock import FakeClock
from test.localcluster.recorder import Sample, node_sample, quota_sample
from test.localcluster.report import api_access, build, memory_qos, render_png, render_text
from test.localcluster.workload import (
    BACKFILL,
    GANG,
    LABEL_GROUP,
    LABEL_KIND,
    QUOTA,
    ROLLOUT,
)


def _pod(name: str, node: str = "") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "colo",
                         "labels": {LABEL_KIND: "web", LABEL_GROUP: "web"}},
            "spec": {"nodeName": node} if node else {}, "status": {}}


def _event(pod: str, reason: str, message: str, event_time: str,
           series: dict[str, Any] | None = None) -> dict[str, Any]:
    """An Event koord-scheduler wrote through events.k8s.io/v1, as core/v1 lists it (no
    count or lastTimestamp)."""
    e: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Event", "reason": reason, "message": message,
        "type": "Warning" if reason == "FailedScheduling" else "Normal",
        "involvedObject": {"kind": "Pod", "namespace": "colo", "name": pod},
        "eventTime": event_time, "reportingComponent": "koord-scheduler"}
    if series:
        e["series"] = series
    return e


def test_scheduler_events_with_series_are_counted_and_the_latest_message_wins() -> None:
    events = [
        _event("web-0", "FailedScheduling", "0/3 nodes are available: 3 Insufficient cpu.",
               "2026-01-01T00:00:00.000001Z",
               {"count": 3, "lastObservedTime": "2026-01-01T00:05:00.000000Z"}),
        _event("web-0", "FailedScheduling", "0/4 nodes are available: 4 Insufficient memory.",
               "2026-01-01T00:02:00.000000Z"),
        _event("web-1", "Scheduled", "Successfully assigned colo/web-1 to node-1",
               "2026-01-01T00:00:01.000000Z"),
    ]
    r = build("colo", 3, 60.0, 10.0, [], [_pod("web-0"), _pod("web-1", "node-1")], events,
              2, 0)
    assert r.scheduled_events == 1
    assert r.failed_scheduling_events == 4
    assert r.pending == [{"pod": "colo/web-0", "group": "web",
                          "reason": "0/3 nodes are available: 3 Insufficient cpu."}]
    assert "1 Scheduled, 4 FailedScheduling events" in render_text(r)


def _node(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi"}}}


def _metric(cpu: str, pod_cpu: str = "1") -> dict[str, Any]:
    return {"status": {"updateTime": "2026-01-01T00:00:00Z", "nodeMetric": {
        "nodeUsage": {"resources": {"cpu": cpu, "memory": "4Gi"}},
        "systemUsage": {"resources": {"cpu": "500m"}}},
        "podsMetric": [{"namespace": "default", "name": "web", "qos": "LS",
                        "podUsage": {"resources": {"cpu": pod_cpu}}}]}}


def _report(node_a: dict[str, Any]) -> tuple[Any, str]:
    samples = []
    for t in (0.0, 10.0):
        s = Sample(t)
        s.nodes["node-a"] = node_sample(_node("node-a"), [], node_a)
        s.nodes["node-b"] = node_sample(_node("node-b"), [], _metric("2"))
        samples.append(s)
    report = build("test", 2, 60.0, 10.0, samples, [], [], 0, 0)
    return report, render_text(report)


@pytest.mark.parametrize(("cpu", "used", "flag"), [
    ("1e30", 8.0, "node cpu usage '1e30' is above allocatable (8): counted as 8"),
    ("9223372036854775807", 8.0, "above allocatable (8)"),
    ("-3", 0.0, "node cpu usage '-3' is negative: counted as 0"),
])
def test_absurd_usage_is_clamped_and_the_node_flagged(cpu: str, used: float, flag: str) -> None:
    # cpu 1e30 made the report print 1.7e29 % cluster utilisation.
    report, text = _report(_metric(cpu))
    row = {r.node: r for r in report.node_rows}
    assert row["node-a"].used_cpu == used
    assert any(flag in p for p in row["node-a"].metric_problems)
    assert row["node-b"].metric_problems == []
    assert report.utilisation is not None
    assert 0 <= report.utilisation.colocated_peak <= 100
    assert 0 <= report.utilisation.online_only_peak <= 100
    assert "! node-a: NodeMetric usage clamped or ignored" in text and flag in text
    assert "! node-b" not in text


def test_absurd_pod_usage_is_clamped_too() -> None:
    report, _ = _report(_metric("2", pod_cpu="1e30"))
    (a, _b) = report.node_rows
    assert a.used_cpu == 2.0 and a.metric_problems == [
        "pod default/web cpu usage '1e30' is above allocatable (8): counted as 8"]
    assert report.utilisation is not None and report.utilisation.online_only_peak <= 100


def test_a_usage_that_is_no_finite_quantity_counts_as_no_metric() -> None:
    report, text = _report(_metric("1e400"))
    a = report.node_rows[0]
    assert a.used_cpu is None
    assert a.metric_problems == ["node cpu usage '1e400' is no usable quantity: ignored"]
    assert "! node-a" in text


METRICS = """\
# HELP apiserver_authorization_denied_total Requests answered 403 Forbidden by authorization.
# TYPE apiserver_authorization_denied_total counter
apiserver_authorization_denied_total{group="",resource="pods/status",\
user="system:serviceaccount:koordinator-system:koordlet",verb="patch"} 3.0
apiserver_authorization_denied_total{group="coordination.k8s.io",resource="leases",\
user="system:serviceaccount:koordinator-system:koord-scheduler",verb="watch"} 7.0
# HELP apiserver_user_requests_total Requests checked by authorization, by user.
# TYPE apiserver_user_requests_total counter
apiserver_user_requests_total{user="system:serviceaccount:koordinator-system:koordlet"} 40.0
apiserver_user_requests_total{user="kubernetes-admin"} 12.0
"""


def test_denied_requests_are_counted_and_the_top_ones_named() -> None:
    r = build("test", 1, 60.0, 10.0, [], [], [], 0, 0)
    r.set_api_access(api_access(METRICS))
    assert r.denied_requests == 10
    assert r.requests_by_user == {
        "system:serviceaccount:koordinator-system:koordlet": 40, "kubernetes-admin": 12}
    text = render_text(r)
    lines = text.splitlines()
    at = lines.index("API requests denied (403): 10")
    assert lines[at + 1].split() == [
        "7", "system:serviceaccount:koordinator-system:koord-scheduler", "watch",
        "leases.coordination.k8s.io"]
    assert lines[at + 2].split() == [
        "3", "system:serviceaccount:koordinator-system:koordlet", "patch", "pods/status"]
    assert r.to_json()["denied_requests"] == 10
    assert r.to_json()["denied"][0]["count"] == 7


def test_no_denials_is_one_line_and_unread_metrics_say_so() -> None:
    r = build("test", 1, 60.0, 10.0, [], [], [], 0, 0)
    r.set_api_access(api_access(METRICS.split("# HELP apiserver_user")[0].replace(
        "3.0", "0.0").replace("7.0", "0.0")))
    text = render_text(r)
    assert "API requests denied (403): 0" in text
    assert "leases" not in text
    unread = build("test", 1, 60.0, 10.0, [], [], [], 0, 0)
    unread.set_api_access(None)
    assert "API requests denied (403): unknown" in render_text(unread)
    assert unread.to_json()["denied_requests"] is None


def _gang_pod(name: str, gang: str, node: str = "", phase: str = "Pending",
              message: str = "") -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase}
    if message:
        status["conditions"] = [{"type": "PodScheduled", "status": "False",
                                 "reason": "Unschedulable", "message": message}]
    return {"metadata": {"name": name, "namespace": "training",
                         "labels": {LABEL_KIND: GANG, LABEL_GROUP: gang}},
            "spec": {"nodeName": node} if node else {}, "status": status}


def _pod_group(name: str, min_member: int, phase: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "training",
                         "labels": {LABEL_KIND: GANG, LABEL_GROUP: name}},
            "spec": {"minMember": min_member}, "status": {"phase": phase}}


def test_gang_jobs_show_their_members_pod_group_phase_and_why_a_gang_never_bound() -> None:
    rejected = ('GangGroup "training/large" gets rejected due to member Pod '
                '"training/large-worker-2" is unschedulable with reason "Insufficient cpu"')
    no_fit = "0/2 nodes are available: 2 Insufficient cpu."
    pods = [_gang_pod("small-worker-0", "small", "node-1", "Succeeded"),
            _gang_pod("small-worker-1", "small", "node-2", "Running"),
            _gang_pod("large-worker-0", "large", message=rejected),
            _gang_pod("large-worker-1", "large", message=rejected),
            _gang_pod("large-worker-2", "large", message=no_fit)]
    groups = [_pod_group("large", 3, "Pending"), _pod_group("small", 2, "Running"),
              {"metadata": {"name": "someone-elses", "namespace": "training"}}]
    r = build("colo", 2, 60.0, 10.0, [], pods, [], 5, 0, groups)
    assert [(g.gang, g.members, g.min_member, g.bound, g.running, g.succeeded, g.phase)
            for g in r.gangs] == [("training/large", 3, 3, 0, 0, 0, "Pending"),
                                  ("training/small", 2, 2, 2, 1, 1, "Running")]
    assert r.gangs[0].messages == [rejected, no_fit]
    assert r.gangs[1].messages == []
    text = render_text(r)
    assert "Gang jobs (PodGroups: koord-scheduler's Coscheduling binds" in text
    rows = [line.split() for line in text.splitlines()
            if line.startswith("  training/") and not line.split()[0].endswith(":")]
    assert rows == [["training/large", "3", "3", "0", "0", "0", "Pending"],
                    ["training/small", "2", "2", "2", "1", "1", "Running"]]
    assert f"    why not bound: {rejected}" in text
    assert f"    why not bound: {no_fit}" in text
    assert r.to_json()["gangs"][0]["phase"] == "Pending"
    # Never bound, the members name the gang's message without any FailedScheduling event.
    assert {p["pod"]: p["reason"] for p in r.pending}["training/large-worker-2"] == no_fit


def test_a_report_without_gang_jobs_has_no_gang_section() -> None:
    r = build("colo", 2, 60.0, 10.0, [], [_pod("web-0", "node-1")], [], 1, 0)
    assert r.gangs == [] and "Gang jobs" not in render_text(r)



def _rollout_pod(name: str, kind: str, node: str = "", reservation: str = "") -> dict[str, Any]:
    annotations = ({"scheduling.koordinator.sh/reservation-allocated":
                    json.dumps({"name": reservation, "uid": f"uid-{reservation}"})}
                   if reservation else {})
    group = "checkout" if kind == ROLLOUT else "checkout-backfill"
    return {"metadata": {"name": name, "namespace": "online", "annotations": annotations,
                         "labels": {LABEL_KIND: kind, LABEL_GROUP: group}},
            "spec": {"nodeName": node} if node else {}, "status": {}}


def _reservation(name: str, node: str, phase: str, owners: list[str],
                 reason: str = "") -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": "False", "reason": reason}] if reason else []
    return {"metadata": {"name": name, "labels": {LABEL_KIND: ROLLOUT, LABEL_GROUP: "checkout"}},
            "status": {"nodeName": node, "phase": phase, "conditions": conditions,
                       "currentOwners": [{"namespace": "online", "name": o} for o in owners]}}


def test_reservations_show_their_node_phase_and_consumer_and_the_backfill_kept_out() -> None:
    pods = [_rollout_pod("checkout-0", ROLLOUT, "node-1", "checkout-0"),
            _rollout_pod("checkout-1", ROLLOUT),
            _rollout_pod("checkout-backfill-0", BACKFILL, "node-2"),
            _rollout_pod("checkout-backfill-1", BACKFILL)]
    refused = "0/2 nodes are available: 2 Insufficient cpu."
    events = [{**_event("checkout-backfill-1", "FailedScheduling", refused,
                        "2026-01-01T00:00:10Z"), "involvedObject": {
                   "kind": "Pod", "namespace": "online", "name": "checkout-backfill-1"}}]
    reservations = [_reservation("checkout-1", "", "Failed", [], reason="Expired"),
                    _reservation("checkout-0", "node-1", "Succeeded", ["checkout-0"]),
                    {"metadata": {"name": "someone-elses"}, "status": {"phase": "Available"}}]
    r = build("colo", 2, 60.0, 10.0, [], pods, events, 4, 0, reservations=reservations)
    assert [(x.name, x.node, x.phase, x.reason, x.owners) for x in r.reservations] == [
        ("checkout-0", "node-1", "Succeeded", "", ["online/checkout-0"]),
        ("checkout-1", "", "Failed", "Expired", [])]
    (ro,) = r.rollouts
    assert (ro.rollout, ro.pods, ro.bound, ro.in_reservations, ro.backfill, ro.backfill_bound,
            ro.backfill_in_reservations, ro.backfill_waited) == ("checkout", 2, 1, 1, 2, 1, 0, 1)
    assert ro.backfill_messages == [refused]
    text = render_text(r)
    assert "Reservations (koord-scheduler's Reservation" in text
    assert ["checkout-0", "node-1", "Succeeded", "online/checkout-0"] in [
        line.split() for line in text.splitlines()]
    assert "  checkout-1              -           Failed (Expired)    -" in text
    assert ("rollout checkout: 1/2 pods bound, 1 in a Reservation; backfill 1/2 bound, "
            "0 in a Reservation, 1 waited") in text
    assert f"    backfill waited: {refused}" in text
    assert "Reservations" not in render_text(build("colo", 2, 60.0, 10.0, [], [], [], 0, 0))

def _quota(name: str, min_cpu: str, max_cpu: str, runtime: str | None = None,
           used: str | None = None, request: str | None = None) -> dict[str, Any]:
    """An ElasticQuota as koord-scheduler leaves it: runtime and request annotations, used in
    status (absent until it first writes them)."""
    annotations = {}
    if runtime is not None:
        annotations["quota.scheduling.koordinator.sh/runtime"] = f'{{"cpu":"{runtime}"}}'
    if request is not None:
        annotations["quota.scheduling.koordinator.sh/request"] = f'{{"cpu":"{request}"}}'
    return {"metadata": {"name": name, "namespace": name, "annotations": annotations},
            "spec": {"min": {"cpu": min_cpu, "memory": "8Gi"},
                     "max": {"cpu": max_cpu, "memory": "16Gi"}},
            "status": {"used": {"cpu": used}} if used is not None else {}}


# (t, team-a (runtime, used, request), team-b (runtime, used, request)): team-a borrows team-b's
# idle min, team-b arrives, team-a is revoked down to its runtime, then preempts within itself.
STORY = [(0, (None, None, None), (None, None, None)),
         (2, ("8", "8", "8"), ("0", None, "0")),
         (4, ("8", "8", "8"), ("0", None, "0")),
         (20, ("4", "8", "8"), ("4", "0", "4")),
         (26, ("4", "4", "8"), ("4", "4", "4")),
         (40, ("4", "4", "9"), ("4", "4", "4"))]
EPOCH = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def _story_samples() -> list[Sample]:
    samples = []
    for t, a, b in STORY:
        s = Sample(float(t))
        s.quotas["team-b"] = quota_sample(_quota("team-b", "4", "8", *b))
        s.quotas["team-a"] = quota_sample(_quota("team-a", "4", "8", *a))
        samples.append(s)
    return samples


def _disruption_event(pod: str, reason: str, message: str, at: str) -> dict[str, Any]:
    e = _event(pod, reason, message, at)
    e["involvedObject"]["namespace"] = "team-a"
    return e


def test_quotas_show_min_max_runtime_used_and_the_pods_taken_back(tmp_path: Path) -> None:
    samples = _story_samples()
    urgent = {"metadata": {"name": "a-urgent-0", "namespace": "team-a", "uid": "uid-urgent",
                           "labels": {LABEL_KIND: QUOTA, LABEL_GROUP: "a-urgent"}},
              "spec": {"nodeName": "node-1"}, "status": {"phase": "Running"}}
    events = [
        _disruption_event("a-burst-3", "Preempted", "Preempted by pod uid-urgent on node node-1",
                          "2026-01-01T00:00:38.500000Z"),
        _disruption_event("a-burst-7", "Revoked", "quota team-a used cpu:8 over its "
                          "runtime cpu:4 for longer than 5s", "2026-01-01T00:00:25.000000Z"),
        _disruption_event("a-burst-7", "FailedScheduling", "not a disruption",
                          "2026-01-01T00:00:24.000000Z")]
    r = build("quota", 2, 60.0, 40.0, samples, [urgent], events, 13, 5, epoch=EPOCH)
    rows = {q.quota: q for q in r.quotas}
    assert [q.quota for q in r.quotas] == ["team-a", "team-b"]
    a, b = rows["team-a"], rows["team-b"]
    assert (a.min_cpu, a.max_cpu, a.peak_used_cpu, a.peak_used_at) == (4, 8, 8, 2)
    assert (a.runtime_cpu, a.used_cpu, a.request_cpu) == (4, 4, 9)
    assert (b.runtime_cpu, b.used_cpu, b.peak_used_cpu) == (4, 4, 4)
    # The moments something changed: t=4 repeats t=2 and is left out; the last one is kept.
    assert [m.t for m in r.quota_timeline] == [0, 2, 20, 26, 40]
    assert r.quota_timeline[2].runtime == {"team-a": 4, "team-b": 4}
    assert r.quota_timeline[2].used == {"team-a": 8, "team-b": 0}
    # Revoked first (t=25), then preempted by the urgent pod, named rather than by its UID.
    assert [(d.pod, d.reason, d.t) for d in r.disruptions] == [
        ("team-a/a-burst-7", "Revoked", pytest.approx(25)),
        ("team-a/a-burst-3", "Preempted", pytest.approx(38.5))]
    assert r.disruptions[1].message == "Preempted by pod team-a/a-urgent-0 on node node-1"

    text = render_text(r)
    lines = text.splitlines()
    assert any(line.startswith("Quotas (ElasticQuota, cpu cores") for line in lines)
    assert [line.split() for line in lines if line.startswith("  team-")] == [
        ["team-a", "4.0", "8.0", "8.0", "2", "4.0", "4.0", "9.0"],
        ["team-b", "4.0", "8.0", "4.0", "26", "4.0", "4.0", "4.0"]]
    at = lines.index("Runtime / used over the day (the samples where one changed)")
    assert lines[at + 1].split() == ["t", "s", "team-a", "team-b"]
    assert lines[at + 4].split() == ["20", "4.0", "/", "8.0", "4.0", "/", "0.0"]
    assert "Pods taken back (Preempted: preemption within a quota; Revoked: over-use " \
           "revocation): 2" in text
    assert ("  t=  25 s  team-a/a-burst-7  Revoked: quota team-a used cpu:8 over its runtime "
            "cpu:4 for longer than 5s") in lines
    png = tmp_path / "utilisation.png"
    render_png(r, samples, png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The samples' quotas survive report.json.
    assert Sample.from_json(json.loads(json.dumps(samples[3].to_json()))) == samples[3]


def test_a_report_without_quotas_has_no_quota_section() -> None:
    events = [_event("web-0", "Preempted", "Preempted by pod x on node node-1",
                     "2026-01-01T00:00:01.000000Z")]
    r = build("colo", 2, 60.0, 10.0, [Sample(0.0)], [_pod("web-0")], events, 1, 0)
    assert (r.quotas, r.quota_timeline, r.disruptions) == ([], [], [])
    assert "Quotas (" not in render_text(r)


NOW = 1_800_000_000.0  # when the report reads the trees


def _colo_pod(name: str, uid: str, kind: str, qos: str, resources: dict[str, str],
              started: float = NOW - 60) -> dict[str, Any]:
    """A workload pod the simulated kubelet started on node-0 at ``started`` (requests =
    limits)."""
    return {"metadata": {"name": name, "namespace": "colo", "uid": uid,
                         "labels": {LABEL_KIND: kind, LABEL_GROUP: kind,
                                    "koordinator.sh/qosClass": qos}},
            "spec": {"nodeName": "node-0", "containers": [
                {"name": "c", "resources": {"requests": resources, "limits": resources}}]},
            "status": {"phase": "Running",
                       "startTime": datetime.fromtimestamp(started, UTC).isoformat(),
                       "containerStatuses": [
                           {"name": "c", "containerID": f"containerd://{uid}-c"}]}}


def test_memory_qos_section_reads_back_what_cgroup_reconcile_wrote(tmp_path: Path) -> None:
    """A simulated node's fake tree (an Anolis kernel's memcg files), CgroupReconcile's round
    on it with memoryQOS on for LS and BE, and the report's section read from the files."""
    root = tmp_path / "nodes/node-0/cgroup"
    root.mkdir(parents=True)
    assert ensure_fake_v1_tree(str(root), cpus=16)
    env = fake_v1_env(str(root))
    pods = [_colo_pod(f"web-{i}", f"w{i}", "web", "LS", {"cpu": "3", "memory": "6Gi"})
            for i in range(2)]
    pods.append(_colo_pod("etl-0", "e0", "spark-etl", "BE",
                          {"kubernetes.io/batch-cpu": "1k",
                           "kubernetes.io/batch-memory": "2Gi"}))
    ensure_pod_dirs(env, pods, 16)
    # lsrClass as koordlet's defaults give it (a class missing leaves its kube-QoS dir alone).
    slo = NodeSLO.model_validate({"metadata": {"name": "node-0"}, "spec": {
        "resourceQOSStrategy": {
            "lsrClass": {"memoryQOS": {"enable": False}},
            "lsClass": {"memoryQOS": {"enable": True, "minLimitPercent": 50,
                                      "lowLimitPercent": 100, "throttlingPercent": 90}},
            "beClass": {"memoryQOS": {"enable": True, "minLimitPercent": 0,
                                      "lowLimitPercent": 0, "throttlingPercent": 0}}}}})
    gate = koordlet_feature_gate.copy()
    gate.set_enabled(CGROUP_RECONCILE, True)
    node = {"metadata": {"name": "node-0"},
            "status": {"allocatable": {"cpu": "16", "memory": "64Gi"}}}
    CgroupReconcile(Context(
        env=env, executor=ResourceUpdateExecutor(FakeClock(0.0)), metric_cache=MetricCache(),
        states=FakeStates(node, slo, pods), feature_gate=gate)).run_once()

    # started a second ago: its dirs exist, koordlet's next round has not written them yet
    new = _colo_pod("web-new", "wn", "web", "LS", {"cpu": "3", "memory": "6Gi"}, NOW - 1)
    ensure_pod_dirs(env, [new], 16)
    pods.append(new)
    r = build("colo", 1, 60.0, 10.0, [], pods, [], 4, 0)
    r.memory_qos = memory_qos(tmp_path / "nodes", pods, NOW)
    gi = 1 << 30
    assert [(p.qos, p.group, p.pods, p.request, p.min, p.low, p.high)
            for p in r.memory_qos.pods] == [
        ("LS", "web", 2, 6 * gi, 3 * gi, 6 * gi, 6 * gi),  # limit = request: high = limit
        ("BE", "spark-etl", 1, 2 * gi, 0, 0, None)]  # throttling off: max
    assert [(d.dir, d.min, d.low) for d in r.memory_qos.dirs] == [
        ("kubepods", 6 * gi, 12 * gi), ("burstable", 0, 0), ("besteffort", 0, 0)]
    text = render_text(r)
    assert ("LS  web          2 pods  request 6.00Gi: min 3.00Gi (50 %), low 6.00Gi "
            "(100 %), high 6.00Gi (100 %)") in text
    assert "BE  spark-etl    1 pods  request 2.00Gi: min 0.00Gi (0 %), low" in text
    assert "node-0: kubepods min 6.00Gi low 12.00Gi; burstable min 0.00Gi" in text
    assert r.memory_qos.just_started == 1
    assert "(1 pods started in the last 2 s are left out" in text


def test_memory_qos_section_says_when_nothing_was_written(tmp_path: Path) -> None:
    root = tmp_path / "nodes/node-0/cgroup"
    root.mkdir(parents=True)
    ensure_fake_v1_tree(str(root), cpus=4)
    pods = [_colo_pod("web-0", "w0", "web", "LS", {"cpu": "1", "memory": "1Gi"})]
    ensure_pod_dirs(fake_v1_env(str(root)), pods, 4)
    r = build("colo", 1, 60.0, 10.0, [], pods, [], 1, 0)
    r.memory_qos = memory_qos(tmp_path / "nodes", pods, NOW)
    assert "Memory QoS" in render_text(r)
    assert "none written (CgroupReconcile off" in render_text(r)
