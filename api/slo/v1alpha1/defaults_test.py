"""Upstream's default strategies (pkg/util/sloconfig/nodeslo_config.go)."""

from __future__ import annotations

import pytest

from api.slo.v1alpha1.defaults import (
    default_cpu_burst_strategy,
    default_node_slo_spec,
    default_resource_qos_strategy,
    default_resource_threshold_strategy,
    default_system_strategy,
    none_resource_qos_strategy,
)

# Upstream's per-class defaults (DefaultCPUQOS, ... of nodeslo_config.go): LSR, LS, BE, SYSTEM.
DEFAULTS = {
    ("cpuQOS", "groupIdentity"): (2, 2, -1, 0),
    ("cpuQOS", "schedIdle"): (0, 0, 0, 0),
    ("cpuQOS", "coreExpeller"): (True, True, False, False),
    ("memoryQOS", "minLimitPercent"): (0, 0, 0, 0),
    ("memoryQOS", "lowLimitPercent"): (0, 0, 0, 0),
    ("memoryQOS", "throttlingPercent"): (0, 0, 0, 0),
    ("memoryQOS", "wmarkRatio"): (95, 95, 95, 0),
    ("memoryQOS", "wmarkScalePermill"): (20, 20, 20, 50),
    ("memoryQOS", "wmarkMinAdj"): (-25, -25, 50, 0),
    ("memoryQOS", "priorityEnable"): (0, 0, 0, 0),
    ("memoryQOS", "priority"): (0, 0, 0, 0),
    ("memoryQOS", "oomKillGroup"): (0, 0, 0, 0),
    ("resctrlQOS", "catRangeStartPercent"): (0, 0, 0, 0),
    ("resctrlQOS", "catRangeEndPercent"): (100, 100, 30, 100),
    ("resctrlQOS", "mbaPercent"): (100, 100, 100, 100),
}
CLASSES = ("lsrClass", "lsClass", "beClass", "systemClass")


@pytest.mark.parametrize(("mechanism", "field"), sorted(DEFAULTS))
def test_default_resource_qos_per_class(mechanism: str, field: str) -> None:
    strategy = default_resource_qos_strategy().to_dict()
    got = tuple(strategy[cls][mechanism][field] for cls in CLASSES)
    assert got == DEFAULTS[(mechanism, field)]


def test_default_resource_qos_everything_disabled_and_policies_set() -> None:
    strategy = default_resource_qos_strategy().to_dict()
    assert strategy["policies"] == {"cpuPolicy": "groupIdentity", "netQOSPolicy": "tc"}
    for cls in CLASSES:
        for mechanism in ("cpuQOS", "memoryQOS", "blkioQOS", "resctrlQOS", "networkQOS"):
            assert strategy[cls][mechanism]["enable"] is False
        assert strategy[cls]["networkQOS"] == {"enable": False, "ingressRequest": 0,
                                               "ingressLimit": 0, "egressRequest": 0,
                                               "egressLimit": 0}
    assert strategy["cgroupRoot"] == {"blkioQOS": {"enable": False}}


def test_none_resource_qos_strategy() -> None:
    strategy = none_resource_qos_strategy().to_dict()
    for cls in CLASSES:
        assert strategy[cls]["cpuQOS"] == {"enable": False, "groupIdentity": 0, "schedIdle": 0,
                                           "coreExpeller": False}
        memory = strategy[cls]["memoryQOS"]
        assert memory["wmarkScalePermill"] == 50
        assert {k: v for k, v in memory.items() if k not in ("enable", "wmarkScalePermill")} == {
            k: 0 for k in memory if k not in ("enable", "wmarkScalePermill")}
        assert strategy[cls]["resctrlQOS"] == {"enable": False, "catRangeStartPercent": 0,
                                               "catRangeEndPercent": 100, "mbaPercent": 100}


def test_default_resource_threshold_strategy() -> None:
    assert default_resource_threshold_strategy().to_dict() == {
        "enable": False, "cpuSuppressThresholdPercent": 65, "cpuSuppressPolicy": "cpuset",
        "memoryEvictThresholdPercent": 70, "cpuEvictPolicy": "evictByRealLimit"}


def test_default_cpu_burst_strategy() -> None:
    assert default_cpu_burst_strategy().to_dict() == {
        "policy": "none", "cpuBurstPercent": 1000, "cfsQuotaBurstPercent": 300,
        "cfsQuotaBurstPeriodSeconds": -1, "sharePoolThresholdPercent": 50}


def test_default_system_strategy() -> None:
    assert default_system_strategy().to_dict() == {"totalNetworkBandwidth": "0"}


def test_defaults_are_fresh_objects() -> None:
    first = default_resource_qos_strategy()
    assert first.be_class is not None and first.be_class.cpu_qos is not None
    first.be_class.cpu_qos.group_identity = 2
    fresh = default_resource_qos_strategy().be_class
    assert fresh is not None and fresh.cpu_qos is not None
    assert fresh.cpu_qos.group_identity == -1


def test_default_node_slo_spec() -> None:
    spec = default_node_slo_spec().to_dict()
    assert set(spec) == {"resourceUsedThresholdWithBE", "resourceQOSStrategy",
                         "cpuBurstStrategy", "systemStrategy", "extensions"}
    assert spec["extensions"] == {}
