"""Load-aware keys (upstream `apis/extension/load_aware.go`)."""

from api.extension.load_aware import (
    ANNOTATION_CUSTOM_ESTIMATED_SCALING_FACTORS,
    ANNOTATION_CUSTOM_ESTIMATED_SECONDS_AFTER_INITIALIZED,
    ANNOTATION_CUSTOM_ESTIMATED_SECONDS_AFTER_POD_SCHEDULED,
    ANNOTATION_CUSTOM_USAGE_THRESHOLDS,
    CustomUsageThresholds,
    format_custom_usage_thresholds,
    format_estimated_scaling_factors,
    get_estimated_scaling_factors,
    get_estimated_seconds_after_initialized,
    get_estimated_seconds_after_pod_scheduled,
    parse_custom_usage_thresholds,
    parse_estimated_scaling_factors,
    parse_estimated_seconds_after_pod_scheduled,
)


def test_usage_thresholds_round_trip():
    raw = ('{"usageThresholds":{"cpu":65,"memory":95},"prodUsageThresholds":{"cpu":55},'
           '"aggregatedUsage":{"usageThresholds":{"cpu":70},"usageAggregationType":"p95",'
           '"usageAggregatedDuration":"5m0s"}}')
    thresholds = parse_custom_usage_thresholds({ANNOTATION_CUSTOM_USAGE_THRESHOLDS: raw})
    assert thresholds.usage_thresholds == {"cpu": 65, "memory": 95}
    assert format_custom_usage_thresholds(thresholds) == raw
    assert parse_custom_usage_thresholds({}) == CustomUsageThresholds()


def test_usage_thresholds_written_canonically():
    raw = ('{"aggregatedUsage":{"usageAggregatedDuration":"300s"},'
           '"usageThresholds":{"memory":1,"cpu":2}}')
    thresholds = parse_custom_usage_thresholds({ANNOTATION_CUSTOM_USAGE_THRESHOLDS: raw})
    assert format_custom_usage_thresholds(thresholds) == (
        '{"usageThresholds":{"cpu":2,"memory":1},"aggregatedUsage":'
        '{"usageAggregatedDuration":"5m0s"}}')


def test_scaling_factors():
    annotations = {ANNOTATION_CUSTOM_ESTIMATED_SCALING_FACTORS: '{"cpu":80,"memory":70}'}
    assert parse_estimated_scaling_factors(annotations) == {"cpu": 80, "memory": 70}
    assert format_estimated_scaling_factors({"memory": 70, "cpu": 80}) == '{"cpu":80,"memory":70}'
    assert parse_estimated_scaling_factors({}) is None
    assert get_estimated_scaling_factors({ANNOTATION_CUSTOM_ESTIMATED_SCALING_FACTORS: "x"}) is None


def test_estimated_seconds():
    key = ANNOTATION_CUSTOM_ESTIMATED_SECONDS_AFTER_POD_SCHEDULED
    assert parse_estimated_seconds_after_pod_scheduled({key: "120"}) == 120
    assert parse_estimated_seconds_after_pod_scheduled({}) == -1
    assert get_estimated_seconds_after_pod_scheduled({key: "2m"}) == -1
    key = ANNOTATION_CUSTOM_ESTIMATED_SECONDS_AFTER_INITIALIZED
    assert get_estimated_seconds_after_initialized({key: "30"}) == 30
    assert get_estimated_seconds_after_initialized({key: ""}) == -1
