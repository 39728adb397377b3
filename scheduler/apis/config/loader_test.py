"""load_scheduler_config: upstream's shipped configuration, its v1beta2/v1beta3 forms, several
profiles, and an error naming the field for each kind of mistake."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pkg.util.testdata import upstream_data_dir
from scheduler.apis.config import (
    V1BETA2,
    V1BETA3,
    ElasticQuotaArgs,
    KubeSchedulerConfiguration,
    LoadAwareSchedulingArgs,
    NodeResourcesFitArgs,
    SchedulerConfigError,
    expand_profile_plugins,
    load_scheduler_config,
)
from scheduler.apis.config.testing import implements

SHIPPED = "config/manager/scheduler-config.yaml"


def shipped_text() -> str:
    configmap = yaml.safe_load((upstream_data_dir() / SHIPPED).read_text())
    return configmap["data"]["koord-scheduler-config"]


def load_shipped(text: str | None = None) -> KubeSchedulerConfiguration:
    return load_scheduler_config(text or shipped_text(), source=SHIPPED)


def names(refs: list[Any]) -> list[str]:
    return [ref.name for ref in refs]


def contains(expected: Any, actual: Any, where: str = "") -> list[str]:
    """Where ``actual`` lacks what ``expected`` has: mapping keys, list items (a prefix)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        return [d for k, v in expected.items()
                for d in ([f"{where}.{k}: missing"] if k not in actual
                          else contains(v, actual[k], f"{where}.{k}"))]
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) <= len(actual):
        return [d for i, v in enumerate(expected) for d in contains(v, actual[i], f"{where}[{i}]")]
    return [] if expected == actual else [f"{where}: {expected!r} became {actual!r}"]


# --- the shipped configuration -------------------------------------------------------------


def test_shipped_config_loads_with_every_value_visible() -> None:
    config = load_shipped()
    assert contains(yaml.safe_load(shipped_text()), config.to_dict()) == []
    assert config.leader_election.resource_name == "koord-scheduler"
    assert config.leader_election.resource_namespace == "koordinator-system"
    assert config.leader_election.lease_duration == 15.0
    assert (config.parallelism, config.percentage_of_nodes_to_score) == (16, 0)
    assert (config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds) == (1, 10)
    assert [p.scheduler_name for p in config.profiles] == ["koord-scheduler"]


def test_shipped_node_resources_fit_weights_batch_resources() -> None:
    args = load_shipped().profiles[0].plugin_args()["NodeResourcesFit"]
    assert isinstance(args, NodeResourcesFitArgs)
    assert args.scoring_strategy.type == "LeastAllocated"
    assert [(r.name, r.weight) for r in args.scoring_strategy.resources] == [
        ("cpu", 1), ("memory", 1), ("kubernetes.io/batch-cpu", 1),
        ("kubernetes.io/batch-memory", 1)]


def test_shipped_load_aware_args_with_defaults_filled_in() -> None:
    args = load_shipped().profiles[0].plugin_args()["LoadAwareScheduling"]
    assert isinstance(args, LoadAwareSchedulingArgs)
    assert args.filter_expired_node_metrics is False
    assert args.node_metric_expiration_seconds == 300
    assert args.resource_weights == {"cpu": 1, "memory": 1}
    assert args.usage_thresholds == {"cpu": 0, "memory": 0}
    assert args.estimated_scaling_factors == {"cpu": 85, "memory": 70}
    assert args.enable_schedule_when_node_metrics_expired is False
    assert args.prod_usage_thresholds == {}
    assert args.aggregated is None
    assert (args.api_version, args.kind) == ("kubescheduler.config.k8s.io/v1",
                                             "LoadAwareSchedulingArgs")


def test_shipped_elastic_quota_args_with_defaults() -> None:
    args = load_shipped().profiles[0].plugin_args()["ElasticQuota"]
    assert isinstance(args, ElasticQuotaArgs)
    assert args.quota_group_namespace == "koordinator-system"
    assert (args.delay_evict_time, args.revoke_pod_interval) == (120.0, 1.0)
    assert args.default_quota_group_max == {"cpu": "1844674407370955161",
                                            "memory": "1844674407370955161"}
    assert args.enable_runtime_quota and args.enable_min_quota_scale
    assert args.disable_default_quota_preemption and not args.monitor_all_quotas


def test_shipped_plugins_get_default_args_when_not_configured() -> None:
    args = load_shipped().profiles[0].plugin_args()
    assert {"Coscheduling", "DeviceShare", "NodeNUMAResource", "Reservation", "SchedulingHint",
            "DefaultPreemption", "InterPodAffinity", "PodTopologySpread"} <= set(args)
    assert args["Coscheduling"].default_timeout == 600.0
    assert args["SchedulingHint"].max_hint_nodes == 100
    # Plugins without an args kind get none.
    assert "PrioritySort" not in args and "DefaultPreBind" not in args


def test_shipped_plugin_lists_after_merge_and_expansion() -> None:
    plugins = expand_profile_plugins(load_shipped().profiles[0], implements)
    assert names(plugins["queueSort"]) == ["PrioritySort"]
    assert names(plugins["postFilter"]) == ["Reservation", "Coscheduling", "ElasticQuota",
                                            "DefaultPreemption"]
    assert names(plugins["bind"]) == ["Reservation", "DefaultBinder"]
    assert names(plugins["permit"]) == ["Coscheduling"]
    assert names(plugins["preEnqueue"])[0] == "SchedulingGates"
    assert names(plugins["preEnqueue"])[-1] == "Coscheduling"
    filters = names(plugins["filter"])
    assert filters[:4] == ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity"]
    assert filters[-4:] == ["LoadAwareScheduling", "NodeNUMAResource", "DeviceShare",
                            "Reservation"]
    weights = dict(plugins["score"])
    assert weights["Reservation"] == 5000
    assert (weights["TaintToleration"], weights["NodeAffinity"], weights["LoadAwareScheduling"]
            ) == (3, 2, 1)


def test_shipped_config_loads_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "koord-scheduler-config.yaml"
    path.write_text(shipped_text())
    assert load_scheduler_config(path) == load_shipped()
    assert load_scheduler_config(str(path)).profiles[0].scheduler_name == "koord-scheduler"


def as_version(text: str, version: str) -> str:
    return text.replace("kubescheduler.config.k8s.io/v1\n", f"{version}\n")


def test_v1beta3_equivalent_merges_like_v1() -> None:
    config = load_shipped(as_version(shipped_text(), V1BETA3))
    assert config.api_version == V1BETA3
    v1 = load_shipped().profiles[0]
    assert expand_profile_plugins(config.profiles[0], implements) == expand_profile_plugins(
        v1, implements)
    assert config.profiles[0].plugin_args()["LoadAwareScheduling"].api_version == V1BETA3


def test_v1beta2_equivalent_merges_per_point_defaults() -> None:
    config = load_shipped(as_version(shipped_text(), V1BETA2))
    plugins = config.profiles[0].plugins
    assert plugins is not None
    assert names(plugins.filter.enabled) == [
        "NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts",
        "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding",
        "VolumeZone", "PodTopologySpread", "InterPodAffinity", "LoadAwareScheduling",
        "NodeNUMAResource", "DeviceShare", "Reservation"]
    assert names(plugins.queue_sort.enabled) == ["PrioritySort"]
    assert names(plugins.bind.enabled) == ["Reservation", "DefaultBinder"]
    assert names(plugins.pre_enqueue.enabled) == ["SchedulingGates", "Coscheduling"]
    assert plugins.multi_point.enabled == [] and plugins.bind.disabled == []
    score = expand_profile_plugins(config.profiles[0], implements)["score"]
    assert dict(score)["Reservation"] == 5000 and dict(score)["PodTopologySpread"] == 2
    assert names(score)[:2] == ["NodeResourcesBalancedAllocation", "ImageLocality"]


# --- other valid files ---------------------------------------------------------------------

MINIMAL = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def test_empty_configuration_gets_the_default_profile() -> None:
    config = load_scheduler_config(MINIMAL)
    assert [p.scheduler_name for p in config.profiles] == ["default-scheduler"]
    assert config.leader_election.resource_name == "kube-scheduler"
    assert config.leader_election.resource_namespace == "kube-system"
    assert (config.client_connection.qps, config.client_connection.burst) == (50.0, 100)
    plugins = expand_profile_plugins(config.profiles[0], implements)
    assert names(plugins["bind"]) == ["DefaultBinder"]
    assert names(plugins["postFilter"]) == ["DynamicResources", "DefaultPreemption"]


def test_several_profiles_share_the_queue_sort() -> None:
    config = load_scheduler_config(MINIMAL + """
profiles:
- schedulerName: default-scheduler
- schedulerName: koord-scheduler
  plugins:
    score:
      enabled: [{name: LoadAwareScheduling, weight: 3}]
""")
    assert [p.scheduler_name for p in config.profiles] == ["default-scheduler", "koord-scheduler"]
    koord = config.profile("koord-scheduler")
    assert koord is not None and isinstance(koord.plugin_args()["LoadAwareScheduling"],
                                            LoadAwareSchedulingArgs)
    assert "LoadAwareScheduling" not in config.profiles[0].plugin_args()


def test_null_leaves_the_default_and_extenders_are_kept() -> None:
    config = load_scheduler_config(MINIMAL + """
parallelism: null
extenders:
- urlPrefix: http://extender:8888
  prioritizeVerb: prioritize
  weight: 2
  httpTimeout: 5s
""")
    assert config.parallelism == 16
    assert config.extenders[0].url_prefix == "http://extender:8888"
    assert config.extenders[0].http_timeout == 5.0


def test_args_of_unknown_plugins_stay_raw() -> None:
    config = load_scheduler_config(MINIMAL + """
profiles:
- pluginConfig:
  - name: MyPlugin
    args: {kind: LoadAwareSchedulingArgs, anything: [1, 2]}
""")
    assert config.profiles[0].plugin_args()["MyPlugin"] == {
        "kind": "LoadAwareSchedulingArgs", "anything": [1, 2]}


# --- errors --------------------------------------------------------------------------------


def error_of(text: str) -> str:
    with pytest.raises(SchedulerConfigError) as info:
        load_scheduler_config(text, source="test.yaml")
    return str(info.value)


def shipped_with(edit: Any) -> str:
    """The shipped configuration after ``edit(data)``, as YAML."""
    data = yaml.safe_load(shipped_text())
    edit(data)
    return yaml.safe_dump(data)


def shipped_args(data: dict[str, Any], index: int) -> dict[str, Any]:
    return data["profiles"][0]["pluginConfig"][index]["args"]


def test_error_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(MINIMAL + "parallelism: 0\n")
    with pytest.raises(SchedulerConfigError, match=r"bad\.yaml: parallelism: must be greater "
                                                   r"than zero, got 0"):
        load_scheduler_config(path)
    with pytest.raises(SchedulerConfigError, match="missing.yaml: cannot read the file"):
        load_scheduler_config(tmp_path / "missing.yaml")


def test_usage_threshold_over_100() -> None:
    message = error_of(shipped_with(
        lambda data: shipped_args(data, 1)["usageThresholds"].update(cpu=120)))
    assert message == ("test.yaml: profiles[0].pluginConfig[1].args.usageThresholds.cpu: "
                       "must be in 0..100, got 120")


def test_bad_score_resource_weight() -> None:
    message = error_of(shipped_with(
        lambda data: shipped_args(data, 0)["scoringStrategy"]["resources"][2].update(weight=101)))
    assert message == ("test.yaml: profiles[0].pluginConfig[0].args.scoringStrategy."
                       "resources[2].weight: must be in 1..100, got 101")


def test_bad_plugin_weight_type() -> None:
    message = error_of(shipped_with(
        lambda data: data["profiles"][0]["plugins"]["score"]["enabled"][3].update(weight="heavy")))
    assert "profiles[0].plugins.score.enabled[3].weight: Input should be a valid integer" in message


def test_unknown_fields_anywhere() -> None:
    message = error_of(MINIMAL + """
parallelizm: 4
leaderElection: {leaderElect: true, leaseDurationSeconds: 15}
podMaxInUnschedulablePodsDuration: 5m
profiles:
- schedulerName: s
  plugins:
    filter: {enabled: [{name: NodeName, weigth: 1}]}
  pluginConfig:
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms: [{matchExpressions: [{key: a, operator: Exists, value: x}]}]
  - name: LoadAwareScheduling
    args: {filter_expired_node_metrics: false}
""")
    for path in ("parallelizm", "leaderElection.leaseDurationSeconds",
                 "podMaxInUnschedulablePodsDuration",
                 "profiles[0].plugins.filter.enabled[0].weigth",
                 "profiles[0].pluginConfig[0].args.addedAffinity.requiredDuringScheduling"
                 "IgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].value",
                 "profiles[0].pluginConfig[1].args.filter_expired_node_metrics"):
        assert f"{path}: unknown field" in message


def test_fields_of_other_versions_are_unknown() -> None:
    v1beta2 = MINIMAL.replace("/v1\n", "/v1beta2\n")
    assert "profiles[0].plugins.multiPoint: unknown field (not in kubescheduler.config.k8s.io/" \
           "v1beta2)" in error_of(v1beta2 + "profiles: [{plugins: {multiPoint: {}}}]")
    assert "healthzBindAddress: unknown field" in error_of(MINIMAL + "healthzBindAddress: ':0'")
    assert load_scheduler_config(v1beta2 + "healthzBindAddress: '0.0.0.0:0'\n"
                                 ).healthz_bind_address == "0.0.0.0:0"


def test_args_kind_must_match_the_plugin() -> None:
    message = error_of(shipped_with(lambda data: shipped_args(data, 2).update(
        kind="CoschedulingArgs")))
    assert ("profiles[0].pluginConfig[2].args.kind: args for plugin ElasticQuota must be of kind "
            "ElasticQuotaArgs, got 'CoschedulingArgs'") in message


def test_args_api_version_must_be_the_scheduler_group() -> None:
    message = error_of(shipped_with(lambda data: shipped_args(data, 2).update(
        apiVersion="config.koordinator.sh/v1")))
    assert "profiles[0].pluginConfig[2].args.apiVersion: unsupported value" in message


def test_duplicate_scheduler_name() -> None:
    message = error_of(MINIMAL + "profiles: [{schedulerName: a}, {schedulerName: a}]")
    assert "profiles[1].schedulerName: duplicate value 'a' (also profiles[0])" in message


def test_several_profiles_need_names() -> None:
    assert "profiles[1].schedulerName: required" in error_of(
        MINIMAL + "profiles: [{schedulerName: a}, {}]")


def test_duplicate_plugin_config() -> None:
    message = error_of(shipped_with(lambda data: data["profiles"][0]["pluginConfig"].append(
        {"name": "LoadAwareScheduling"})))
    assert message == ("test.yaml: profiles[0].pluginConfig[3].name: duplicate value "
                       "'LoadAwareScheduling' (also pluginConfig[1])")


def test_queue_sort_must_match_across_profiles() -> None:
    message = error_of(MINIMAL + """
profiles:
- schedulerName: a
- schedulerName: b
  plugins: {queueSort: {enabled: [{name: Other}], disabled: [{name: "*"}]}}
""")
    assert "profiles[1].plugins.queueSort: must be the same for all profiles" in message


def test_malformed_yaml() -> None:
    message = error_of(MINIMAL + "profiles:\n  - schedulerName: [a\n")
    assert message.startswith("test.yaml: malformed YAML: ")
    assert "line 5" in message


def test_duplicate_yaml_key() -> None:
    message = error_of(MINIMAL + "parallelism: 4\nparallelism: 8\n")
    assert "mapping key 'parallelism' already defined at line 3" in message


@pytest.mark.parametrize(("text", "expected"), [
    ("- a\n- b\n", "expected a KubeSchedulerConfiguration object (a mapping), got list"),
    ("kind: KubeSchedulerConfiguration\n", "apiVersion: required"),
    (MINIMAL.replace("/v1\n", "/v2\n"), "apiVersion: unsupported value"),
    (MINIMAL.replace("KubeSchedulerConfiguration", "KubeProxyConfiguration"),
     "kind: must be KubeSchedulerConfiguration, got 'KubeProxyConfiguration'"),
])
def test_wrong_object(text: str, expected: str) -> None:
    assert expected in error_of(text)


def test_durations_must_be_strings() -> None:
    message = error_of(MINIMAL + "leaderElection: {leaseDuration: 15}\n")
    assert "leaderElection.leaseDuration: must be a duration string such as '15s'" in message
