"""Tests of building a scheduler from a configuration (``scheduler/factory.py``): upstream's
shipped koord-scheduler configuration, the plugins it names that are not implemented yet, and
configurations that must not start."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from pkg.util.testdata import upstream_data_dir
from scheduler.apis.config import KubeSchedulerConfiguration, load_scheduler_config
from scheduler.factory import Built, build_scheduler
from scheduler.framework.binder import InMemoryBinder
from scheduler.framework.runtime import FrameworkError

HEADER = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
"""


def shipped_config() -> KubeSchedulerConfiguration:
    """Upstream's config/manager/scheduler-config.yaml: a ConfigMap holding the file."""
    path = upstream_data_dir() / "config" / "manager" / "scheduler-config.yaml"
    configmap = yaml.safe_load(path.read_text())
    return load_scheduler_config(configmap["data"]["koord-scheduler-config"], source=str(path))


def build(cfg: KubeSchedulerConfiguration, **kw: Any) -> Built:
    return build_scheduler(cfg, binder=InMemoryBinder(), **kw)


@pytest.fixture(scope="module")
def shipped() -> Built:
    return build(shipped_config())


def names(plugins: list[Any]) -> list[str]:
    return [p.name for p in plugins]


IN_TREE_FILTERS = ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity",
                   "NodePorts", "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity"]


def test_the_shipped_configuration_builds_the_koord_scheduler_profile(shipped: Built) -> None:
    assert list(shipped.scheduler.profiles) == ["koord-scheduler"]
    fwk = shipped.scheduler.profiles["koord-scheduler"]
    assert fwk.queue_sort.name == "PrioritySort"
    assert names(fwk.filter) == [*IN_TREE_FILTERS, "LoadAwareScheduling", "Reservation"]
    assert names(fwk.score)[-3:] == ["LoadAwareScheduling", "Reservation", "Coscheduling"]
    assert fwk.weights["LoadAwareScheduling"] == 1
    assert fwk.weights["Reservation"] == 5000
    assert fwk.weights["TaintToleration"] == 3  # the in-tree default weights stay
    assert names(fwk.pre_enqueue) == ["SchedulingGates", "Coscheduling"]
    assert names(fwk.post_filter) == ["Reservation", "Coscheduling", "ElasticQuota",
                                      "DefaultPreemption"]
    assert names(fwk.reserve) == ["LoadAwareScheduling", "Reservation", "Coscheduling",
                                  "ElasticQuota"]
    assert names(fwk.bind) == ["Reservation", "DefaultBinder"]
    assert names(fwk.pre_bind) == ["Reservation", "Coscheduling"]
    assert names(fwk.permit) == names(fwk.post_bind) == ["Coscheduling"]


def test_the_plugins_not_implemented_yet_are_reported_with_their_points(shipped: Built) -> None:
    multi = ["multiPoint"]
    assert shipped.skipped_plugins == {"koord-scheduler": {
        "NodeNUMAResource": ["preFilter", "filter", "score", "reserve", "preBind"],
        "DeviceShare": ["preFilter", "filter", "score", "reserve", "preBind"],
        "SchedulingHint": ["preFilter"],
        "DefaultPreBind": ["preBind"],
        # In-tree defaults, enabled through multiPoint.
        "VolumeRestrictions": multi, "NodeVolumeLimits": multi, "VolumeBinding": multi,
        "VolumeZone": multi, "ImageLocality": multi, "DynamicResources": multi,
    }}


def test_the_skipped_plugins_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    build(shipped_config())
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("plugin NodeNUMAResource" in w and "left out at preFilter, filter" in w
               for w in warnings)


def test_an_unknown_plugin_is_a_start_up_error_naming_it() -> None:
    cfg = load_scheduler_config(HEADER + """profiles:
- schedulerName: default-scheduler
  plugins:
    filter: {enabled: [{name: NodeResourcesFitt}]}
""")
    with pytest.raises(FrameworkError, match="plugin 'NodeResourcesFitt' is not registered"):
        build(cfg)


def test_profiles_share_the_queue_cache_and_snapshot() -> None:
    cfg = load_scheduler_config(HEADER + """profiles:
- schedulerName: default-scheduler
- schedulerName: batch-scheduler
  percentageOfNodesToScore: 30
""")
    built = build(cfg)
    sched = built.scheduler
    a, b = sched.profiles["default-scheduler"], sched.profiles["batch-scheduler"]
    assert a.snapshot is b.snapshot is sched.snapshot
    assert a.nominator is b.nominator is sched.queue.nominator
    assert (a.percentage_of_nodes_to_score, b.percentage_of_nodes_to_score) == (None, 30)
    assert built.handlers.responsible_for({"spec": {"schedulerName": "batch-scheduler"}})
    assert built.skipped_plugins.keys() == {"default-scheduler", "batch-scheduler"}
