"""hack/local-up's engine end to end on the short CI scenario (``scenarios/ci.yaml``: 2 nodes,
a 100-second day): the API server, koord-manager, koord-scheduler, koord-descheduler and one
koordlet per node run as real processes, the workload goes through the manager's webhook and the
scheduler; the online service is a Deployment whose ReplicaSet (in the API server) makes its pods.

* While it runs, the real ``kubectl get pods -A`` against the written kubeconfig lists the
  workload's pods.
* The report's numbers are checked against the API server's objects, computed here on their
  own: per node allocatable and batch allocatable (``node.status``), requests of the pods bound
  there and not finished, used CPU and memory (the NodeMetric), where each pod went
  (``spec.nodeName``), pods never bound, phases, Scheduled and eviction events. The run ends
  in ``settle`` mode (controllers stopped, no batch pod running), so nothing moves between the
  report's last sample and these reads.
* Every component ran as the chart's ServiceAccount of its component (the API server counted
  requests from each), the API server denied none of their requests (403), and koord-manager
  pointed the chart's webhook configuration at itself.
* Gang jobs bind whole or not at all: the one that fits ran, the one larger than the free
  cores bound no member, and the report's Gang jobs rows match the PodGroups and their pods.
* A rollout reserved ahead: each of its pods landed in one of its Reservations (on that node,
  the allocated annotation naming it, the Reservation Succeeded with the pod as its owner),
  no backfill pod used one though some had to wait, and the report's Reservations rows say so.
* Memory QoS reached the nodes: koordlet's CgroupReconcile wrote the scenario's
  ``resource-qos-config`` (through koord-manager's NodeSLO) into each node's cgroup tree, and the
  report's Memory QoS rows and kube-QoS dirs match upstream's formulas on the pods' requests.
* The co-location story holds: batch pods were turned into BE / koord-batch pods requesting
  ``kubernetes.io/batch-cpu`` and ran on batch capacity the manager published, and CPU
  utilisation with co-location is above the online-only figure.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import types
from collections import Counter, defaultdict
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import psutil
import pytest
from kubernetes.utils import parse_quantity

from api.extension.reservation import ANNOTATION_RESERVATION_ALLOCATED
from manager.webhook.options import DEFAULT_MUTATING_NAME
from pkg.client.resources import (
    EVENTS,
    MUTATING_WEBHOOK_CONFIGURATIONS,
    NODE_METRICS,
    NODES,
    POD_GROUPS,
    PODS,
    RESERVATIONS,
)
from test.apiserver.testing import Kubectl, kubectl_binary
from test.e2e.cluster import REPO_ROOT, wait_for
from test.localcluster.cluster import LocalCluster
from test.localcluster.report import Report
from test.localcluster.scenario import SCENARIO_DIR, load
from test.localcluster.workload import BACKFILL, GANG, LABEL_GROUP, LABEL_KIND, ROLLOUT

GI = 1 << 30


def cores(rl: dict[str, Any], name: str = "cpu") -> float:
    if name not in rl:
        return 0.0
    q = parse_quantity(rl[name])
    return float(q if name == "cpu" else q / 1000)


def gib(rl: dict[str, Any], name: str = "memory") -> float:
    return float(parse_quantity(rl[name]) / GI) if name in rl else 0.0


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    scenario = load(SCENARIO_DIR / "ci.yaml")
    workdir = tmp_path_factory.mktemp("local-up")
    cluster = LocalCluster(scenario, workdir, settle=True)
    seen: dict[str, Any] = {}

    def during(t: float) -> None:
        if t >= 15 and "kubectl" not in seen:
            binary = kubectl_binary()
            if binary is None:
                seen["kubectl"] = None
                return
            k = Kubectl(types.SimpleNamespace(kubeconfig=str(cluster.components.kubeconfig)))
            try:
                seen["kubectl"] = k.run("get", "pods", "-A", "--no-headers").stdout
            finally:
                k.close()

    try:
        cluster.up()
        report = cluster.run(scenario.day_length_seconds, during)
        assert cluster.client is not None
        c = cluster.client
        yield {"report": report, "workdir": workdir, "kubectl": seen.get("kubectl"),
               "nodes": c.list(NODES)["items"], "pods": c.list(PODS)["items"],
               "metrics": {m["metadata"]["name"]: m for m in c.list(NODE_METRICS)["items"]},
               "events": c.list(EVENTS)["items"], "scenario": scenario,
               "pod_groups": c.list(POD_GROUPS)["items"],
               "reservations": c.list(RESERVATIONS)["items"],
               "webhooks": c.get(MUTATING_WEBHOOK_CONFIGURATIONS, DEFAULT_MUTATING_NAME)}
    finally:
        cluster.down()


def test_kubectl_lists_the_pods_while_it_runs(run: dict[str, Any]) -> None:
    if run["kubectl"] is None:
        pytest.skip("kubectl is not installed")
    lines = run["kubectl"].splitlines()
    online = [line.split() for line in lines if line.startswith("online ")]
    # The Deployment's ReplicaSet names them.
    assert len(online) == 4 and all(parts[1].startswith("web-") for parts in online)


def test_per_node_numbers_match_the_api_objects(run: dict[str, Any]) -> None:
    report: Report = run["report"]
    rows = {r.node: r for r in report.node_rows}
    assert set(rows) == {n["metadata"]["name"] for n in run["nodes"]} == {"node-0", "node-1"}
    for node in run["nodes"]:
        name = node["metadata"]["name"]
        row = rows[name]
        alloc = node["status"]["allocatable"]
        assert row.allocatable_cpu == pytest.approx(cores(alloc)) == 8
        assert row.allocatable_memory == pytest.approx(gib(alloc)) == 32
        assert row.batch_allocatable_cpu == pytest.approx(
            cores(alloc, "kubernetes.io/batch-cpu"))
        assert row.batch_allocatable_memory == pytest.approx(
            gib(alloc, "kubernetes.io/batch-memory"))
        live = [p for p in run["pods"] if p["spec"].get("nodeName") == name
                and p["status"].get("phase") not in ("Succeeded", "Failed")]
        want: defaultdict[str, Decimal] = defaultdict(Decimal)  # resource → summed requests
        for p in live:
            for c in p["spec"]["containers"]:
                for k, v in (c.get("resources", {}).get("requests") or {}).items():
                    want[k] += parse_quantity(v)
        assert row.pods == len(live)
        assert row.requested_cpu == pytest.approx(float(want["cpu"]))
        assert row.requested_memory == pytest.approx(float(want["memory"]) / GI)
        assert row.requested_batch_cpu == pytest.approx(
            float(want["kubernetes.io/batch-cpu"]) / 1000)
        usage = run["metrics"][name]["status"]["nodeMetric"]["nodeUsage"]["resources"]
        assert row.used_cpu == pytest.approx(cores(usage))
        assert row.used_memory == pytest.approx(gib(usage))
        # The manager published batch capacity on every node at some point of the day.
        assert row.batch_allocatable_cpu_max > 0


def test_placements_phases_and_events_match_the_api_objects(run: dict[str, Any]) -> None:
    report: Report = run["report"]
    pods = [p for p in run["pods"] if LABEL_KIND in (p["metadata"].get("labels") or {})]
    placed: dict[str, Counter[str]] = {}
    phases: dict[str, Counter[str]] = {}
    for p in pods:
        labels = p["metadata"]["labels"]
        phases.setdefault(labels[LABEL_KIND], Counter())[p["status"].get("phase") or
                                                        "Pending"] += 1
        if p["spec"].get("nodeName"):
            placed.setdefault(labels[LABEL_GROUP], Counter())[p["spec"]["nodeName"]] += 1
    assert report.placements == {g: dict(c) for g, c in placed.items()}
    assert report.phases == {k: dict(c) for k, c in phases.items()}
    assert {p["pod"] for p in report.pending} == {
        f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in pods
        if not p["spec"].get("nodeName")}
    assert report.pods_created == len(pods)
    events = run["events"]
    bound = sum(sum(c.values()) for c in placed.values())
    # One Scheduled event per bound pod, as kube-scheduler records.
    assert report.scheduled_events == sum(e.get("count") or 1 for e in events
                                          if e["reason"] == "Scheduled"
                                          and e["involvedObject"]["kind"] == "Pod") == bound
    assert len(report.evictions) == sum(1 for e in events if e["reason"] == "evictPodSuccess")
    # Every online pod was placed; the scheduler's events say where.
    assert sum(placed["web"].values()) == 4


def test_batch_pods_ran_as_be_on_reclaimed_capacity(run: dict[str, Any]) -> None:
    report: Report = run["report"]
    batch = [p for p in run["pods"]
             if (p["metadata"].get("labels") or {}).get(LABEL_KIND) == "batch"]
    assert batch
    for p in batch:
        # Upstream's spark-jobs ClusterColocationProfile, through the manager's webhook.
        assert p["metadata"]["labels"]["koordinator.sh/qosClass"] == "BE"
        assert p["spec"]["priorityClassName"] == "koord-batch"
        assert p["spec"]["schedulerName"] == "koord-scheduler"
        requests = p["spec"]["containers"][0]["resources"]["requests"]
        assert set(requests) == {"kubernetes.io/batch-cpu", "kubernetes.io/batch-memory"}
        assert requests["kubernetes.io/batch-cpu"] == "1k"
    assert report.phases["batch"].get("Succeeded", 0) >= 3
    util = report.utilisation
    assert util is not None and util.samples >= 3
    # The day's average moves with when a wave binds against the 30 s NodeMetric reports (a
    # 100 s day holds three): above the online-only figure, and clearly so at the peak.
    assert util.colocated_avg > util.online_only_avg
    assert util.colocated_peak > util.online_only_peak + 2
    assert max(row["be_used_cpu"] for row in report.batch_timeline) > 0.5


def test_gang_jobs_bind_whole_or_not_at_all_and_the_report_says_so(
        run: dict[str, Any]) -> None:
    report: Report = run["report"]
    gang_pods: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for p in run["pods"]:
        labels = p["metadata"].get("labels") or {}
        if labels.get(LABEL_KIND) == GANG:
            gang_pods[f"{p['metadata']['namespace']}/{labels[LABEL_GROUP]}"].append(p)
    phases = {f"{pg['metadata']['namespace']}/{pg['metadata']['name']}":
              (pg.get("status") or {}).get("phase", "") for pg in run["pod_groups"]}
    rows = {g.gang: g for g in report.gangs}
    assert set(rows) == set(gang_pods) == {"training/ci-train-small", "training/ci-train-large"}
    for key, row in rows.items():
        pods = gang_pods[key]
        bound = [p for p in pods if p["spec"].get("nodeName")]
        assert (row.members, row.bound, row.phase) == (len(pods), len(bound), phases[key])
    small, large = rows["training/ci-train-small"], rows["training/ci-train-large"]
    assert (small.members, small.bound, small.succeeded) == (2, 2, 2)
    assert (large.members, large.bound) == (3, 0)
    # Why: the members' PodScheduled messages, the gang's rejection among them.
    assert large.messages and any('GangGroup "training/ci-train-large"' in m or
                                  "ci-train-large" in m for m in large.messages)
    text = (run["workdir"] / "report.txt").read_text()
    assert "Gang jobs (PodGroups" in text and "    why not bound: " in text


def test_rollout_pods_land_in_their_reservations_and_the_backfill_never_does(
        run: dict[str, Any]) -> None:
    report: Report = run["report"]
    reservations = {r["metadata"]["name"]: r for r in run["reservations"]}
    assert set(reservations) == {"ci-checkout-0", "ci-checkout-1"}

    def of_kind(kind: str) -> list[dict[str, Any]]:
        return [p for p in run["pods"]
                if (p["metadata"].get("labels") or {}).get(LABEL_KIND) == kind]

    rollout, backfill = of_kind(ROLLOUT), of_kind(BACKFILL)
    assert len(rollout) == 2 and len(backfill) == 4
    consumed = {json.loads(p["metadata"]["annotations"][ANNOTATION_RESERVATION_ALLOCATED])
                ["name"]: p for p in rollout}
    assert set(consumed) == set(reservations)
    for name, r in reservations.items():
        pod = consumed[name]
        status = r["status"]
        assert status["nodeName"] == pod["spec"]["nodeName"]
        assert status["phase"] == "Succeeded"  # allocate-once: consumed
        assert [o["name"] for o in status["currentOwners"]] == [pod["metadata"]["name"]]
    assert not [p for p in backfill
                if ANNOTATION_RESERVATION_ALLOCATED in (p["metadata"].get("annotations") or {})]
    # The backfill wanted more than the cores left free: some of it was refused while the
    # Reservations held theirs.
    refused = {e["involvedObject"]["name"] for e in run["events"]
               if e.get("reason") == "FailedScheduling"
               and e["involvedObject"]["name"] in {p["metadata"]["name"] for p in backfill}}
    assert refused
    rows = {r.name: r for r in report.reservations}
    assert {n: (r.node, r.phase, r.owners) for n, r in rows.items()} == {
        n: (r["status"]["nodeName"], "Succeeded",
            [f"{consumed[n]['metadata']['namespace']}/{consumed[n]['metadata']['name']}"])
        for n, r in reservations.items()}
    (ro,) = report.rollouts
    assert (ro.rollout, ro.pods, ro.bound, ro.in_reservations, ro.backfill,
            ro.backfill_in_reservations) == ("ci-checkout", 2, 2, 2, 4, 0)
    assert ro.backfill_waited == len(refused) and ro.backfill_messages
    text = (run["workdir"] / "report.txt").read_text()
    assert "Reservations (koord-scheduler's Reservation" in text
    assert "rollout ci-checkout: 2/2 pods bound, 2 in a Reservation" in text


def test_report_files(run: dict[str, Any]) -> None:
    workdir: Path = run["workdir"]
    text = (workdir / "report.txt").read_text()
    for needle in ("node-0", "node-1", "Batch resources over the day", "Where pods went",
                   "Suppression", "Evictions", "with co-location", "online services only"):
        assert needle in text
    assert (workdir / "utilisation.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    saved = json.loads((workdir / "report.json").read_text())
    assert saved["report"]["placements"] == run["report"].placements
    assert len(saved["samples"]) >= 20  # a sample every 4 s of a 100 s day
    tsv = (workdir / "placements.tsv").read_text().splitlines()
    assert len(tsv) == 1 + run["report"].pods_created
    for name in ("kube-apiserver", "koord-manager-0", "koord-manager-1", "koord-scheduler-0",
                 "koord-scheduler-1", "koord-descheduler-0", "koord-descheduler-1",
                 "koordlet-node-0"):
        assert (workdir / "logs" / f"{name}.log").stat().st_size > 0
    # Two replicas of each leader-elected component; the report names who led each Lease
    # (before settling stopped them) and what the supervisor restarted.
    assert {c["name"] for c in saved["report"]["components"]} == {
        "kube-apiserver", "koord-manager-0", "koord-manager-1", "koord-scheduler-0",
        "koord-scheduler-1", "koord-descheduler-0", "koord-descheduler-1", "koordlet-node-0",
        "koordlet-node-1"}
    leases = {lease["lease"]: lease["holder"] for lease in saved["report"]["leases"]}
    assert leases["koordinator-system/koordinator-manager"] in ("koord-manager-0",
                                                                "koord-manager-1")
    assert leases["koordinator-system/koord-scheduler"] in ("koord-scheduler-0",
                                                            "koord-scheduler-1")
    assert leases["koordinator-system/koord-descheduler"] in ("koord-descheduler-0",
                                                              "koord-descheduler-1")
    # koord-descheduler's section: what LowNodeLoad did with the chart's thresholds.
    assert (f"Descheduler (koord-descheduler, leader "
            f"{leases['koordinator-system/koord-descheduler']}; LowNodeLoad on NodeMetrics: "
            f"cpu low 45 % / high 75 %, memory low 55 % / high 80 %)") in text
    jobs = saved["report"]["descheduler"]["jobs"]
    assert f"PodMigrationJobs: {len(jobs)}" in text
    assert "Restarts (the supervisor restarts what exits): " in text
    assert (f"Leader of Lease koordinator-system/koord-scheduler: "
            f"{leases['koordinator-system/koord-scheduler']} (transitions ") in text


def test_memory_qos_reached_the_nodes_cgroups(run: dict[str, Any]) -> None:
    """lsClass memoryQOS of ci.yaml: min 50 %, low 100 %, throttling 90 % of the way from
    request to limit (= the limit for these pods); the other classes keep the none values."""
    report: Report = run["report"]
    assert report.memory_qos is not None
    rows = {(r.qos, r.group): r for r in report.memory_qos.pods}
    web = rows[("LS", "web")]
    assert web.pods == run["scenario"].online[0].replica_count(2)
    assert web.request == 4 * GI
    assert (web.min, web.low, web.high) == (2 * GI, 4 * GI, 4 * GI)
    for (qos, group), r in rows.items():
        if qos != "LS":  # BE, and LSR (the gangs' and backfill's Guaranteed pods)
            assert (r.min, r.low, r.high) == (0, 0, None), (qos, group)
    # The Guaranteed dir (kubepods) protects its LS pods still running at the end.
    running: Counter[str] = Counter()
    for pod in run["pods"]:
        labels = pod["metadata"].get("labels") or {}
        if (labels.get("koordinator.sh/qosClass") == "LS"
                and (pod.get("status") or {}).get("phase") == "Running"):
            running[pod["spec"]["nodeName"]] += int(
                parse_quantity(pod["spec"]["containers"][0]["resources"]["requests"]["memory"]))
    dirs = {(d.node, d.dir): d for d in report.memory_qos.dirs}
    for node, requested in running.items():
        assert (dirs[(node, "kubepods")].min, dirs[(node, "kubepods")].low) == (
            requested // 2, requested), node
    text = (run["workdir"] / "report.txt").read_text()
    assert ("LS  web" in text and "min 2.00Gi (50 %), low 4.00Gi (100 %), high 4.00Gi "
            "(100 %)" in text)


SA = "system:serviceaccount:koordinator-system:"


def test_components_ran_as_their_service_accounts_and_nothing_was_denied(
        run: dict[str, Any]) -> None:
    report: Report = run["report"]
    assert report.denied_requests == 0, report.denied
    assert "API requests denied (403): 0" in (run["workdir"] / "report.txt").read_text()
    # Only the components' ServiceAccounts and the admin (the driver, the report) asked.
    users = report.requests_by_user
    assert set(users) == {"kubernetes-admin", SA + "koord-manager", SA + "koord-scheduler",
                          SA + "koord-descheduler", SA + "koordlet"}, users
    assert all(n > 0 for n in users.values())
    # The Leases were taken under the ServiceAccounts' tokens (the admin never writes one).
    assert all(lease.identity for lease in report.leases)
    # The leading manager pointed the chart's webhooks at itself, with its own CA; the chart's
    # settings (the namespace selector exempting the control plane) are kept.
    hooks = {h["name"]: h for h in run["webhooks"]["webhooks"]}
    assert hooks["mpod-create.koordinator.sh"]["namespaceSelector"] == {"matchExpressions": [
        {"key": "control-plane", "operator": "DoesNotExist"}]}
    # Installed with the pod webhooks failing closed (bootstrap.CHART_VALUES).
    assert hooks["mpod-create.koordinator.sh"]["failurePolicy"] == "Fail"
    for h in hooks.values():
        assert h["clientConfig"]["url"].startswith("https://127.0.0.1:")
        assert h["clientConfig"]["caBundle"] not in ("", "Cg==")


def test_ctrl_c_stops_every_process_and_reports_what_ran(tmp_path: Path) -> None:
    """`hack/local-up`'s engine as its own process, interrupted as a terminal's Ctrl-C would:
    every component process it started is gone afterwards and the partial report is printed."""
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get(
        "PYTHONPATH", ""))
    out = tmp_path / "out.log"
    with open(out, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "test.localcluster", "--scenario",
             str(SCENARIO_DIR / "ci.yaml"), "--workdir", str(tmp_path / "run")],
            cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: "[   10s/" in out.read_text() or proc.poll() is not None,
                 timeout=120, interval=0.5, what="the scenario's progress")
        assert proc.poll() is None, out.read_text()
        children = psutil.Process(proc.pid).children(recursive=True)
        # API server, two managers, two schedulers, two deschedulers and a koordlet per node
        # (2).
        assert len(children) >= 9, [c.cmdline() for c in children]
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 130
        stopped_in = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    gone, alive = psutil.wait_procs(children, timeout=5)
    assert alive == []
    text = out.read_text()
    assert "local-up: interrupted, stopping" in text
    assert "local-up: every process stopped" in text
    assert "== Koordinator local cluster: scenario 'ci-short'" in text  # the partial report
    assert stopped_in < 30
