"""load_descheduler_config: upstream's shipped configuration, defaults, plugin merging, and
errors that name the file and the field."""

from __future__ import annotations

import pytest
import yaml

from descheduler.apis.config import (
    DeschedulerConfigError,
    DeschedulerConfiguration,
    LowNodeLoadArgs,
    MigrationControllerArgs,
    load_descheduler_config,
)
from descheduler.apis.config.args import PodLifeTimeArgs
from pkg.util.testdata import upstream_data_dir

SHIPPED = "config/manager/descheduler-config.yaml"
HEAD = "apiVersion: descheduler/v1alpha2\nkind: DeschedulerConfiguration\n"


def shipped_text() -> str:
    configmap = yaml.safe_load((upstream_data_dir() / SHIPPED).read_text())
    text = configmap["data"]["koord-descheduler-config"]
    assert isinstance(text, str)
    return text


def load(body: str = "") -> DeschedulerConfiguration:
    return load_descheduler_config(HEAD + body, source="test.yaml")


def error_of(body: str) -> str:
    with pytest.raises(DeschedulerConfigError) as info:
        load(body)
    assert info.value.source == "test.yaml"
    message = str(info.value)
    assert message.startswith("test.yaml: "), message
    return message


def enabled(config: DeschedulerConfiguration, point: str) -> list[str]:
    plugins = config.profiles[0].plugins
    assert plugins is not None
    return plugins.get(point).names()


def test_shipped_config_loads_unchanged() -> None:
    config = load_descheduler_config(shipped_text(), source=SHIPPED)
    assert config.descheduling_interval == 10.0
    assert config.dry_run is False
    assert (config.healthz_bind_address, config.metrics_bind_address) == ("0.0.0.0:10251",
                                                                          "0.0.0.0:10251")
    le = config.leader_election
    assert (le.resource_lock, le.resource_name, le.resource_namespace) == (
        "leases", "koord-descheduler", "koordinator-system")
    [profile] = config.profiles
    assert profile.name == "koord-descheduler"
    # LowNodeLoad has args but is enabled nowhere: it does not run.
    assert {p: enabled(config, p) for p in ("deschedule", "balance", "evict", "filter")} == {
        "deschedule": [], "balance": [], "evict": ["MigrationController"],
        "filter": ["MigrationController"]}
    args = profile.plugin_args()
    assert list(args) == ["MigrationController", "LowNodeLoad"]
    migration = args["MigrationController"]
    assert isinstance(migration, MigrationControllerArgs)
    assert migration.eviction_policy == "Eviction"
    assert migration.namespaces is not None
    assert migration.namespaces.exclude == ["kube-system", "koordinator-system"]
    assert (migration.evict_qps, migration.evict_qps_value(), migration.evict_burst) == (
        "10", 10.0, 1)
    # the defaults of what the file leaves out
    assert (migration.max_migrating_per_node, migration.default_job_mode,
            migration.default_job_ttl, migration.scheduler_names) == (
        2, "ReservationFirst", 300.0, ["koord-scheduler"])
    low = args["LowNodeLoad"]
    assert isinstance(low, LowNodeLoadArgs)
    assert (low.low_thresholds, low.high_thresholds) == ({"cpu": 45, "memory": 55},
                                                         {"cpu": 75, "memory": 80})
    assert low.use_deviation_thresholds is False
    assert low.resource_weights == {"cpu": 1, "memory": 1}


def test_empty_configuration_gets_upstreams_defaults() -> None:
    config = load()
    assert config.descheduling_interval == 0.0  # one pass, then stop
    assert config.dry_run is False
    assert (config.enable_profiling, config.enable_contention_profiling) == (True, True)
    assert config.healthz_bind_address == config.metrics_bind_address == "0.0.0.0:10251"
    le = config.leader_election
    assert (le.leader_elect, le.lease_duration, le.renew_deadline, le.retry_period) == (
        True, 15.0, 10.0, 2.0)
    assert (le.resource_lock, le.resource_name, le.resource_namespace) == (
        "leases", "koord-descheduler", "koordinator-system")
    cc = config.client_connection
    assert (cc.content_type, cc.qps, cc.burst) == ("application/vnd.kubernetes.protobuf",
                                                   50.0, 100)
    assert config.node_selector is None
    assert (config.max_no_of_pods_to_evict_per_node,
            config.max_no_of_pods_to_evict_per_namespace,
            config.max_no_of_pods_to_evict_total) == (None, None, None)
    [profile] = config.profiles
    assert profile.name == "koord-descheduler"
    assert profile.node_selector is None
    assert enabled(config, "evict") == enabled(config, "filter") == ["MigrationController"]
    assert enabled(config, "deschedule") == enabled(config, "balance") == []
    # default args for every enabled plugin with an args kind
    [pc] = profile.plugin_config
    assert pc.name == "MigrationController"
    assert pc.args == MigrationControllerArgs(api_version="descheduler/v1alpha2",
                                              kind="MigrationControllerArgs")


def test_top_level_settings_are_read() -> None:
    config = load("deschedulingInterval: 2m\ndryRun: true\nmaxNoOfPodsToEvictPerNode: 3\n"
                  "maxNoOfPodsToEvictPerNamespace: 4\nmaxNoOfPodsToEvictTotal: 5\n"
                  "nodeSelector: {matchLabels: {pool: a}}\nenableProfiling: false\n")
    assert (config.descheduling_interval, config.dry_run) == (120.0, True)
    assert (config.max_no_of_pods_to_evict_per_node, config.max_no_of_pods_to_evict_per_namespace,
            config.max_no_of_pods_to_evict_total) == (3, 4, 5)
    assert config.node_selector is not None
    assert config.node_selector.match_labels == {"pool": "a"}
    assert config.enable_contention_profiling is None


@pytest.mark.parametrize(("given", "effective"), [
    (":9000", "0.0.0.0:9000"),
    ("127.0.0.1", "127.0.0.1:10251"),
    ("::1", "[::1]:10251"),
    ("[::1]:8080", "[::1]:8080"),
    ("localhost:8080", "localhost:8080"),
])
def test_bind_addresses_are_completed(given: str, effective: str) -> None:
    config = load(f"healthzBindAddress: {given!r}\nmetricsBindAddress: {given!r}\n")
    assert config.healthz_bind_address == config.metrics_bind_address == effective


def test_bad_bind_address() -> None:
    assert "metricsBindAddress: must be a valid socket address (host:port)" in error_of(
        "metricsBindAddress: not-an-address\n")


def test_lone_unnamed_profile_is_named_and_several_need_names() -> None:
    assert load("profiles: [{}]\n").profiles[0].name == "koord-descheduler"
    message = error_of("profiles: [{name: a}, {}]\n")
    assert "profiles[1].name: required" in message
    assert "profiles[1].name: duplicate value 'a'" in error_of("profiles: [{name: a}, {name: a}]\n")


def test_merging_default_plugins() -> None:
    # a re-enabled default keeps its place; other enabled plugins follow in order
    config = load("profiles:\n- plugins:\n"
                  "    evict:\n      enabled: [{name: MigrationController}]\n"
                  "    filter:\n"
                  "      enabled: [{name: DefaultEvictor}, {name: MigrationController}]\n"
                  "    balance:\n      enabled: [{name: LowNodeLoad}, {name: RemoveDuplicates}]\n")
    assert enabled(config, "evict") == ["MigrationController"]
    assert enabled(config, "filter") == ["MigrationController", "DefaultEvictor"]
    assert enabled(config, "balance") == ["LowNodeLoad", "RemoveDuplicates"]
    # enabled plugins with an args kind get default args, after the configured ones, by name
    names = [pc.name for pc in config.profiles[0].plugin_config]
    assert names == ["DefaultEvictor", "LowNodeLoad", "MigrationController", "RemoveDuplicates"]
    assert isinstance(config.profiles[0].plugin_args()["LowNodeLoad"], LowNodeLoadArgs)


def test_disabling_defaults() -> None:
    config = load("profiles:\n- plugins:\n    evict:\n      disabled: [{name: '*'}]\n"
                  "      enabled: [{name: DefaultEvictor}]\n"
                  "    filter:\n      disabled: [{name: MigrationController}]\n")
    assert enabled(config, "evict") == ["DefaultEvictor"]
    assert enabled(config, "filter") == []
    # the merged sets keep only what is enabled
    plugins = config.profiles[0].plugins
    assert plugins is not None and plugins.evict.disabled == []


def test_enabling_the_shipped_low_node_load() -> None:
    # what upstream's commented-out balance section does when uncommented
    shipped = shipped_text()
    text = shipped.replace("    evict:\n", "    balance:\n      enabled:\n"
                           "        - name: LowNodeLoad\n    evict:\n", 1)
    assert text != shipped
    config = load_descheduler_config(text, source="x")
    assert enabled(config, "balance") == ["LowNodeLoad"]


def test_evict_needs_exactly_one_plugin() -> None:
    assert "profiles[0].plugins.evict.enabled: no evict plugin is enabled" in error_of(
        "profiles:\n- plugins:\n    evict:\n      disabled: [{name: '*'}]\n")
    assert "profiles[0].plugins.evict.enabled: only one evict plugin can be enabled" in \
        error_of("profiles:\n- plugins:\n    evict:\n      enabled: [{name: DefaultEvictor}]\n")


def test_unknown_plugin() -> None:
    message = error_of("profiles:\n- plugins:\n    balance:\n      enabled: [{name: Nope}]\n")
    assert "profiles[0].plugins.balance.enabled[0].name: unknown plugin 'Nope'" in message
    message = error_of("profiles:\n- pluginConfig:\n  - name: Nope\n    args: {a: 1}\n")
    assert "profiles[0].pluginConfig[0].name: unknown plugin 'Nope'" in message


def test_plugin_at_a_point_it_does_not_implement() -> None:
    message = error_of("profiles:\n- plugins:\n    deschedule:\n"
                       "      enabled: [{name: LowNodeLoad}]\n")
    assert "profiles[0].plugins.deschedule.enabled[0].name: LowNodeLoad does not implement " \
        "DeschedulePlugin" in message


def test_plugin_twice_at_a_point() -> None:
    message = error_of("profiles:\n- plugins:\n    balance:\n"
                       "      enabled: [{name: LowNodeLoad}, {name: LowNodeLoad}]\n")
    assert "profiles[0].plugins.balance.enabled[1].name: plugin 'LowNodeLoad' already " \
        "registered" in message


def test_args_of_wrapped_plugins_are_typed() -> None:
    config = load("profiles:\n- pluginConfig:\n  - name: PodLifeTime\n"
                  "    args: {maxPodLifeTimeSeconds: 86400}\n")
    args = config.profiles[0].plugin_args()["PodLifeTime"]
    assert isinstance(args, PodLifeTimeArgs) and args.max_pod_life_time_seconds == 86400
    assert "profiles[0].pluginConfig[0].args.maxPodLifeTimeSeconds: MaxPodLifeTimeSeconds " \
        "not set" in error_of("profiles:\n- pluginConfig:\n  - name: PodLifeTime\n    args: {}\n")


def test_duplicate_plugin_config() -> None:
    message = error_of("profiles:\n- pluginConfig:\n  - name: LowNodeLoad\n"
                       "  - name: LowNodeLoad\n")
    assert "profiles[0].pluginConfig[1].name: duplicate value 'LowNodeLoad'" in message


@pytest.mark.parametrize(("body", "field"), [
    ("deschedulingIntervl: 10s\n", "deschedulingIntervl"),
    ("leaderElection: {resourceNme: x}\n", "leaderElection.resourceNme"),
    ("profiles: [{name: a, plugin: {}}]\n", "profiles[0].plugin"),
    ("profiles: [{plugins: {balanc: {}}}]\n", "profiles[0].plugins.balanc"),
    ("profiles: [{plugins: {balance: {enabled: [{name: LowNodeLoad, weight: 1}]}}}]\n",
     "profiles[0].plugins.balance.enabled[0].weight"),
    ("profiles:\n- pluginConfig:\n  - name: LowNodeLoad\n    args: {lowThreshold: {cpu: 1}}\n",
     "profiles[0].pluginConfig[0].args.lowThreshold"),
    ("profiles:\n- pluginConfig:\n  - name: MigrationController\n"
     "    args: {objectLimiters: {workload: {durations: 1m}}}\n",
     "profiles[0].pluginConfig[0].args.objectLimiters.workload.durations"),
    ("nodeSelector: {matchLabel: {a: b}}\n", "nodeSelector.matchLabel"),
])
def test_unknown_fields_are_named(body: str, field: str) -> None:
    assert f"{field}: unknown field" in error_of(body)


def test_duplicate_field() -> None:
    message = error_of("dryRun: true\ndryRun: false\n")
    assert "mapping key 'dryRun' already defined at line 3" in message
    message = error_of("profiles:\n- pluginConfig:\n  - name: LowNodeLoad\n    args:\n"
                       "      paused: true\n      paused: false\n")
    assert "mapping key 'paused' already defined" in message


@pytest.mark.parametrize(("body", "expected"), [
    ("dryRun: 'yes'\n", "dryRun: Input should be a valid boolean"),
    ("deschedulingInterval: 10\n", "deschedulingInterval: must be a duration string"),
    ("maxNoOfPodsToEvictPerNode: -1\n", "maxNoOfPodsToEvictPerNode: Input should be greater"),
    ("profiles:\n- pluginConfig:\n  - name: LowNodeLoad\n    args: {lowThresholds: {cpu: x}}\n",
     "profiles[0].pluginConfig[0].args.lowThresholds.cpu: Input should be a valid number"),
])
def test_wrong_types_are_named(body: str, expected: str) -> None:
    assert expected in error_of(body)


def test_args_kind_and_version_must_match() -> None:
    message = error_of("profiles:\n- pluginConfig:\n  - name: LowNodeLoad\n"
                       "    args: {kind: MigrationControllerArgs}\n")
    assert "profiles[0].pluginConfig[0].args.kind: args for plugin LowNodeLoad must be of kind " \
        "LowNodeLoadArgs" in message
    message = error_of("profiles:\n- pluginConfig:\n  - name: LowNodeLoad\n"
                       "    args: {apiVersion: kubescheduler.config.k8s.io/v1}\n")
    assert "profiles[0].pluginConfig[0].args.apiVersion: must be descheduler/v1alpha2" in message


def test_bad_args_are_named() -> None:
    message = error_of("profiles:\n- pluginConfig:\n  - name: LowNodeLoad\n"
                       "    args: {lowThresholds: {cpu: 80}, highThresholds: {cpu: 70}}\n"
                       "  - name: MigrationController\n    args: {evictBurst: 0}\n")
    assert "profiles[0].pluginConfig[0].args.lowThresholds.cpu: must be less than or equal " \
        "to highThresholds.cpu (70), got 80" in message
    assert "profiles[0].pluginConfig[1].args.evictBurst: evictBurst must be greater than 0" \
        in message


def test_leader_election_is_validated() -> None:
    message = error_of("leaderElection: {leaseDuration: 5s}\n")
    assert "leaderElection.leaseDuration: must be greater than renewDeadline" in message


@pytest.mark.parametrize(("text", "expected"), [
    ("kind: DeschedulerConfiguration\n", "apiVersion: required"),
    ("apiVersion: descheduler/v1alpha1\nkind: DeschedulerConfiguration\n",
     "apiVersion: must be descheduler/v1alpha2, got 'descheduler/v1alpha1'"),
    ("apiVersion: descheduler/v1alpha2\nkind: KubeSchedulerConfiguration\n",
     "kind: must be DeschedulerConfiguration"),
    ("- a\n", "expected a DeschedulerConfiguration object (a mapping), got list"),
    ("a: [\n", "malformed YAML"),
])
def test_wrong_object(text: str, expected: str) -> None:
    with pytest.raises(DeschedulerConfigError, match="^cfg.yaml: .*" + expected.replace(
            "(", r"\(").replace(")", r"\)")):
        load_descheduler_config(text, source="cfg.yaml")


def test_null_leaves_the_default() -> None:
    config = load("deschedulingInterval: null\nprofiles:\n- name: x\n  plugins: null\n")
    assert config.descheduling_interval == 0.0
    assert enabled(config, "evict") == ["MigrationController"]
