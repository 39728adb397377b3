"""The report's Descheduler section from fixed inputs: koord-descheduler's PodMigrationJobs with
the pod's move (the node it was seen on, the Reservation's node and the pod bound there), their
outcome and duration, the PodDisruptionBudgets' fewest available pods once their workload was
up, and the nodes' usage before the first job and at the end against LowNodeLoad's
thresholds."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from test.localcluster import bootstrap
from test.localcluster.recorder import NodeSample, PdbWatch, Sample
from test.localcluster.report import (
    DeschedulerSection,
    Thresholds,
    build,
    descheduler_section,
    low_node_load_thresholds,
    render_png,
    render_text,
    usage_rows,
)
from test.localcluster.scenario import SCENARIO_DIR, load

EPOCH = 1767225600.0  # 2026-01-01T00:00:00Z: the day starts there
THRESHOLDS = Thresholds({"cpu": 45, "memory": 55}, {"cpu": 75, "memory": 80})


def _ts(seconds: float) -> str:
    return f"2026-01-01T00:{int(seconds) // 60:02d}:{int(seconds) % 60:02d}Z"


def _job(name: str, pod: str, created: float, *, phase: str = "Succeeded",
         node: str = "", bound: str = "", ended: float | None = None, reason: str = "",
         message: str = "") -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase}
    if node:
        status["nodeName"] = node
    if bound:
        status["podRef"] = {"namespace": "online", "name": bound}
    if reason:
        status["reason"] = reason
    if message:
        status["message"] = message
    if ended is not None:
        status["conditions"] = [
            {"type": "ReservationScheduled", "status": "True",
             "lastTransitionTime": _ts(created)},
            {"type": "Eviction", "status": "True", "lastTransitionTime": _ts(ended)}]
    return {"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "PodMigrationJob",
            "metadata": {"name": name, "creationTimestamp": _ts(created)},
            "spec": {"podRef": {"namespace": "online", "name": pod}}, "status": status}


def _evicting(job: str, at: float) -> dict[str, Any]:
    return {"reason": "Evicting", "firstTimestamp": _ts(at), "lastTimestamp": _ts(at),
            "involvedObject": {"kind": "PodMigrationJob", "name": job},
            "message": "Pod evicted"}


def _samples(cpu_by_t: dict[float, dict[str, float]]) -> list[Sample]:
    """Samples of 8-core, 16 GiB nodes using the given cores (memory a quarter of it)."""
    return [Sample(t, {n: NodeSample(allocatable_cpu=8, allocatable_memory=16, used_cpu=c,
                                     used_memory=4.0) for n, c in nodes.items()})
            for t, nodes in sorted(cpu_by_t.items())]


SAMPLES = _samples({
    0: {"node-0": 0.3, "node-1": 0.3},  # before the first NodeMetric with the load
    30: {"node-0": 6.6, "node-1": 0.3},
    42: {"node-0": 6.6, "node-1": 0.3},
    60: {"node-0": 5.5, "node-1": 1.4},
})


def _section(jobs: list[dict[str, Any]], events: list[dict[str, Any]],
             pdbs: Sequence[PdbWatch] = ()) -> DeschedulerSection:
    pod_nodes = {("online", "web-a"): "node-0", ("online", "web-b"): "node-0",
                 ("online", "web-a2"): "node-1"}
    return descheduler_section("koord-descheduler-1", THRESHOLDS, jobs, pod_nodes, pdbs,
                               SAMPLES, events, EPOCH)


def test_the_charts_config_rendered_for_local_up_has_low_node_loads_thresholds() -> None:
    config = bootstrap.descheduler_config(bootstrap.render(load(SCENARIO_DIR / "hotspot.yaml")))
    assert config["deschedulingInterval"] == "5s"
    assert {"name": "LowNodeLoad"} in config["profiles"][0]["plugins"]["balance"]["enabled"]
    assert low_node_load_thresholds(config) == THRESHOLDS
    assert low_node_load_thresholds({"profiles": [{"pluginConfig": []}]}) is None


def test_jobs_show_the_pods_move_outcome_and_duration_in_creation_order() -> None:
    jobs = [_job("job-b", "web-b", 45, phase="Failed", reason="ForbiddenMigratePod",
                 message="Reservation is already bound by another Pod", ended=47),
            _job("job-a", "web-a", 42, node="node-1", bound="web-a2", ended=46),
            _job("job-c", "web-gone", 50, phase="Running")]
    d = _section(jobs, [_evicting("job-a", 43)])
    assert [(j.name, j.pod, j.from_node, j.to_node, j.replacement, j.phase) for j in d.jobs] == [
        ("job-a", "online/web-a", "node-0", "node-1", "online/web-a2", "Succeeded"),
        ("job-b", "online/web-b", "node-0", "", "", "Failed"),
        ("job-c", "online/web-gone", "", "", "", "Running")]
    a, b, c = d.jobs
    assert (a.created_at, a.evicted_at, a.ended_at, a.seconds) == (42, 43, 46, 4)
    assert (b.reason, b.seconds) == ("ForbiddenMigratePod", 2)
    assert (c.ended_at, c.seconds) == (None, None)  # still running: no end
    assert d.phases == {"Failed": 1, "Running": 1, "Succeeded": 1}


def test_usage_before_is_the_last_sample_at_the_first_job_and_after_the_last() -> None:
    d = _section([_job("job-a", "web-a", 42, node="node-1", bound="web-a2", ended=46)], [])
    assert (d.before_at, d.after_at) == (42, 60)
    rows = {u.node: u for u in d.usage}
    assert rows["node-0"].cpu_before == pytest.approx(82.5)
    assert rows["node-0"].cpu_after == pytest.approx(68.75)
    assert rows["node-0"].cpu_peak == pytest.approx(82.5)
    assert rows["node-1"].cpu_after == pytest.approx(17.5)
    assert rows["node-0"].memory_after == pytest.approx(25)
    # Without a job "before" is the first sample with NodeMetrics.
    assert usage_rows(SAMPLES, None)[1:] == (0, 60)
    # No NodeMetric at all: nothing to say.
    assert usage_rows([Sample(0.0, {"node-0": NodeSample()})], None) == ([], None, None)


def test_a_pdb_counts_ready_pods_not_being_deleted_once_its_workload_was_up() -> None:
    def pod(name: str, ready: bool = True, deleting: bool = False,
            app: str = "web") -> dict[str, Any]:
        md: dict[str, Any] = {"name": name, "namespace": "online", "labels": {"app": app}}
        if deleting:
            md["deletionTimestamp"] = _ts(1)
        return {"metadata": md, "status": {"conditions": [
            {"type": "Ready", "status": "True" if ready else "False"}]}}

    w = PdbWatch("online", "web", {"app": "web"}, 2)
    w.observe(1, [pod("a")])  # starting up: not counted
    assert (w.up, w.lowest) == (False, None)
    w.observe(2, [pod("a"), pod("b"), pod("c"), pod("x", app="other")])
    w.observe(3, [pod("a"), pod("b", deleting=True), pod("c", ready=False)])
    w.observe(4, [pod("a"), pod("c"), pod("d")])
    assert (w.lowest, w.lowest_at) == (1, 3)
    d = _section([], [], [w, PdbWatch("online", "idle", {"app": "idle"}, 1)])
    assert [(p.pdb, p.min_available, p.lowest_available, p.held) for p in d.pdbs] == [
        ("online/idle", 1, None, True), ("online/web", 2, 1, False)]
    assert not d.pdbs_held


def test_the_descheduler_section_text_json_and_plot_panel(tmp_path: Path) -> None:
    jobs = [_job("job-a", "web-a", 42, node="node-1", bound="web-a2", ended=46,
                 message='Bind Pod "online/web-a2" in Reservation "r-1"')]
    watch = PdbWatch("online", "web", {"app": "web"}, 10, up=True, lowest=11, lowest_at=43)
    r = build("hotspot", 2, 150.0, 60.0, SAMPLES, [], [], 12, 0, epoch=EPOCH)
    r.descheduler = _section(jobs, [_evicting("job-a", 43)], [watch])
    lines = render_text(r).splitlines()
    at = lines.index("Descheduler (koord-descheduler, leader koord-descheduler-1; LowNodeLoad on "
                     "NodeMetrics: cpu low 45 % / high 75 %, memory low 55 % / high 80 %)")
    assert lines[at + 1:at + 8] == [
        "PodMigrationJobs: 1 (Succeeded 1)",
        '  job-a  online/web-a  node-0 -> node-1 as web-a2  Succeeded  t=42 s, took 4 s  '
        '(Bind Pod "online/web-a2" in Reservation "r-1")',
        "No workload dropped below its PDB: yes",
        "  online/web: minAvailable 10, fewest available 11 at t=43 s",
        "Node usage, % of allocatable (NodeMetric; ^ above high, v under low): before t=42 s "
        "(the first job), after t=60 s",
        "  node       cpu before   after    peak  mem before   after",
        "  node-0          82.5^    68.8    82.5       25.0v   25.0v"]
    assert lines[at + 8].split() == ["node-1", "3.8v", "17.5v", "17.5", "25.0v", "25.0v"]
    report = json.loads(json.dumps(r.to_json()))
    assert report["descheduler"]["jobs"][0]["to_node"] == "node-1"
    assert report["descheduler"]["pdbs"][0]["lowest_available"] == 11
    png = tmp_path / "utilisation.png"
    render_png(r, SAMPLES, png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_without_jobs_the_section_says_so_and_the_plot_keeps_its_panels() -> None:
    r = build("colo", 2, 60.0, 60.0, SAMPLES, [], [], 0, 0, epoch=EPOCH)
    r.descheduler = _section([], [])
    text = render_text(r)
    assert "PodMigrationJobs: 0\n" in text
    assert "No workload dropped below its PDB" not in text  # no PDB, nothing to confirm
    assert "before t=0 s, after t=60 s" in text
