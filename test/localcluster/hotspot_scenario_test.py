"""The hotspot scenario (``scenarios/hotspot.yaml``) on the local cluster, end to end: the API
server (its ReplicaSet controller replaces evicted pods, its eviction subresource honours the
PodDisruptionBudget), koord-manager, koord-scheduler (it places each migration's Reservation
and binds the replacement into it), koord-descheduler (LowNodeLoad and the MigrationController)
and the koordlets as real processes, and what the report says of it checked against the API
server's objects.

* node-0 and node-1 run above LowNodeLoad's cpu high threshold, node-2 and node-3 under the low.
* koord-descheduler migrates pods off the hot nodes: each PodMigrationJob succeeds, its pod
  gone and its replacement (a pod of the same ReplicaSet) bound on an idle node in the job's
  Reservation.
* The hot nodes end under the high threshold, the idle ones within it too.
* The service never had fewer available pods than its PodDisruptionBudget's minAvailable.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from api.extension.reservation import ANNOTATION_RESERVATION_ALLOCATED
from pkg.client.resources import POD_MIGRATION_JOBS, PODS, RESERVATIONS
from test.localcluster.cluster import LocalCluster
from test.localcluster.report import Report
from test.localcluster.scenario import SCENARIO_DIR, load
from test.localcluster.workload import LABEL_GROUP

HOT, IDLE = ("node-0", "node-1"), ("node-2", "node-3")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    scenario = load(SCENARIO_DIR / "hotspot.yaml")
    workdir = tmp_path_factory.mktemp("local-up-hotspot")
    cluster = LocalCluster(scenario, workdir)
    try:
        cluster.up()
        report = cluster.run(scenario.day_length_seconds)
        assert cluster.client is not None
        c = cluster.client
        yield {"report": report, "workdir": workdir,
               "pods": c.list(PODS, namespace="online")["items"],
               "jobs": c.list(POD_MIGRATION_JOBS)["items"],
               "reservations": {r["metadata"]["name"]: r
                                for r in c.list(RESERVATIONS)["items"]}}
    finally:
        cluster.down()


def test_the_hot_nodes_went_above_the_high_threshold_and_the_others_stayed_low(
        run: dict[str, Any]) -> None:
    d = run["report"].descheduler
    assert d is not None and d.thresholds is not None
    usage = {u.node: u for u in d.usage}
    for node in HOT:
        assert usage[node].cpu_peak is not None
        assert usage[node].cpu_peak > d.thresholds.high["cpu"], usage[node]
    for node in IDLE:
        assert usage[node].cpu_before is not None
        assert usage[node].cpu_before < d.thresholds.low["cpu"], usage[node]


def test_pod_migration_jobs_moved_pods_off_the_hot_nodes(run: dict[str, Any]) -> None:
    report: Report = run["report"]
    d = report.descheduler
    assert d is not None and d.jobs
    assert d.phases == {"Succeeded": len(d.jobs)}, [(j.name, j.phase, j.message) for j in d.jobs]
    assert {j["metadata"]["name"] for j in run["jobs"]} == {j.name for j in d.jobs}
    pods = {p["metadata"]["name"]: p for p in run["pods"]}
    for job in d.jobs:
        assert job.from_node in HOT and job.to_node in IDLE, job
        assert job.pod.split("/")[1] not in pods  # evicted
        replacement = pods[job.replacement.split("/")[1]]
        assert replacement["spec"]["nodeName"] == job.to_node
        # The ReplicaSet's pod, bound in the Reservation the job created.
        assert replacement["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"
        allocated = json.loads(replacement["metadata"]["annotations"][
            ANNOTATION_RESERVATION_ALLOCATED])
        reservation = run["reservations"][allocated["name"]]
        assert reservation["status"]["nodeName"] == job.to_node
        assert f'in Reservation "{allocated["name"]}"' in job.message
        assert job.created_at is not None and job.evicted_at is not None
        assert job.created_at <= job.evicted_at
    # The service kept its 12 pods, all bound and running.
    web = [p for p in run["pods"] if p["metadata"]["labels"].get(LABEL_GROUP) == "hot-web"
           and not p["metadata"].get("deletionTimestamp")]
    assert len(web) == 12 and all(p["status"].get("phase") == "Running" for p in web)


def test_usage_converged_into_the_thresholds(run: dict[str, Any]) -> None:
    d = run["report"].descheduler
    assert d is not None and d.thresholds is not None
    for u in d.usage:
        assert u.cpu_after is not None and u.cpu_after < d.thresholds.high["cpu"], u
    assert d.after_at is not None and d.before_at is not None and d.after_at > d.before_at


def test_no_workload_dropped_below_its_pdb(run: dict[str, Any]) -> None:
    d = run["report"].descheduler
    assert d is not None
    [pdb] = d.pdbs
    assert (pdb.pdb, pdb.min_available) == ("online/hot-web", 10)
    assert pdb.lowest_available is not None and pdb.held
    text = (run["workdir"] / "report.txt").read_text()
    assert "No workload dropped below its PDB: yes" in text
    assert f"PodMigrationJobs: {len(d.jobs)} (Succeeded {len(d.jobs)})" in text
    assert (run["workdir"] / "utilisation.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
