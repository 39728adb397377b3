"""The two-team quota scenario (``scenarios/quota.yaml``) on the local cluster, end to end: the
API server, koord-manager (its quota webhooks admit the ElasticQuotas), koord-scheduler (its
ElasticQuota plugin, status writer and over-use revocation) and the koordlets as real
processes, and what the report says of it checked against the API server's objects.

* team-a borrows team-b's idle min: its used peaks above its min before team-b's pods exist.
* team-b's pods arrive and get the min back: team-a's runtime shrinks to its min, koord-scheduler
  revokes team-a's pods (``Revoked`` events) until its used fits, and all of team-b's pods bind;
  team-a's replacements wait on "Insufficient quotas, quotaName: team-a".
* The urgent team-a pod preempts a lower-priority pod of its own quota (``Preempted``) and binds;
  no team-b pod is taken.
* The report's Quotas section and its figures at the end are the ElasticQuotas' own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.utils import parse_quantity

from api.extension.elastic_quota import ANNOTATION_RUNTIME
from pkg.client.resources import ELASTIC_QUOTAS, EVENTS, PODS
from test.localcluster.cluster import LocalCluster
from test.localcluster.report import Report
from test.localcluster.scenario import SCENARIO_DIR, load
from test.localcluster.workload import LABEL_GROUP

# After the day, a little time for the last preemption on a loaded machine.
MARGIN_SECONDS = 20.0


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    scenario = load(SCENARIO_DIR / "quota.yaml")
    workdir = tmp_path_factory.mktemp("local-up-quota")
    cluster = LocalCluster(scenario, workdir)
    try:
        cluster.up()
        report = cluster.run(scenario.day_length_seconds + MARGIN_SECONDS)
        assert cluster.client is not None
        c = cluster.client
        yield {"report": report, "workdir": workdir, "scenario": scenario,
               "pods": c.list(PODS)["items"], "events": c.list(EVENTS)["items"],
               "quotas": {q["metadata"]["name"]: q for q in c.list(ELASTIC_QUOTAS)["items"]}}
    finally:
        cluster.down()


def _cores(q: str) -> float:
    return float(parse_quantity(q))


def _pods(run: dict[str, Any], group: str) -> list[dict[str, Any]]:
    return [p for p in run["pods"] if (p["metadata"].get("labels") or {}).get(LABEL_GROUP)
            == group]


def _events(run: dict[str, Any], reason: str) -> list[dict[str, Any]]:
    return [e for e in run["events"] if e.get("reason") == reason]


def test_team_a_borrows_team_bs_idle_min(run: dict[str, Any]) -> None:
    report: Report = run["report"]
    rows = {q.quota: q for q in report.quotas}
    b_at = next(j for j in run["scenario"].quota_jobs if j.name == "b-work").submit_at_fraction \
        * run["scenario"].day_length_seconds
    a = rows["team-a"]
    assert a.peak_used_cpu == 8 and a.min_cpu == 4
    assert a.peak_used_at is not None and a.peak_used_at < b_at
    # While team-b was idle, team-a's runtime was all of the parent's.
    before = [m for m in report.quota_timeline if m.t < b_at and m.used.get("team-a") == 8]
    assert before and before[-1].runtime["team-a"] == 8


def test_team_b_gets_its_min_back_through_revocation(run: dict[str, Any]) -> None:
    report: Report = run["report"]
    b_pods = _pods(run, "b-work")
    assert len(b_pods) == 4 and all(p["spec"].get("nodeName") for p in b_pods)
    revoked = _events(run, "Revoked")
    assert revoked and {e["involvedObject"]["namespace"] for e in revoked} == {"team-a"}
    assert all(e["involvedObject"]["name"].startswith("a-burst-") for e in revoked)
    assert all("quota team-a used cpu:8" in e["message"] for e in revoked)
    rows = {q.quota: q for q in report.quotas}
    assert (rows["team-b"].used_cpu, rows["team-b"].runtime_cpu) == (4, 4)
    assert rows["team-a"].runtime_cpu == 4
    assert rows["team-a"].used_cpu is not None and rows["team-a"].used_cpu <= 4
    # team-a's replacements (a Job would start them) wait: its quota refused them (the last
    # try may name full nodes instead, made while the urgent pod's victim was leaving and
    # team-a used 3 cores for a moment).
    waiting = {p["metadata"]["name"] for p in _pods(run, "a-burst")
               if not p["spec"].get("nodeName")}
    assert len(waiting) >= 4
    refused = {e["involvedObject"]["name"] for e in _events(run, "FailedScheduling")
               if e["involvedObject"]["name"] in waiting
               and "Insufficient quotas, quotaName: team-a" in e["message"]}
    assert len(refused) >= 3, (waiting, refused)


def test_an_urgent_pod_preempts_within_its_own_quota(run: dict[str, Any]) -> None:
    [urgent] = _pods(run, "a-urgent")
    assert urgent["spec"].get("nodeName")
    preempted = _events(run, "Preempted")
    assert preempted
    assert {e["involvedObject"]["namespace"] for e in preempted} == {"team-a"}
    assert all(urgent["metadata"]["uid"] in e["message"] for e in preempted)
    report: Report = run["report"]
    assert [d.reason for d in report.disruptions if d.reason == "Preempted"] == \
        ["Preempted"] * len(preempted)
    assert any(f"by pod team-a/{urgent['metadata']['name']}" in d.message
               for d in report.disruptions)


def test_the_reports_quota_figures_are_the_elastic_quotas(run: dict[str, Any]) -> None:
    report: Report = run["report"]
    rows = {q.quota: q for q in report.quotas}
    assert set(rows) == {"teams", "team-a", "team-b"}
    for name, row in rows.items():
        eq = run["quotas"][name]
        assert row.min_cpu == _cores(eq["spec"]["min"]["cpu"])
        assert row.max_cpu == _cores(eq["spec"]["max"]["cpu"])
        runtime = json.loads(eq["metadata"]["annotations"][ANNOTATION_RUNTIME])
        assert row.runtime_cpu == _cores(runtime["cpu"])
        assert row.used_cpu == _cores(eq["status"]["used"]["cpu"])
    assert len(report.disruptions) == len(_events(run, "Revoked")) + len(
        _events(run, "Preempted"))
    text = (run["workdir"] / "report.txt").read_text()
    assert "Quotas (ElasticQuota, cpu cores" in text
    assert "Pods taken back (Preempted: preemption within a quota; Revoked: over-use " \
           "revocation)" in text
    assert (run["workdir"] / "utilisation.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
