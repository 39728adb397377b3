"""ResctrlReconcile (upstream `pkg/koordlet/qosmanager/plugins/resctrl/resctrl_reconcile_test.go`
cases): L3 masks and MBA values, schemata and tasks of the LSR/LS/BE groups.

This machine has no resctrl mount, so the resctrl filesystem is laid out as plain files under a
temp dir the way the kernel shows it (`info/L3/cbm_mask`, `info/L3/num_closids`, `info/MB/`, the
root `schemata` and `tasks`); container cgroups are a fake v2 tree. A plain file keeps only the
last write where the kernel merges schemata lines, so the checks read what was written.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from api.slo.v1alpha1.nodeslo import NodeSLO
from koordlet.metriccache.metric_cache import MetricCache
from koordlet.qosmanager.framework import Context
from koordlet.qosmanager.register import STRATEGY_PLUGINS
from koordlet.qosmanager.resctrl import (
    AMD_VENDOR_ID,
    ResctrlReconcile,
    calculate_cat_l3_mask,
    calculate_mba,
    parse_schemata,
)
from koordlet.qosmanager.testing import FakeStates, resctrl_groups, resctrl_tree
from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.statesinformer.states_view import parse_node_slo
from koordlet.util.system.config import Config as SystemConfig
from koordlet.util.system.testing import fake_v2_tree
from pkg.features import koordlet_feature_gate
from pkg.features.koordlet_features import RDT_RESCTRL

INTEL_CPUINFO = "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu cat_l3 mba\n"


@pytest.mark.parametrize(("cbm", "start", "end", "want"), [
    (0xFF, 0, 100, "ff"),
    (0x3FF, 10, 80, "fe"),
    (0x7FF, 10, 50, "3c"),
    (0x3FF, 0, 30, "7"),
    (0x3FF, 10, 85, "1fe"),
])
def test_l3_mask_from_percent_range(cbm: int, start: int, end: int, want: str) -> None:
    assert calculate_cat_l3_mask(cbm, start, end) == want


@pytest.mark.parametrize(("cbm", "start", "end"), [
    (0, 0, 0),  # empty input
    (0x101, 0, 100),  # not contiguous
    (4, 0, 100),  # not from bit 0
    (0xFF, -10, 100),
    (0xFF, 30, 30),
])
def test_l3_mask_rejects_bad_cbm_and_ranges(cbm: int, start: int, end: int) -> None:
    with pytest.raises(ValueError):
        calculate_cat_l3_mask(cbm, start, end)


@pytest.mark.parametrize(("percent", "vendor", "want"), [
    (None, "GenuineIntel", None),
    (0, "GenuineIntel", None),
    (101, "GenuineIntel", None),
    (85, "GenuineIntel", "90"),  # Intel takes multiples of 10: rounded up
    (80, "GenuineIntel", "80"),
    (80, AMD_VENDOR_ID, "128"),  # 0.8 × 25 × 8 × 0.8 Gb/s
    (30, AMD_VENDOR_ID, "48"),
    (100, AMD_VENDOR_ID, "2048"),  # AMD's unlimited
])
def test_mba_value(percent: int | None, vendor: str, want: str | None) -> None:
    assert calculate_mba(percent, vendor) == want


def test_schemata_parsing_skips_other_resources() -> None:
    assert parse_schemata("    L3:0=7ff;1=7ff\n    MB:0=100;1=100\nbad line\n") == {
        "L3": {0: "7ff", 1: "7ff"}, "MB": {0: "100", 1: "100"}}


def _slo(strategy: dict) -> NodeSLO:
    return parse_node_slo({"metadata": {"name": "node-1"},
                           "spec": {"resourceQOSStrategy": strategy}})


def _strategy(tmp_path: Path, slo: NodeSLO | None, pods: list[dict] | None = None,
              cpuinfo: str = INTEL_CPUINFO) -> ResctrlReconcile:
    (tmp_path / "proc").mkdir(exist_ok=True)
    (tmp_path / "proc" / "cpuinfo").write_text(cpuinfo)
    (tmp_path / "cgroup").mkdir()
    env = fake_v2_tree(tmp_path / "cgroup", [])
    ctx = Context(env=env, executor=ResourceUpdateExecutor(), metric_cache=MetricCache(),
                  states=FakeStates(node_slo=slo, pods=pods or []),
                  feature_gate=koordlet_feature_gate.copy(),
                  system=SystemConfig(sys_fs_root_dir=str(tmp_path / "sys-fs"),
                                      proc_root_dir=str(tmp_path / "proc")))
    return ResctrlReconcile(ctx)


UPSTREAM_POLICY = {
    "lsrClass": {"resctrlQOS": {"catRangeStartPercent": 0, "catRangeEndPercent": 100}},
    "lsClass": {"resctrlQOS": {"catRangeStartPercent": 0, "catRangeEndPercent": 100,
                               "mbaPercent": 90}},
    "beClass": {"resctrlQOS": {"catRangeStartPercent": 0, "catRangeEndPercent": 50}},
}


def test_registered_default_on_and_off_with_the_gate(tmp_path: Path) -> None:
    assert STRATEGY_PLUGINS["ResctrlReconcile"] is ResctrlReconcile
    strategy = _strategy(tmp_path, None)
    assert strategy.enabled()
    strategy.ctx.feature_gate.set_enabled(RDT_RESCTRL, False)
    assert not strategy.enabled()


def test_schemata_of_each_group_from_the_class_percents(tmp_path: Path) -> None:
    root = resctrl_tree(tmp_path / "sys-fs")
    resctrl_groups(root)
    _strategy(tmp_path, _slo(UPSTREAM_POLICY)).run_once()
    # LSR already shows its values (all ways, the merged default MBA 100): not rewritten.
    assert (root / "LSR" / "schemata").read_text() == "    L3:0=7ff;1=7ff\n    MB:0=100;1=100\n"
    assert (root / "LS" / "schemata").read_text() == "L3:0=7ff;1=7ff;\nMB:0=90;1=90;\n"
    assert (root / "BE" / "schemata").read_text() == "L3:0=3f;1=3f;\nMB:0=100;1=100;\n"


def test_groups_created_and_amd_bandwidth_per_cache_id(tmp_path: Path) -> None:
    root = resctrl_tree(tmp_path / "sys-fs", cbm="f", root_schemata="L3:0=f;1=f;2=f;3=f\n")
    strategy = _strategy(tmp_path, _slo({"beClass": {"resctrlQOS": {"mbaPercent": 30}}}),
                         cpuinfo="vendor_id\t: AuthenticAMD\n")
    # A plain dir gets no files on mkdir: the writes then fail and are logged.
    strategy.run_once()
    assert sorted(p.name for p in root.iterdir()) == ["BE", "LS", "LSR", "info", "schemata",
                                                      "tasks"]
    for group in ("LSR", "LS", "BE"):
        for name in ("schemata", "tasks"):
            (root / group / name).write_text("")
    strategy.run_once()
    # BE: default 0–30 % of 4 ways → 2 ways; 30 % of the AMD CCD peak.
    assert (root / "BE" / "schemata").read_text() == (
        "L3:0=3;1=3;2=3;3=3;\nMB:0=48;1=48;2=48;3=48;\n")
    assert (root / "LS" / "schemata").read_text() == (
        "L3:0=f;1=f;2=f;3=f;\nMB:0=2048;1=2048;2=2048;3=2048;\n")


def test_schemata_not_rewritten_when_the_kernel_shows_the_values(tmp_path: Path) -> None:
    root = resctrl_tree(tmp_path / "sys-fs", mba=False)
    resctrl_groups(root)
    shown = "L3:0=03f;1=03f\n"  # the kernel pads masks to the CBM's width
    (root / "BE" / "schemata").write_text(shown)
    (root / "LS" / "schemata").write_text("L3:0=1;1=1\n")
    strategy = _strategy(tmp_path, _slo(UPSTREAM_POLICY))
    strategy.run_once()
    assert (root / "BE" / "schemata").read_text() == shown
    # Without info/MB the MB line is never written.
    assert (root / "LS" / "schemata").read_text() == "L3:0=7ff;1=7ff;\n"


def test_invalid_range_leaves_the_group_alone(tmp_path: Path) -> None:
    root = resctrl_tree(tmp_path / "sys-fs", mba=False)
    resctrl_groups(root)
    before = (root / "LS" / "schemata").read_text()
    _strategy(tmp_path, _slo({"lsClass": {"resctrlQOS": {"catRangeStartPercent": 60,
                                                         "catRangeEndPercent": 40}}})).run_once()
    assert (root / "LS" / "schemata").read_text() == before


def _pod(uid: str, qos: str, kube_qos: str, cid: str, **extra: object) -> dict:
    pod = {
        "metadata": {"name": f"pod-{uid}", "namespace": "default", "uid": uid,
                     "labels": {"koordinator.sh/qosClass": qos}},
        "spec": {"containers": [{"name": "c"}]},
        "status": {"phase": "Running", "qosClass": kube_qos,
                   "containerStatuses": [{"name": "c", "containerID": cid}]},
    }
    pod["metadata"].update(extra)  # type: ignore[attr-defined]
    return pod


def _container_tasks(strategy: ResctrlReconcile, pod: dict, tasks: str) -> None:
    env = strategy.ctx.env
    pod_dir = env.pod_dir(pod["status"]["qosClass"], pod["metadata"]["uid"])
    cdir = env.container_dir(pod_dir, pod["status"]["containerStatuses"][0]["containerID"])
    fake_v2_tree(Path(env.root), [cdir])
    (Path(env.root) / cdir / "cgroup.threads").write_text(tasks)


def test_container_tasks_appended_to_their_class_group(tmp_path: Path) -> None:
    root = resctrl_tree(tmp_path / "sys-fs")
    resctrl_groups(root)
    be = _pod("p0", "BE", "BestEffort", "containerd://c0")
    lse = _pod("p1", "LSE", "Guaranteed", "containerd://c1")
    ls = _pod("p2", "LS", "Burstable", "containerd://c2")  # LS: resctrl not enabled
    hooked = _pod("p3", "BE", "BestEffort", "containerd://c3",
                  annotations={"node.koordinator.sh/resctrl": "{}"})
    done = _pod("p4", "BE", "BestEffort", "containerd://c4")
    done["status"]["phase"] = "Succeeded"
    policy = {"lsrClass": {"resctrlQOS": {"enable": True}},
              "beClass": {"resctrlQOS": {"enable": True}}}
    strategy = _strategy(tmp_path, _slo(policy), [be, lse, ls, hooked, done])
    _container_tasks(strategy, be, "122450\n122454\n123111\n128912\n")
    _container_tasks(strategy, lse, "4321\n4322\n4323\n4400\n")
    _container_tasks(strategy, ls, "77\n")
    _container_tasks(strategy, hooked, "88\n")
    _container_tasks(strategy, done, "99\n")
    # The BE pod's sandbox: its one cgroup dir that is no container's.
    env = strategy.ctx.env
    sandbox = env.container_dir(env.pod_dir("BestEffort", "p0"), "containerd://sandbox0")
    fake_v2_tree(Path(env.root), [sandbox])
    (Path(env.root) / sandbox / "cgroup.threads").write_text("122460\n")
    (root / "BE" / "tasks").write_text("122450\n")  # already in the group: not written again
    strategy.run_once()
    want_be = "122450\n122454\n122460\n123111\n128912\n"
    assert (root / "BE" / "tasks").read_text() == want_be
    assert (root / "LSR" / "tasks").read_text() == "4321\n4322\n4323\n4400\n"
    assert (root / "LS" / "tasks").read_text() == ""
    strategy.run_once()  # nothing new
    assert (root / "BE" / "tasks").read_text() == want_be


def test_without_resctrl_mount_logs_once_and_does_nothing(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "sys-fs").mkdir()
    strategy = _strategy(tmp_path, _slo(UPSTREAM_POLICY))
    with caplog.at_level(logging.DEBUG, logger="koordlet.qosmanager.resctrl"):
        strategy.run_once()
        strategy.run_once()
    assert [r.getMessage() for r in caplog.records] == [
        "resctrlReconcile skipped: resctrl with L3 CAT is not mounted "
        f"({tmp_path}/sys-fs/resctrl/info/L3/cbm_mask not found)"]
    assert list((tmp_path / "sys-fs").iterdir()) == []


def test_no_node_slo_does_nothing(tmp_path: Path) -> None:
    root = resctrl_tree(tmp_path / "sys-fs")
    _strategy(tmp_path, None).run_once()
    assert not (root / "BE").exists()
