"""ResctrlReconcile reading a container's threads from this machine's real cgroup v1 (a
test-owned subtree): a running process joins the BE container's cgroup and its thread ids end
up in the BE group's `tasks`. The machine has no resctrl mount, so the resctrl filesystem is
laid out as plain files under a temp dir the way the kernel shows it.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from koordlet.metriccache.metric_cache import MetricCache
from koordlet.qosmanager.framework import Context
from koordlet.qosmanager.resctrl import ResctrlReconcile
from koordlet.qosmanager.testing import FakeStates
from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.statesinformer.states_view import parse_node_slo
from koordlet.util.system.cgroup_env import CgroupEnv
from koordlet.util.system.config import Config as SystemConfig
from koordlet.util.system.testing import make_real_cgroup_dir, real_cgroup_v1_tree
from pkg.features import koordlet_feature_gate

CID = "containerd://c0ffee"


@pytest.fixture
def env() -> Iterator[CgroupEnv]:
    with real_cgroup_v1_tree() as env:
        yield env


def _resctrl(sys_fs: Path) -> Path:
    root = sys_fs / "resctrl"
    (root / "info" / "L3").mkdir(parents=True)
    (root / "info" / "L3" / "cbm_mask").write_text("7ff\n")
    (root / "schemata").write_text("L3:0=7ff\n")
    for group in ("LSR", "LS", "BE"):
        (root / group).mkdir()
        (root / group / "schemata").write_text("L3:0=7ff\n")
        (root / group / "tasks").write_text("")
    return root


def test_be_container_threads_join_the_be_group(env: CgroupEnv, tmp_path: Path) -> None:
    pod_dir = env.pod_dir("BestEffort", "be-1")
    container = env.container_dir(pod_dir, CID)
    make_real_cgroup_dir(env, container)
    root = _resctrl(tmp_path / "sys-fs")
    be = {"metadata": {"name": "be", "namespace": "default", "uid": "be-1",
                       "labels": {"koordinator.sh/qosClass": "BE"}},
          "spec": {"containers": [{"name": "c"}]},
          "status": {"phase": "Running", "qosClass": "BestEffort",
                     "containerStatuses": [{"name": "c", "containerID": CID}]}}
    slo = parse_node_slo({"metadata": {"name": "node-1"},
                          "spec": {"resourceQOSStrategy": {
                              "beClass": {"resctrlQOS": {"enable": True}}}}})
    ctx = Context(env=env, executor=ResourceUpdateExecutor(), metric_cache=MetricCache(),
                  states=FakeStates(node_slo=slo, pods=[be]),
                  feature_gate=koordlet_feature_gate.copy(),
                  system=SystemConfig(sys_fs_root_dir=str(tmp_path / "sys-fs")))
    # Two threads: the main one and one blocked reading stdin.
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys, threading\n"
         "threading.Thread(target=sys.stdin.read).start()\nprint('up', flush=True)\n"
         "sys.stdin.read()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        Path(env.root, "cpu", env.prefix, container, "cgroup.procs").write_text(str(proc.pid))
        assert proc.stdout is not None and proc.stdout.readline() == "up\n"
        threads = {int(p.name) for p in Path(f"/proc/{proc.pid}/task").iterdir()}
        ResctrlReconcile(ctx).run_once()
        written = {int(t) for t in (root / "BE" / "tasks").read_text().split()}
        assert len(threads) == 2 and written == threads
        # BE's default share of the L3: the lower 30 % of 11 ways.
        assert (root / "BE" / "schemata").read_text() == "L3:0=f;\n"
    finally:
        proc.kill()
        proc.wait()
