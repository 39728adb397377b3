"""SystemConfigReconcile (upstream `system_config_test.go`, `Test_systemConfig_reconcile`'s
memory cases): which value lands in which kernel knob, on a proc and sys tree laid out in a temp
dir as the kernel does (`<proc>/sys/vm/min_free_kbytes`, `<proc>/sys/vm/watermark_scale_factor`,
`<sys>/kernel/mm/memcg_reaper/reap_background`); the machine's own /proc/sys is never written.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from api.slo.v1alpha1.nodeslo import NodeSLO
from koordlet.metriccache.metric_cache import MetricCache
from koordlet.qosmanager.framework import Context
from koordlet.qosmanager.sysreconcile import SystemConfigReconcile
from koordlet.qosmanager.testing import FakeStates
from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.util.system.cgroup_env import CgroupEnv
from koordlet.util.system.config import Config as SystemConfig
from pkg.features import koordlet_feature_gate
from pkg.features.koordlet_features import SYSTEM_CONFIG

NODE_MEMORY = 512 * 1024 * 1024 * 1024
# upstream getTestDefaultStrategy, the files' contents before each case
INITIAL = {"minFreeKbytesFactor": 100, "watermarkScaleFactor": 150, "memcgReapBackGround": 0}
INITIAL_MIN_FREE = str(NODE_MEMORY // 1024 * 100 // 10000)
FILES = {
    "min_free_kbytes": "proc/sys/vm/min_free_kbytes",
    "watermark_scale_factor": "proc/sys/vm/watermark_scale_factor",
    "reap_background": "sys/kernel/mm/memcg_reaper/reap_background",
}


def memory_node(memory: str) -> dict:
    return {"metadata": {"name": "node-1"},
            "status": {"capacity": {"cpu": "80", "memory": memory}}}


def system_slo(strategy: dict | None) -> NodeSLO:
    spec = {} if strategy is None else {"systemStrategy": strategy}
    return NodeSLO.model_validate({"metadata": {"name": "node-1"}, "spec": spec})


def kernel_tree(tmp_path: Path, files: tuple[str, ...] = tuple(FILES)) -> SystemConfig:
    contents = {"min_free_kbytes": INITIAL_MIN_FREE,
                "watermark_scale_factor": str(INITIAL["watermarkScaleFactor"]),
                "reap_background": str(INITIAL["memcgReapBackGround"])}
    for name in files:
        path = tmp_path / FILES[name]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(contents[name] + "\n")
    return SystemConfig(proc_root_dir=str(tmp_path / "proc"), sys_root_dir=str(tmp_path / "sys"))


def reconcile(system: SystemConfig, node: dict | None, slo: NodeSLO) -> SystemConfigReconcile:
    gate = koordlet_feature_gate.copy()
    gate.set_enabled(SYSTEM_CONFIG, True)
    ctx = Context(env=CgroupEnv(), executor=ResourceUpdateExecutor(), metric_cache=MetricCache(),
                  states=FakeStates(node, slo, []), feature_gate=gate, system=system)
    strategy = SystemConfigReconcile(ctx)
    strategy.run_once()
    return strategy


def contents(tmp_path: Path) -> dict[str, str]:
    return {name: (tmp_path / rel).read_text().strip() for name, rel in FILES.items()
            if (tmp_path / rel).exists()}


UNCHANGED = {"min_free_kbytes": INITIAL_MIN_FREE, "watermark_scale_factor": "150",
             "reap_background": "0"}


@pytest.mark.parametrize(("node", "strategy", "expect"), [
    pytest.param(None, {"minFreeKbytesFactor": 88}, UNCHANGED, id="testNodeNil"),
    pytest.param(memory_node("0"), {"minFreeKbytesFactor": 88}, UNCHANGED,
                 id="testNodeMemoryInvalid"),
    pytest.param(memory_node(str(NODE_MEMORY)), {}, UNCHANGED, id="testNil"),
    pytest.param(memory_node(str(NODE_MEMORY)),
                 {"minFreeKbytesFactor": -1, "watermarkScaleFactor": -1,
                  "memcgReapBackGround": -1}, UNCHANGED, id="testInvalid"),
    pytest.param(memory_node(str(NODE_MEMORY)),
                 {"minFreeKbytesFactor": 0, "watermarkScaleFactor": 5, "memcgReapBackGround": -1},
                 UNCHANGED, id="testTooSmall"),
    pytest.param(memory_node(str(NODE_MEMORY)),
                 {"minFreeKbytesFactor": 88, "watermarkScaleFactor": 99, "memcgReapBackGround": 1},
                 {"min_free_kbytes": str(NODE_MEMORY // 1024 * 88 // 10000),
                  "watermark_scale_factor": "99", "reap_background": "1"}, id="testValid"),
    pytest.param(memory_node(str(NODE_MEMORY)),
                 {"minFreeKbytesFactor": 400, "watermarkScaleFactor": 500,
                  "memcgReapBackGround": 2}, UNCHANGED, id="testToolarge"),
    pytest.param(memory_node("512Gi"), {"minFreeKbytesFactor": 88},
                 {**UNCHANGED, "min_free_kbytes": str(NODE_MEMORY // 1024 * 88 // 10000)},
                 id="set part of parameters"),
])
def test_reconcile(tmp_path: Path, node: dict | None, strategy: dict, expect: dict) -> None:
    system = kernel_tree(tmp_path)
    reconcile(system, node, system_slo(strategy))
    assert contents(tmp_path) == expect


def test_no_system_strategy_writes_nothing(tmp_path: Path) -> None:
    system = kernel_tree(tmp_path)
    reconcile(system, memory_node("512Gi"), system_slo(None))
    assert contents(tmp_path) == UNCHANGED


def test_a_knob_the_kernel_lacks_is_skipped_and_said_once(tmp_path: Path, caplog) -> None:
    # A mainline kernel has no memcg_reaper (an Anolis addition): the other knobs are still set.
    system = kernel_tree(tmp_path, ("min_free_kbytes", "watermark_scale_factor"))
    slo = system_slo({"watermarkScaleFactor": 99, "memcgReapBackGround": 1})
    with caplog.at_level(logging.INFO, logger="koordlet.qosmanager.sysreconcile"):
        strategy = reconcile(system, memory_node("512Gi"), slo)
        strategy.run_once()
    assert contents(tmp_path) == {"min_free_kbytes": INITIAL_MIN_FREE,
                                  "watermark_scale_factor": "99"}
    assert not (tmp_path / FILES["reap_background"]).exists()
    lacking = [r.getMessage() for r in caplog.records
               if r.getMessage().endswith("this kernel lacks it")]
    assert lacking == [f"sysreconcile: skipping {tmp_path / FILES['reap_background']}, "
                       "this kernel lacks it"]


def test_an_unchanged_value_is_not_rewritten(tmp_path: Path, caplog) -> None:
    system = kernel_tree(tmp_path)
    slo = system_slo({"watermarkScaleFactor": 99})
    with caplog.at_level(logging.INFO, logger="koordlet.qosmanager.sysreconcile"):
        strategy = reconcile(system, memory_node("512Gi"), slo)
        strategy.run_once()
    writes = [r.getMessage() for r in caplog.records if " set " in r.getMessage()]
    assert writes == [f"sysreconcile: set {tmp_path / FILES['watermark_scale_factor']} to 99"]


def test_gate_is_off_by_default() -> None:
    ctx = Context(env=CgroupEnv(), executor=ResourceUpdateExecutor(), metric_cache=MetricCache(),
                  states=FakeStates(), feature_gate=koordlet_feature_gate.copy())
    assert not SystemConfigReconcile(ctx).enabled()
