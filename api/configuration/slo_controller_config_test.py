"""Parsing the whole slo-controller-config ConfigMap: defaults, upstream's fixture, error
messages that name the key, and keeping the last good value of a bad key."""

from __future__ import annotations

import json

import pytest
import yaml

from api.configuration import (
    SLOControllerConfig,
    parse_slo_controller_config,
    parse_slo_controller_config_lenient,
)
from api.configuration.slo_controller_config import KEY_PARSERS
from api.errors import MalformedValueError
from api.extension.codec import MAX_JSON_DEPTH
from pkg.util.testdata import upstream_data_dir

# slo-controller-config with every key set.
COMPLETE_EXAMPLE = {
    "colocation-config": """
        {"enable": true, "metricAggregateDurationSeconds": 300, "cpuReclaimThresholdPercent": 60,
         "memoryReclaimThresholdPercent": 65, "memoryCalculatePolicy": "usage",
         "nodeConfigs": [{"name": "pool-a", "nodeSelector": {"matchLabels": {"pool": "a"}},
                          "cpuReclaimThresholdPercent": 70}]}""",
    "resource-threshold-config": """
        {"clusterStrategy": {"enable": true, "cpuSuppressThresholdPercent": 65,
                             "cpuSuppressPolicy": "cpuset", "memoryEvictThresholdPercent": 70}}""",
    "resource-qos-config": """
        {"clusterStrategy": {"lsrClass": {"cpuQOS": {"enable": true, "groupIdentity": 2}},
                             "beClass": {"cpuQOS": {"enable": true, "groupIdentity": -1},
                                         "resctrlQOS": {"enable": true,
                                                        "catRangeEndPercent": 30}}}}""",
    "cpu-burst-config": """
        {"clusterStrategy": {"policy": "auto", "cpuBurstPercent": 1000,
                             "cfsQuotaBurstPercent": 300, "cfsQuotaBurstPeriodSeconds": -1,
                             "sharePoolThresholdPercent": 50}}""",
    "system-config": """
        {"clusterStrategy": {"minFreeKbytesFactor": 100, "watermarkScaleFactor": 150}}""",
    "host-application-config": """
        {"applications": [{"name": "log-collector", "priority": "koord-prod", "qos": "LS",
                           "cgroupPath": {"base": "CgroupRoot", "parentDir": "host-ls/",
                                          "relativePath": "log-collector/"}}]}""",
    "cpu-normalization-config": """
        {"enable": true, "defaultRatio": 1.0, "ratioModel": {
            "Example CPU Model 8369 @ 2.90GHz": {"baseRatio": 1.3,
              "hyperThreadEnabledRatio": 1.0, "turboEnabledRatio": 1.5,
              "hyperThreadTurboEnabledRatio": 1.15}}}""",
    "resource-amplification-config": """
        {"enable": true, "resourceAmplificationRatio": {"cpu": 1.5}}""",
}


def test_every_key_has_its_default_when_missing() -> None:
    for data in (None, dict[str, str]()):
        config = parse_slo_controller_config(data)
        assert config == SLOControllerConfig()
        assert config.colocation.enable is False
        assert config.colocation.metric_aggregate_duration_seconds == 300
        assert config.colocation.node_configs is None
        assert config.resource_threshold.to_dict() == {"clusterStrategy": {
            "enable": False, "cpuSuppressThresholdPercent": 65, "cpuSuppressPolicy": "cpuset",
            "memoryEvictThresholdPercent": 70, "cpuEvictPolicy": "evictByRealLimit"}}
        assert config.resource_qos.to_dict() == {"clusterStrategy": {}}
        assert config.cpu_burst.to_dict() == {"clusterStrategy": {
            "policy": "none", "cpuBurstPercent": 1000, "cfsQuotaBurstPercent": 300,
            "cfsQuotaBurstPeriodSeconds": -1, "sharePoolThresholdPercent": 50}}
        assert config.system.to_dict() == {"clusterStrategy": {"totalNetworkBandwidth": "0"}}
        assert config.host_application.to_dict() == {}
        assert config.cpu_normalization.to_dict() == {"enable": False, "ratioModel": {}}
        assert config.resource_amplification.to_dict() == {"enable": False}
        assert config.extensions == {}


@pytest.mark.parametrize("text", ["", "null", "{}"])
def test_empty_colocation_config_means_defaults(text: str) -> None:
    config = parse_slo_controller_config({"colocation-config": text})
    assert config.colocation == SLOControllerConfig().colocation


def test_upstream_manager_fixture_parses() -> None:
    path = upstream_data_dir() / "config/manager/slo-controller-config.yaml"
    configmap = yaml.safe_load(path.read_text())
    config = parse_slo_controller_config(configmap["data"])
    assert config.colocation.enable is True
    assert config.colocation.cpu_reclaim_threshold_percent == 60
    threshold = config.resource_threshold.cluster_strategy
    assert threshold is not None and threshold.enable is True
    assert threshold.cpu_suppress_threshold_percent == 65


def test_complete_example_parses_and_renders_a_node_slo() -> None:
    config = parse_slo_controller_config(COMPLETE_EXAMPLE)
    assert config.colocation.for_node(
        {"metadata": {"labels": {"pool": "a"}}}).cpu_reclaim_threshold_percent == 70
    assert config.cpu_normalization.default_ratio == 1.0
    assert config.resource_amplification.resource_amplification_ratio == {"cpu": 1.5}
    spec = config.node_slo_spec({"metadata": {"name": "node-1", "annotations": {
        "node.koordinator.sh/network-bandwidth": "25G"}}}).to_dict()
    assert spec["resourceQOSStrategy"]["beClass"]["resctrlQOS"] == {
        "enable": True, "catRangeEndPercent": 30}
    assert spec["cpuBurstStrategy"]["policy"] == "auto"
    assert spec["systemStrategy"] == {"minFreeKbytesFactor": 100, "watermarkScaleFactor": 150,
                                      "totalNetworkBandwidth": "25G"}
    assert spec["hostApplications"][0]["name"] == "log-collector"
    assert "hostApplications" not in parse_slo_controller_config({}).node_slo_spec(
        {"metadata": {"name": "n"}}).to_dict()


def test_go_decoding_rules_keys_ignore_case_and_unknown_keys() -> None:
    config = parse_slo_controller_config({
        "cpu-burst-config": '{"ClusterStrategy": {"POLICY": "auto", "unknown": 1}, "x": 2}',
        "resource-qos-config": '{"clusterStrategy": {"LSRCLASS": {"CPUQOS": {"enable": true}}}}',
    })
    burst = config.cpu_burst.cluster_strategy
    assert burst is not None and burst.policy == "auto"
    qos = config.resource_qos.cluster_strategy
    assert qos is not None and qos.lsr_class is not None and qos.lsr_class.cpu_qos is not None
    assert qos.lsr_class.cpu_qos.enable is True


def test_other_keys_are_kept_for_extensions() -> None:
    config = parse_slo_controller_config({"gpu-qos-config": '{"clusterStrategy": {}}'})
    assert config.extensions == {"gpu-qos-config": '{"clusterStrategy": {}}'}


# (data key, value, what the message must say)
MALFORMED = [
    ("colocation-config", "{not json", "invalid JSON at line 1 column 2"),
    ("colocation-config", '{"enable": true} trailing', "invalid JSON at line 1 column 18"),
    ("colocation-config", "[]", "expected a JSON object, got an array"),
    ("colocation-config", '{"enable": "yes"}', "enable: Input should be a valid boolean"),
    ("colocation-config", '{"metricReportIntervalSeconds": 0}',
     "metricReportIntervalSeconds must be > 0, got 0"),
    ("colocation-config", '{"resourceDiffThreshold": "0.1"}',
     "resourceDiffThreshold: Input should be a valid number"),
    ("resource-threshold-config", "", "invalid JSON at line 1 column 1"),
    ("resource-threshold-config", '{"clusterStrategy": {"cpuSuppressThresholdPercent": 150}}',
     "clusterStrategy.cpuSuppressThresholdPercent: 150 is out of range "
     "(allowed: >= 0 and <= 100)"),
    ("resource-threshold-config",
     '{"nodeStrategies": [{"nodeSelector": {"matchLabels": "pool=a"}}]}',
     "nodeStrategies[0].nodeSelector.matchLabels: Input should be a valid dictionary"),
    ("resource-qos-config", '{"clusterStrategy": {"beClass": {"memoryQOS": {"wmarkMinAdj": 60}}}}',
     "clusterStrategy.beClass.memoryQOS.wmarkMinAdj: 60 is out of range "
     "(allowed: >= -25 and <= 50)"),
    ("resource-qos-config",
     '{"nodeStrategies": [{"beClass": {"blkioQOS": {"blocks": [{"ioCfg": '
     '{"ioWeightPercent": 0}}]}}}]}',
     "nodeStrategies[0].beClass.blkioQOS.blocks[0].ioCfg.ioWeightPercent: 0 is out of range "
     "(allowed: >= 1 and <= 100)"),
    ("cpu-burst-config", '{"clusterStrategy": {"cpuBurstPercent": "1000"}}',
     "clusterStrategy.cpuBurstPercent: Input should be a valid integer"),
    ("cpu-burst-config", '{"clusterStrategy": {"cpuBurstPercent": 20000}}',
     "clusterStrategy.cpuBurstPercent: 20000 is out of range (allowed: >= 0 and <= 10000)"),
    ("cpu-burst-config", "42", "expected a JSON object, got a number"),
    ("system-config", '{"clusterStrategy": {"totalNetworkBandwidth": "ten gigabit"}}',
     "clusterStrategy.totalNetworkBandwidth: 'ten gigabit' is not a resource quantity"),
    ("system-config", '{"clusterStrategy": {"schedFeatures": {"ID_EXPEL": 1}}}',
     "clusterStrategy.schedFeatures.ID_EXPEL: Input should be a valid boolean"),
    ("system-config", "NaN", "invalid JSON: NaN is not valid JSON"),
    ("host-application-config", '{"applications": {"name": "nginx"}}',
     "applications: Input should be a valid list"),
    ("cpu-normalization-config", '{"ratioModel": {"Xeon 8369": {"baseRatio": "1.3"}}}',
     'ratioModel["Xeon 8369"].baseRatio: Input should be a valid number'),
    ("resource-amplification-config", '{"resourceAmplificationRatio": {"cpu": true}}',
     "resourceAmplificationRatio.cpu: Input should be a valid number"),
]


@pytest.mark.parametrize(("key", "value", "message"), MALFORMED,
                         ids=[f"{k}:{v[:30]}" for k, v, _ in MALFORMED])
def test_malformed_values_raise_naming_the_key(key: str, value: str, message: str) -> None:
    data = {**COMPLETE_EXAMPLE, key: value}
    with pytest.raises(MalformedValueError) as caught:
        parse_slo_controller_config(data, obj="configmap koordinator-system/slo-controller-config")
    err = caught.value
    assert err.key == key
    assert message in err.reason, err.reason
    assert str(err).startswith("configmap koordinator-system/slo-controller-config: "
                               f"invalid value for {key!r}: ")


def test_non_string_value_is_malformed() -> None:
    with pytest.raises(MalformedValueError, match="value must be a string") as caught:
        parse_slo_controller_config({"system-config": {"clusterStrategy": {}}})
    assert caught.value.key == "system-config"


def test_lenient_parse_keeps_the_previous_good_value_of_bad_keys() -> None:
    good = parse_slo_controller_config(COMPLETE_EXAMPLE)
    changed = {
        **COMPLETE_EXAMPLE,
        "colocation-config": '{"enable": true, "degradeTimeMinutes": 0}',
        "system-config": "{broken",
        "cpu-burst-config": '{"clusterStrategy": {"policy": "none"}}',
    }
    config, errors = parse_slo_controller_config_lenient(changed, good)
    assert sorted(err.key for err in errors) == ["colocation-config", "system-config"]
    assert config.colocation == good.colocation
    assert config.system == good.system
    burst = config.cpu_burst.cluster_strategy
    assert burst is not None and burst.policy == "none"
    # A bad key with no previous config falls back to the defaults.
    fresh, fresh_errors = parse_slo_controller_config_lenient({"system-config": "{broken"})
    assert [err.key for err in fresh_errors] == ["system-config"]
    assert fresh.system == SLOControllerConfig().system


def test_lenient_parse_of_good_data_matches_strict_parse() -> None:
    config, errors = parse_slo_controller_config_lenient(COMPLETE_EXAMPLE)
    assert errors == []
    assert config == parse_slo_controller_config(COMPLETE_EXAMPLE)


def test_resolved_config_dumps_as_json() -> None:
    config = parse_slo_controller_config(COMPLETE_EXAMPLE)
    dumped = json.loads(config.colocation.to_json())
    assert dumped["nodeConfigs"][0]["cpuReclaimThresholdPercent"] == 70
    assert dumped["nodeConfigs"][0]["memoryReclaimThresholdPercent"] == 65


DEEP = "[" * 5000 + "]" * 5000  # json.loads raised RecursionError from about 1,000 levels


@pytest.mark.parametrize("key", sorted(KEY_PARSERS))
@pytest.mark.parametrize("text", [DEEP, '{"enable": true, "unknownField": ' + DEEP + "}",
                                  "[" * 101 + "]" * 101])
def test_json_nested_too_deep_is_refused_naming_the_configmap_and_key(key: str,
                                                                     text: str) -> None:
    obj = "configmap koordinator-system/slo-controller-config"
    with pytest.raises(MalformedValueError) as caught:
        parse_slo_controller_config({key: text}, obj=obj)
    assert str(caught.value) == (f"{obj}: invalid value for {key!r}: invalid JSON: JSON nested "
                                 f"more than {MAX_JSON_DEPTH} levels deep")
    # The controller's parse keeps the last good value of that key.
    good = parse_slo_controller_config({})
    kept, errors = parse_slo_controller_config_lenient({key: text}, good, obj=obj)
    assert kept == good and [e.key for e in errors] == [key]


def test_json_nested_up_to_the_bound_still_parses() -> None:
    nested = "[" * (MAX_JSON_DEPTH - 1) + "]" * (MAX_JSON_DEPTH - 1)
    config = parse_slo_controller_config(
        {"colocation-config": '{"enable": true, "unknownField": ' + nested + "}"})
    assert config.colocation.enable is True
