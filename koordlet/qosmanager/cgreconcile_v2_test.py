"""cgreconcile writing a cgroup v2 tree: a temp dir laid out as the kernel lays out a v2
hierarchy with the systemd driver (kubepods.slice, the QoS slices, a pod slice and its container
scope), with the memcg files an upstream kernel has there (`fake_v2_tree`: `memory.min`,
`memory.low`, `memory.high`, `memory.oom.group`) and not the Anolis-only ones (`memory.wmark_*`,
`memory.priority`, `memory.use_priority_oom`). The NodeSLO reaches the strategy as a raw
object through statesinformer's typed view (merged onto koordlet's defaults), the strategy is
taken from the registry under its upstream name, and one tick is one `run_once`."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from koordlet.metriccache.metric_cache import MetricCache
from koordlet.qosmanager.framework import Context, QOSStrategy
from koordlet.qosmanager.register import STRATEGY_PLUGINS
from koordlet.qosmanager.testing import node, pod_with_containers
from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.statesinformer.states_informer import PodMeta
from koordlet.statesinformer.states_view import StatesView
from koordlet.util.system.cgroup_env import CgroupEnv
from koordlet.util.system.testing import fake_v2_tree
from pkg.features import koordlet_feature_gate
from pkg.features.koordlet_features import CGROUP_RECONCILE
from pkg.util.clock import FakeClock

GI = 1 << 30
ENV = CgroupEnv()  # the systemd layout, to name the dirs before the tree exists
POD_DIR = ENV.pod_dir("Burstable", "ls")
CONTAINER_DIR = ENV.container_dir(POD_DIR, "containerd://ls-c0")
G, BU, BE = (ENV.kube_qos_dir(q) for q in ("Guaranteed", "Burstable", "BestEffort"))


class RawStates:
    """statesinformer's raw side: the node, a NodeSLO object as the API serves it, pods."""

    node_name = "node-1"

    def __init__(self, slo: dict[str, Any]) -> None:
        self.slo = slo
        self.pod = pod_with_containers("ls", "LS", "Burstable",
                                       [({"memory": "1Gi"}, {"memory": "2Gi"})])

    def get_node(self) -> dict[str, Any]:
        return node("4")  # 8Gi allocatable

    def get_node_slo(self) -> dict[str, Any]:
        return self.slo

    def get_all_pods(self) -> list[PodMeta]:
        return [PodMeta(self.pod)]


def node_slo(version: str, ls_memory_qos: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeSLO",
            "metadata": {"name": "node-1", "resourceVersion": version},
            "spec": {"resourceQOSStrategy": {"lsClass": {"memoryQOS": ls_memory_qos}}}}


def read(root: Path, parent: str, name: str) -> str:
    return (root / parent / name).read_text().strip()


@pytest.fixture
def setup(tmp_path: Path) -> tuple[QOSStrategy, RawStates]:
    env = fake_v2_tree(tmp_path, [G, BU, BE, CONTAINER_DIR])
    raw = RawStates(node_slo("1", {"enable": True, "minLimitPercent": 100,
                                   "throttlingPercent": 50, "oomKillGroup": 1}))
    gate = koordlet_feature_gate.copy()
    ctx = Context(env=env, executor=ResourceUpdateExecutor(FakeClock(0.0)),
                  metric_cache=MetricCache(), states=StatesView(raw), feature_gate=gate)
    strategy = STRATEGY_PLUGINS["CgroupReconcile"](ctx)
    assert not strategy.enabled()  # Alpha, off by default
    gate.set_enabled(CGROUP_RECONCILE, True)
    assert strategy.enabled()
    return strategy, raw


def test_node_slo_to_v2_cgroup_files(setup, tmp_path: Path, caplog) -> None:
    strategy, raw = setup
    with caplog.at_level(logging.INFO, logger="koordlet.qosmanager.cgreconcile"):
        strategy.run_once()
    # the LS pod's 1Gi request is protected on every level above and at it
    assert read(tmp_path, CONTAINER_DIR, "memory.min") == str(GI)
    assert read(tmp_path, POD_DIR, "memory.min") == str(GI)
    assert read(tmp_path, BU, "memory.min") == str(GI)
    assert read(tmp_path, G, "memory.min") == str(GI)  # kubepods: the sum of its QoS dirs
    assert read(tmp_path, BE, "memory.min") == "0"
    # throttled halfway between request (1Gi) and limit (2Gi)
    assert read(tmp_path, CONTAINER_DIR, "memory.high") == str(GI + GI // 2)
    assert read(tmp_path, POD_DIR, "memory.oom.group") == "1"
    assert read(tmp_path, BU, "memory.oom.group") == "1"
    # the other classes keep koordlet's defaults, `enable: false`: the "none" values
    assert read(tmp_path, G, "memory.oom.group") == "0"
    # files this kernel lacks are not created, and said once each
    assert not (tmp_path / POD_DIR / "memory.wmark_ratio").exists()
    skipped = [r.getMessage() for r in caplog.records if "lacks" in r.getMessage()]
    assert len(skipped) == 5 and any("memory.wmark_ratio" in m for m in skipped)

    # NodeSLO update: half the request protected, no throttling; narrowed on the next tick
    caplog.clear()
    raw.slo = node_slo("2", {"enable": True, "minLimitPercent": 50, "throttlingPercent": 0})
    with caplog.at_level(logging.INFO, logger="koordlet.qosmanager.cgreconcile"):
        strategy.run_once()
    for parent in (CONTAINER_DIR, POD_DIR, BU, G):
        assert read(tmp_path, parent, "memory.min") == str(GI // 2), parent
    assert read(tmp_path, CONTAINER_DIR, "memory.high") in ("max", "9223372036854775807")
    assert not [r for r in caplog.records if "lacks" in r.getMessage()]

    # memoryQOS switched off for the class: the none values, protection gone
    raw.slo = node_slo("3", {"enable": False, "minLimitPercent": 50})
    strategy.run_once()
    assert read(tmp_path, POD_DIR, "memory.min") == "0"
    assert read(tmp_path, G, "memory.min") == "0"


def test_pod_annotation_overrides_the_node(setup, tmp_path: Path) -> None:
    strategy, raw = setup
    raw.pod["metadata"]["annotations"]["koordinator.sh/memoryQOS"] = '{"policy":"none"}'
    strategy.run_once()
    assert read(tmp_path, POD_DIR, "memory.min") == "0"
    assert read(tmp_path, G, "memory.min") == "0"
    assert read(tmp_path, POD_DIR, "memory.oom.group") == "0"


def test_a_garbled_memcg_file_is_named_and_the_rest_written(setup, tmp_path: Path,
                                                            caplog) -> None:
    """A pod's memory.min not in the kernel's shape: the tick raises nothing, names the file
    in the warning, leaves it as it is and writes the other dirs."""
    strategy, _ = setup
    (tmp_path / POD_DIR / "memory.min").write_text("lots\n")
    with caplog.at_level(logging.WARNING):
        strategy.run_once()
    assert read(tmp_path, POD_DIR, "memory.min") == "lots"
    assert read(tmp_path, CONTAINER_DIR, "memory.min") == str(GI)
    assert read(tmp_path, BU, "memory.min") == str(GI)
    path = str(tmp_path / POD_DIR / "memory.min")
    assert [r for r in caplog.records if path in r.getMessage()]


def test_unchanged_values_are_left_alone_and_repaired_after_the_force_update_age(
        tmp_path: Path) -> None:
    """Round after round with nothing changed, no file is rewritten until the executor's
    force-update age (60 s): a value changed behind koordlet's back is repaired then, and a
    pod's new request reaches its files on the next round."""
    env = fake_v2_tree(tmp_path, [G, BU, BE, CONTAINER_DIR])
    raw = RawStates(node_slo("1", {"enable": True, "minLimitPercent": 100}))
    clock = FakeClock(0.0)
    gate = koordlet_feature_gate.copy()
    gate.set_enabled(CGROUP_RECONCILE, True)
    ctx = Context(env=env, executor=ResourceUpdateExecutor(clock), metric_cache=MetricCache(),
                  states=StatesView(raw), feature_gate=gate)
    strategy = STRATEGY_PLUGINS["CgroupReconcile"](ctx)
    strategy.run_once()
    assert read(tmp_path, POD_DIR, "memory.min") == str(GI)

    (tmp_path / POD_DIR / "memory.min").write_text("0\n")  # behind koordlet's back
    clock.step(30)
    strategy.run_once()
    assert read(tmp_path, POD_DIR, "memory.min") == "0"  # written 30 s ago: left alone
    clock.step(30)
    strategy.run_once()
    assert read(tmp_path, POD_DIR, "memory.min") == str(GI)  # 60 s: rewritten

    raw.pod["spec"]["containers"][0]["resources"]["requests"]["memory"] = "2Gi"
    clock.step(1)
    strategy.run_once()
    for parent in (CONTAINER_DIR, POD_DIR, BU, G):
        assert read(tmp_path, parent, "memory.min") == str(2 * GI), parent
