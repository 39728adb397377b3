"""Writes of the per-device blkio files (upstream `CheckIfBlkQOSNeedUpdate` and
`CheckIfBlkRootConfigNeedUpdate` cases): an entry is compared with the device's line, not the
whole file. On a v1 blkio hierarchy of plain files in a temp dir laid out as the kernel does
(the kernel's one-line-per-device behaviour is in qosmanager/blkio_realcgroup_test.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from koordlet.resourceexecutor.updater import new_cgroup_updater
from koordlet.util.system.cgroup_driver import CgroupDriver
from koordlet.util.system.cgroup_env import CgroupEnv

READ_IOPS = "blkio.throttle.read_iops_device"


@pytest.fixture
def env(tmp_path: Path) -> CgroupEnv:
    kubepods = tmp_path / "blkio" / "kubepods"
    kubepods.mkdir(parents=True)
    for name in (READ_IOPS, "blkio.cost.weight"):
        (kubepods / name).write_text("253:0 100\n253:16 2048\n")
    (tmp_path / "blkio" / "blkio.cost.qos").write_text(
        "253:16 enable=1 ctrl=user rpct=95 rlat=3000 wpct=95 wlat=3000\n")
    return CgroupEnv(root=str(tmp_path), v2=False, driver=CgroupDriver.CGROUPFS)


@pytest.mark.parametrize(("resource_type", "value", "written"), [
    (READ_IOPS, "253:16 2048", False),  # the device's line already says so
    (READ_IOPS, "253:16 1024", True),
    (READ_IOPS, "253:16 0", True),  # 0 removes the device's line
    (READ_IOPS, "8:0 0", False),  # ... and a device without one has nothing to remove
    (READ_IOPS, "8:0 10", True),
    ("blkio.cost.weight", "253:0 100", False),
    ("blkio.cost.weight", "253:0 50", True),
])
def test_per_device_entries(env: CgroupEnv, resource_type: str, value: str,
                            written: bool) -> None:
    updater = new_cgroup_updater(env, resource_type, "kubepods", value)
    assert updater.update() is written


@pytest.mark.parametrize(("value", "written"), [
    ("253:16 enable=1 ctrl=user rpct=95 rlat=3000 wpct=95 wlat=3000", False),
    ("253:16 enable=1 ctrl=user rpct=90 rlat=3000 wpct=95 wlat=3000", True),
    ("253:16 enable=0", True),
])
def test_root_cost_qos(env: CgroupEnv, value: str, written: bool) -> None:
    assert new_cgroup_updater(env, "blkio.cost.qos", "", value).update() is written
