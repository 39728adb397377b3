import logging
from dataclasses import dataclass, field
from typing import Any

import pytest

from koordlet.statesinformer.states_informer import PodMeta
from koordlet.statesinformer.states_view import StatesView


@dataclass
class Raw:
    """What the informer caches, set directly by the test."""

    slo: dict[str, Any] | None = None
    node_name: str = "node-a"
    pods: list[PodMeta] = field(default_factory=list)

    def get_node(self) -> dict[str, Any] | None:
        return {"metadata": {"name": self.node_name}}

    def get_node_slo(self) -> dict[str, Any] | None:
        return self.slo

    def get_all_pods(self) -> list[PodMeta]:
        return self.pods


def slo(version: str, threshold: Any) -> dict[str, Any]:
    return {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeSLO",
            "metadata": {"name": "node-a", "resourceVersion": version},
            "spec": {"resourceUsedThresholdWithBE": {
                "enable": True, "cpuSuppressThresholdPercent": threshold}}}


def test_node_slo_is_merged_onto_defaults_and_a_malformed_one_keeps_the_last_good(
        caplog: pytest.LogCaptureFixture) -> None:
    raw = Raw(pods=[PodMeta({"metadata": {"uid": "u1"}})])
    view = StatesView(raw)
    assert view.get_node_slo() is None
    assert view.get_all_pods() == [{"metadata": {"uid": "u1"}}]
    raw.slo = slo("1", 40)
    good = view.get_node_slo()
    assert good is not None
    strategy = good.spec.resource_used_threshold_with_be
    assert strategy is not None
    assert strategy.enable is True and strategy.cpu_suppress_threshold_percent == 40
    # Unset fields come from koordlet's defaults, as upstream merges them.
    assert strategy.memory_evict_threshold_percent == 70
    assert good.spec.cpu_burst_strategy is not None

    raw.slo = slo("2", "forty")
    with caplog.at_level(logging.ERROR):
        assert view.get_node_slo() is good
        assert view.get_node_slo() is good
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert "node-a" in errors[0] and "cpuSuppressThresholdPercent" in errors[0]

    raw.slo = slo("3", 55)
    merged = view.get_node_slo()
    assert merged is not None and merged.spec.resource_used_threshold_with_be is not None
    assert merged.spec.resource_used_threshold_with_be.cpu_suppress_threshold_percent == 55


def test_malformed_host_application_is_dropped_alone_and_logged_once(
        caplog: pytest.LogCaptureFixture) -> None:
    """A bad entry names its index and field; the other entries and the spec still apply."""
    raw = Raw(slo=slo("1", 40))
    raw.slo["spec"]["hostApplications"] = [  # type: ignore[index]
        {"name": "nginx", "qos": "LS"},
        {"name": "bad-path", "qos": "BE", "cgroupPath": "host-best-effort/x"},
        {"name": "escape", "qos": "BE",
         "cgroupPath": {"base": "CgroupRoot", "parentDir": "..", "relativePath": "etc"}},
        {"name": "yarn", "qos": "BE", "cgroupPath": {"base": "KubepodsBesteffort",
                                                     "relativePath": "hadoop-yarn"}},
    ]
    view = StatesView(raw)
    with caplog.at_level(logging.ERROR):
        parsed = view.get_node_slo()
        assert view.get_node_slo() is parsed  # cached: logged once per resourceVersion
    assert parsed is not None and parsed.spec.host_applications is not None
    assert [a.name for a in parsed.spec.host_applications] == ["nginx", "yarn"]
    threshold = parsed.spec.resource_used_threshold_with_be
    assert threshold is not None and threshold.cpu_suppress_threshold_percent == 40
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 2
    assert "hostApplications[1]" in errors[0] and "'bad-path'" in errors[0]
    assert "cgroupPath" in errors[0]
    assert "hostApplications[2]" in errors[1] and "cgroupPath" in errors[1]
    assert "outside the cgroup root" in errors[1]
