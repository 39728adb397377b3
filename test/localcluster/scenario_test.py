"""Scenario files: the shipped ones load, counts scale with nodes, bad files name the field, and
the pods the workload builds say what the scenario says (koordlet's simulated collector reads
their usage curves back)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from api.core import quantity_value
from api.extension.coscheduling import LABEL_POD_GROUP
from koordlet.metricsadvisor.simulated import ANNOTATION_USAGE, parse_usage
from pkg.util.testdata import upstream_data_dir
from test.apiserver.nodes import RUN_DURATION
from test.e2e.cluster import chart_objects
from test.localcluster import bootstrap
from test.localcluster.scenario import (
    DEFAULT_SCENARIO,
    SCENARIO_DIR,
    ScenarioError,
    load,
    scenario_path,
)
from test.localcluster.workload import (
    GANG,
    LABEL_KIND,
    QUOTA,
    ROLLOUT,
    Workload,
    batch_pod,
    deployment,
    gang_pod,
    online_pod,
    pod_disruption_budget,
    pod_group,
    quota_pod,
    reservation,
    wave_times,
)


@pytest.mark.parametrize("path", sorted(SCENARIO_DIR.glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_scenarios_load(path: Path) -> None:
    s = load(path)
    assert s.pod_count() > 0 and s.nodes.count >= 1


def test_default_scenario_is_40_pods_per_node_two_gang_jobs_and_a_rollout() -> None:
    s = load(DEFAULT_SCENARIO)
    assert (s.nodes.count, s.pod_count()) == (5, 200 + 10 + 3 + 7)
    s.nodes.count = 50
    assert s.pod_count() == 2000 + 10 + 3 + 7  # gangs and rollouts do not scale with nodes


@pytest.mark.parametrize(("doc", "message"), [
    ("name: [unclosed", "scenario"),
    ("- a list", "want a YAML mapping"),
    ("name: x\nonline: [{name: web, replicasPerNode: 1, requests: {cpu: '1', memory: 1Gi},"
     " cpuUsage: {base: 1, peak: lots}, memoryUsage: {base: 1Gi, peak: 1Gi}}]",
     "online.0.cpuUsage.peak: Value error, 'lots' is not a quantity"),
    ("name: x\nbatch: [{name: j, waves: 0, podsPerNodePerWave: 1, requests: {cpu: '1', "
     "memory: 1Gi}, usage: {cpu: '1', memory: 1Gi}, runSeconds: 5}]", "batch.0.waves"),
    ("name: x\nnodez: {count: 3}", "nodez: Extra inputs are not permitted"),
    ("name: x\ngangs: [{name: g, workers: 2, minMember: 3, requests: {cpu: '1', memory: 1Gi},"
     " runSeconds: 5}]", "gangs.0: Value error, minMember 3 is more than workers 2"),
    ("name: x\nquotas: [{name: a, min: {cpu: 1, memory: 1Gi}, max: {cpu: 1, memory: 1Gi}}]\n"
     "quotaJobs: [{name: j, namespace: b, pods: 1, requests: {cpu: 1, memory: 1Gi}, "
     "runSeconds: 5}]", "quota job j: no quota named like its namespace 'b'"),
    ("name: x\nrollouts: [{name: r, replicas: 1, requests: {cpu: 1, memory: 1Gi}, cpuUsage: "
     "{base: 1, peak: 1}, memoryUsage: {base: 1Gi, peak: 1Gi}, reserveAtFraction: 0.5, "
     "rolloutAtFraction: 0.2}]",
     "rollouts.0: Value error, rolloutAtFraction 0.2 must come after reserveAtFraction 0.5"),
    ("name: x\nquotas: [{name: a, parent: p, min: {cpu: 1, memory: 1Gi}, "
     "max: {cpu: 1, memory: 1Gi}}]", "quota a: parent 'p' is no quota here with isParent"),
    ("name: x\nonline: [{name: web, replicas: 2, minAvailable: 1, requests: {cpu: 1, memory: "
     "1Gi}, cpuUsage: {base: 1, peak: 1}, memoryUsage: {base: 1Gi, peak: 1Gi}}]",
     "online.0: Value error, replicas, minAvailable: only for a service with deployment: true"),
    ("name: x\nonline: [{name: web, deployment: true, replicas: 2, minAvailable: 3, requests: "
     "{cpu: 1, memory: 1Gi}, cpuUsage: {base: 1, peak: 1}, memoryUsage: {base: 1Gi, peak: "
     "1Gi}}]", "online.0: Value error, minAvailable 3 is more than replicas 2"),
    ("name: x\nnodes: {count: 2}\nonline: [{name: web, deployment: true, placeOn: [node-2], "
     "requests: {cpu: 1, memory: 1Gi}, cpuUsage: {base: 1, peak: 1}, memoryUsage: {base: 1Gi, "
     "peak: 1Gi}}]", "online service web: placeOn ['node-2'] are no nodes here (node-0..node-1)"),
])
def test_bad_scenario_names_the_field(tmp_path: Path, doc: str, message: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(doc)
    with pytest.raises(ScenarioError) as e:
        load(path)
    assert str(path) in str(e.value)
    assert message in str(e.value)


def test_online_pod_carries_a_diurnal_curve_koordlet_reads_back() -> None:
    s = load(DEFAULT_SCENARIO)
    web = s.online[0]
    epoch = 1_000_000.0
    pod = online_pod(web, "web-0", s.day_length_seconds, epoch)
    cpu, memory = parse_usage(pod["metadata"]["annotations"][ANNOTATION_USAGE])
    day = s.day_length_seconds
    assert cpu.at(epoch) == pytest.approx(0.4)  # night at the start of the day
    assert cpu.at(epoch + day / 2) == pytest.approx(2.6)  # peak at midday
    assert memory.at(epoch + day / 2) == pytest.approx(4608 * 2**20)
    assert pod["spec"]["priorityClassName"] == "koord-prod"
    assert pod["spec"]["schedulerName"] == "koord-scheduler"
    assert pod["metadata"]["labels"]["koordinator.sh/qosClass"] == "LS"


def test_batch_pod_is_selected_by_upstreams_colocation_profile() -> None:
    s = load(DEFAULT_SCENARIO)
    job = s.batch[0]
    pod = batch_pod(job, "spark-etl-w0-0")
    docs = list(yaml.safe_load_all((upstream_data_dir() / bootstrap.PROFILE_FILE).read_text()))
    profile = next(d for d in docs if d["kind"] == "ClusterColocationProfile")
    namespace = next(d for d in docs if d["kind"] == "Namespace")
    assert pod["metadata"]["namespace"] == namespace["metadata"]["name"]
    for k, v in profile["spec"]["selector"]["matchLabels"].items():
        assert pod["metadata"]["labels"][k] == v
    assert pod["metadata"]["annotations"][RUN_DURATION] == "25s"
    assert json.loads(pod["metadata"]["annotations"][ANNOTATION_USAGE]) == {
        "cpu": "900m", "memory": "1536Mi"}


def test_waves_spread_from_the_first_wave_to_the_end_of_the_day() -> None:
    job = load(DEFAULT_SCENARIO).batch[0]
    assert wave_times(job, 180) == pytest.approx([18, 45, 72, 99, 126, 153])


def test_slo_controller_config_is_the_charts_with_the_scenarios_keys_merged() -> None:
    chart = chart_objects()
    objects = bootstrap.with_scenario_config(chart, load(DEFAULT_SCENARIO))
    cm = next(o for o in objects if o["kind"] == "ConfigMap"
              and o["metadata"]["name"] == "slo-controller-config")
    assert cm["metadata"] == {"name": "slo-controller-config",
                              "namespace": "koordinator-system"}
    colocation = json.loads(cm["data"]["colocation-config"])
    assert colocation["enable"] is True  # the chart's
    assert colocation["metricReportIntervalSeconds"] == 30  # the scenario's
    threshold = json.loads(cm["data"]["resource-threshold-config"])
    assert threshold["clusterStrategy"] == {"enable": True, "cpuSuppressThresholdPercent": 65,
                                            "cpuSuppressPolicy": "cfsQuota",
                                            "memoryEvictThresholdPercent": 52}
    # Memory QoS (a key the chart lacks) for the koordlets' CgroupReconcile.
    qos = json.loads(cm["data"]["resource-qos-config"])["clusterStrategy"]
    assert qos["lsClass"]["memoryQOS"]["enable"] and qos["beClass"]["memoryQOS"]["enable"]
    assert "CgroupReconcile=true" in load(DEFAULT_SCENARIO).koordlet_args[0]
    # The chart's own objects are left as they were.
    original = next(o for o in chart if o["kind"] == "ConfigMap"
                    and o["metadata"]["name"] == "slo-controller-config")
    assert "metricReportIntervalSeconds" not in original["data"]["colocation-config"]
    # koord-scheduler's --config is the chart's koord-scheduler-config.
    assert "kind: KubeSchedulerConfiguration" in bootstrap.scheduler_config_text(objects)


def test_default_gang_jobs_one_fits_the_cores_online_pods_leave_and_one_does_not() -> None:
    s = load(DEFAULT_SCENARIO)
    n = s.nodes.count
    free = n * quantity_value(s.nodes.cpu) - sum(
        svc.replicas_per_node * n * quantity_value(svc.requests.cpu) for svc in s.online)
    small, large = s.gangs
    assert small.workers * quantity_value(small.requests.cpu) <= free
    assert large.workers * quantity_value(large.requests.cpu) > free
    # ... although most of its workers would find a node one by one.
    assert quantity_value(large.requests.cpu) <= free / n


def test_a_gang_job_is_a_pod_group_and_workers_koord_scheduler_binds_together() -> None:
    job = load(DEFAULT_SCENARIO).gangs[1]
    pg = pod_group(job)
    assert pg["kind"] == "PodGroup" and pg["apiVersion"] == "scheduling.sigs.k8s.io/v1alpha1"
    assert pg["metadata"]["namespace"] == "training"
    assert pg["spec"] == {"minMember": 6, "scheduleTimeoutSeconds": 30}
    pod = gang_pod(job, 5)
    assert pod["metadata"]["name"] == "train-large-worker-5"
    assert pod["metadata"]["labels"][LABEL_POD_GROUP] == "train-large"
    assert pod["metadata"]["labels"][LABEL_KIND] == GANG
    assert pod["spec"]["schedulerName"] == "koord-scheduler"
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "6",
                                                                     "memory": "4Gi"}
    assert pod["metadata"]["annotations"][RUN_DURATION] == "40s"


def test_the_charts_scheduler_profile_runs_coscheduling() -> None:
    config = yaml.safe_load(bootstrap.scheduler_config_text(chart_objects()))
    plugins = config["profiles"][0]["plugins"]
    for point in ("preEnqueue", "preFilter", "postFilter", "permit", "reserve", "preBind",
                  "postBind"):
        assert "Coscheduling" in [p["name"] for p in plugins[point]["enabled"]], point


QUOTA_SCENARIO = SCENARIO_DIR / "quota.yaml"


def _cores(q: str) -> float:
    return float(quantity_value(q))


def test_quota_scenario_team_a_must_borrow_and_give_back_team_bs_min() -> None:
    s = load(QUOTA_SCENARIO)
    quotas = {q.name: q for q in s.quotas}
    parent, a, b = quotas["teams"], quotas["team-a"], quotas["team-b"]
    assert parent.is_parent and a.parent == b.parent == "teams"
    # What the quota webhook checks: the children's min fits the parent's.
    for res in ("cpu", "memory"):
        assert (quantity_value(getattr(a.min, res)) + quantity_value(getattr(b.min, res))
                <= quantity_value(getattr(parent.min, res)))
    cluster_cpu = s.nodes.count * _cores(s.nodes.cpu)
    # The parent's max is the whole cluster: what team-a borrows, team-b can only get back.
    assert _cores(parent.max.cpu) == cluster_cpu
    jobs = {j.name: j for j in s.quota_jobs}
    burst, work, urgent = jobs["a-burst"], jobs["b-work"], jobs["a-urgent"]
    burst_cpu = burst.pods * _cores(burst.requests.cpu)
    assert _cores(a.min.cpu) < burst_cpu <= min(_cores(a.max.cpu), cluster_cpu)
    assert work.pods * _cores(work.requests.cpu) == _cores(b.min.cpu)
    assert burst.submit_at_fraction < work.submit_at_fraction < urgent.submit_at_fraction
    assert urgent.priority_class_name == "koord-prod" and not burst.priority_class_name
    # The pods run through the day: only revocation and preemption end them.
    assert min(j.run_seconds for j in s.quota_jobs) > s.day_length_seconds


def test_quota_objects_and_pods_say_what_the_scenario_says() -> None:
    s = load(QUOTA_SCENARIO)
    a = bootstrap.elastic_quota(next(q for q in s.quotas if q.name == "team-a"))
    assert a["metadata"]["namespace"] == "team-a"
    assert a["metadata"]["labels"] == {"quota.scheduling.koordinator.sh/parent": "teams",
                                       LABEL_KIND: QUOTA, "local-up.koordinator.sh/group":
                                       "team-a"}
    assert a["spec"] == {"min": {"cpu": "4", "memory": "8Gi"},
                         "max": {"cpu": "8", "memory": "16Gi"}}
    parent = bootstrap.elastic_quota(s.quotas[0])
    assert parent["metadata"]["labels"]["quota.scheduling.koordinator.sh/is-parent"] == "true"
    urgent = next(j for j in s.quota_jobs if j.name == "a-urgent")
    pod = quota_pod(urgent, "a-urgent-0")
    assert pod["metadata"]["namespace"] == "team-a"  # charged to quota team-a
    assert pod["spec"]["schedulerName"] == "koord-scheduler"
    assert pod["spec"]["priorityClassName"] == "koord-prod"
    assert pod["metadata"]["labels"][LABEL_KIND] == QUOTA
    burst = quota_pod(next(j for j in s.quota_jobs if j.name == "a-burst"), "a-burst-0")
    assert "priorityClassName" not in burst["spec"]


def test_chart_values_reach_koord_schedulers_config() -> None:
    config = yaml.safe_load(bootstrap.scheduler_config_text(bootstrap.render(
        load(QUOTA_SCENARIO))))
    args = {c["name"]: c["args"] for c in config["profiles"][0]["pluginConfig"]}
    assert args["ElasticQuota"]["monitorAllQuotas"] is True
    assert args["ElasticQuota"]["delayEvictTime"] == "5s"
    assert args["ElasticQuota"]["quotaGroupNamespace"] == "koordinator-system"  # the chart's
    assert args["LoadAwareScheduling"]["usageThresholds"] == {"cpu": 100, "memory": 100}
    default = yaml.safe_load(bootstrap.scheduler_config_text(bootstrap.render(
        load(DEFAULT_SCENARIO))))
    default_args = {c["name"]: c["args"] for c in default["profiles"][0]["pluginConfig"]}
    assert "monitorAllQuotas" not in default_args["ElasticQuota"]


def test_a_rollouts_reservations_are_owned_by_its_pods_and_created_before_them() -> None:
    """The Reservation an upstream user would write for a rollout, and the order of
    submission: Reservations, then the backfill, then the rollout's pods."""
    s = load(DEFAULT_SCENARIO)
    (ro,) = s.rollouts
    day = s.day_length_seconds
    r = reservation(ro, 1, day)
    assert r["metadata"]["name"] == "checkout-1"
    assert r["spec"]["owners"] == [{"labelSelector": {"matchLabels": {"app": "checkout"}}}]
    assert r["spec"]["allocateOnce"] is True and r["spec"]["ttl"] == f"{2 * day:g}s"
    (container,) = r["spec"]["template"]["spec"]["containers"]
    assert container["resources"]["requests"] == {"cpu": "3", "memory": "4Gi"}
    assert r["spec"]["template"]["spec"]["schedulerName"] == "koord-scheduler"
    w = Workload(client=None, scenario=s, epoch=0.0)  # type: ignore[arg-type]  # no API calls
    try:
        assert w.reservations_due == [(ro.reserve_at_fraction * day, ro)]
        slots = [x for x in w.slots if x.group == "checkout"]
        rollout = [x for x in slots if x.kind == ROLLOUT]
        backfill = [x for x in slots if x.kind != ROLLOUT]
        assert [x.name for x in rollout] == ["checkout-0", "checkout-1", "checkout-2"]
        assert len(backfill) == 7
        assert ro.reserve_at_fraction * day < backfill[0].submit_at < rollout[0].submit_at
    finally:
        w.close()
    # Its pods carry the label the Reservations' owners select.
    pod = online_pod(ro.service(), "checkout-0", day, 0.0, kind=ROLLOUT)
    assert pod["metadata"]["labels"]["app"] == "checkout"
    assert pod["metadata"]["labels"][LABEL_KIND] == ROLLOUT


def test_hotspot_service_is_a_pinned_deployment_with_a_pdb_its_replica_set_replaces() -> None:
    s = load(scenario_path("hotspot", Path("/nonexistent")))
    [svc] = s.online
    assert (s.nodes.count, s.pod_count(), svc.place_on) == (4, 12, ["node-0", "node-1"])
    d = deployment(svc, s.nodes.count, s.day_length_seconds, 1000.0)
    assert (d["kind"], d["spec"]["replicas"]) == ("Deployment", 12)
    template = d["spec"]["template"]
    assert d["spec"]["selector"]["matchLabels"].items() <= template["metadata"]["labels"].items()
    assert "name" not in template["metadata"]  # the ReplicaSet names its pods
    assert template["spec"]["priorityClassName"] == "koord-prod"
    cpu, _ = parse_usage(template["metadata"]["annotations"][ANNOTATION_USAGE])
    assert cpu.at(1000.0) == cpu.at(1100.0) == pytest.approx(1.05)  # constant load
    pdb = pod_disruption_budget(svc)
    assert pdb["spec"] == {"minAvailable": 10, "selector": d["spec"]["selector"]}
    # The Workload creates no pod of a Deployment service itself.
    assert Workload(None, s, 0.0).slots == []  # type: ignore[arg-type]
    assert scenario_path("quota.yaml", SCENARIO_DIR) == SCENARIO_DIR / "quota.yaml"


def test_hotspot_chart_values_reach_koord_deschedulers_config() -> None:
    config = bootstrap.descheduler_config(bootstrap.render(load(SCENARIO_DIR / "hotspot.yaml")))
    args = {c["name"]: c["args"] for c in config["profiles"][0]["pluginConfig"]}
    assert args["LowNodeLoad"]["anomalyCondition"] == {"consecutiveAbnormalities": 2}
    assert args["LowNodeLoad"]["highThresholds"] == {"cpu": 75, "memory": 80}  # the chart's
    assert args["MigrationController"]["objectLimiters"]["workload"]["burst"] == 2
    default = bootstrap.descheduler_config(bootstrap.render(load(DEFAULT_SCENARIO)))
    assert default["deschedulingInterval"] == "10s"
    assert {"name": "LowNodeLoad"} in default["profiles"][0]["plugins"]["balance"]["enabled"]
