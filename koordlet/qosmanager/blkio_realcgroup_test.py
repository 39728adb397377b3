"""BlkioReconcile on this machine's real cgroup v1 blkio controller, in a test-owned subtree
(kubepods, the BestEffort dir and a BE pod's dir, cgroupfs layout), with the node's real disks
read from /sys/block.

The mainline kernel keeps one line per throttled device in `blkio.throttle.*_device` and drops
the line when the throttle is set to 0; it has no `blkio.cost.*` (Anolis). So: the BE class's
and the pod's throttles appear as the kernel's lines for the disk, the missing cost files are
said once each and nothing else fails, and when the NodeSLO drops the block and the pod's
annotation is emptied, the lines are gone again.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from api.slo.v1alpha1.nodeslo import NodeSLO
from koordlet.metriccache.metric_cache import MetricCache
from koordlet.qosmanager.blkio import IO_WEIGHT, READ_BPS, READ_IOPS, WRITE_IOPS, BlkIOReconcile
from koordlet.qosmanager.framework import Context
from koordlet.qosmanager.testing import FakeStates, pod_with_containers
from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.util.storageinfo import SysfsStorageInfo
from koordlet.util.system.config import Config as SystemConfig
from koordlet.util.system.testing import make_real_cgroup_dir, real_cgroup_v1_tree
from pkg.features import koordlet_feature_gate
from pkg.features.koordlet_features import BLKIO_RECONCILE

BLKIO = ("blkio",)


def a_disk() -> tuple[str, str]:
    """A disk of this machine and its major:minor, as the strategy finds them."""
    info = SysfsStorageInfo("/sys", "/proc").load()
    if not info.disk_number:
        pytest.skip("this machine has no block disk")
    disk = sorted(info.disk_number)[0]
    return disk, info.disk_number[disk]


def slo(blocks: list[dict]) -> NodeSLO:
    return NodeSLO.model_validate({"metadata": {"name": "node-1"}, "spec": {
        "resourceQOSStrategy": {"beClass": {"blkioQOS": {"enable": True, "blocks": blocks}}}}})


def lines(path: Path) -> list[str]:
    return path.read_text().split("\n")[:-1]


def test_real_v1_blkio(caplog) -> None:
    disk, number = a_disk()
    blocks = [{"name": disk, "type": "device",
               "ioCfg": {"readIOPS": 2000, "writeIOPS": 1000, "readBPS": 10485760}}]
    pod = pod_with_containers("be", "BE", "BestEffort", [({}, {})], {
        "koordinator.sh/blkioQOS": json.dumps({"blocks": [
            {"name": disk, "type": "device", "ioCfg": {"readIOPS": 500}}]})})
    states = FakeStates(None, slo(blocks), [pod])
    with real_cgroup_v1_tree(controllers=BLKIO) as env:
        pod_dir = env.pod_dir("BestEffort", "be")
        make_real_cgroup_dir(env, pod_dir, BLKIO)
        blkio = Path(env.root, "blkio", env.prefix)
        be, pod_path = blkio / env.be_dir(), blkio / pod_dir
        gate = koordlet_feature_gate.copy()
        gate.set_enabled(BLKIO_RECONCILE, True)
        ctx = Context(env=env, executor=ResourceUpdateExecutor(), metric_cache=MetricCache(),
                      states=states, feature_gate=gate, system=SystemConfig.host_mode())
        strategy = BlkIOReconcile(ctx)
        with caplog.at_level(logging.INFO, logger="koordlet.qosmanager.blkio"):
            strategy.run_once()
            strategy.run_once()
        assert lines(be / READ_IOPS) == [f"{number} 2000"]
        assert lines(be / WRITE_IOPS) == [f"{number} 1000"]
        assert lines(be / READ_BPS) == [f"{number} 10485760"]
        assert lines(be / "blkio.throttle.write_bps_device") == []  # 0: no throttle
        assert lines(pod_path / READ_IOPS) == [f"{number} 500"]
        if not os.path.exists(be / IO_WEIGHT):  # a mainline kernel
            lacking = [r.getMessage() for r in caplog.records
                       if r.getMessage().startswith("blkio: skipping")]
            assert len(lacking) == 1 and IO_WEIGHT in lacking[0]

        states.node_slo = slo([])
        pod["metadata"]["annotations"]["koordinator.sh/blkioQOS"] = ""
        strategy.run_once()
        for name in (READ_IOPS, WRITE_IOPS, READ_BPS):
            assert lines(be / name) == []
        assert lines(pod_path / READ_IOPS) == []
