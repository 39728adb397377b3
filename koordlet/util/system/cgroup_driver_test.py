from pathlib import Path

import pytest

from koordlet.util.system.cgroup_driver import (
    CgroupDriver,
    container_relative_dir,
    detect_cgroup_driver,
    is_cgroup_v2,
    kube_qos_relative_dir,
    pod_relative_dir,
)
from koordlet.util.system.cgroup_env import CgroupEnv

UID = "6f1c2b3a-1111-2222-3333-444455556666"
UID_ = "6f1c2b3a_1111_2222_3333_444455556666"


@pytest.mark.parametrize(
    ("qos", "systemd", "cgroupfs"),
    [
        ("Guaranteed", "kubepods.slice", "kubepods"),
        ("Burstable", "kubepods.slice/kubepods-burstable.slice", "kubepods/burstable"),
        ("BestEffort", "kubepods.slice/kubepods-besteffort.slice", "kubepods/besteffort"),
    ],
)
def test_kube_qos_dirs(qos: str, systemd: str, cgroupfs: str) -> None:
    assert kube_qos_relative_dir(CgroupDriver.SYSTEMD, qos) == systemd
    assert kube_qos_relative_dir(CgroupDriver.CGROUPFS, qos) == cgroupfs


@pytest.mark.parametrize(
    ("qos", "systemd", "cgroupfs"),
    [
        ("Guaranteed", f"kubepods.slice/kubepods-pod{UID_}.slice", f"kubepods/pod{UID}"),
        (
            "Burstable",
            f"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID_}.slice",
            f"kubepods/burstable/pod{UID}",
        ),
        (
            "BestEffort",
            f"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{UID_}.slice",
            f"kubepods/besteffort/pod{UID}",
        ),
    ],
)
def test_pod_dirs_use_underscored_uid_in_systemd_slices(
    qos: str, systemd: str, cgroupfs: str
) -> None:
    assert pod_relative_dir(CgroupDriver.SYSTEMD, qos, UID) == systemd
    assert pod_relative_dir(CgroupDriver.CGROUPFS, qos, UID) == cgroupfs


@pytest.mark.parametrize(
    ("container_id", "scope"),
    [
        ("containerd://abc123", "cri-containerd-abc123.scope"),
        ("abc123", "cri-containerd-abc123.scope"),
        ("docker://abc123", "docker-abc123.scope"),
        ("pouch://abc123", "pouch-abc123.scope"),
        ("cri-o://abc123", "crio-abc123.scope"),
    ],
)
def test_container_dirs(container_id: str, scope: str) -> None:
    pod = pod_relative_dir(CgroupDriver.SYSTEMD, "BestEffort", UID)
    assert container_relative_dir(CgroupDriver.SYSTEMD, pod, container_id) == f"{pod}/{scope}"
    cg_pod = pod_relative_dir(CgroupDriver.CGROUPFS, "BestEffort", UID)
    assert container_relative_dir(CgroupDriver.CGROUPFS, cg_pod, container_id) == (
        f"{cg_pod}/abc123"
    )


def test_unknown_runtime_is_an_error_naming_the_id() -> None:
    with pytest.raises(ValueError, match="rkt://x"):
        container_relative_dir(CgroupDriver.SYSTEMD, "p", "rkt://x")


def test_detection_on_v1_and_v2_trees(tmp_path: Path) -> None:
    v1 = tmp_path / "v1"
    (v1 / "cpu" / "kubepods").mkdir(parents=True)
    assert not is_cgroup_v2(str(v1))
    assert detect_cgroup_driver(str(v1 / "cpu")) is CgroupDriver.CGROUPFS
    env = CgroupEnv.detect(str(v1))
    assert (env.v2, env.driver) == (False, CgroupDriver.CGROUPFS)
    assert env.path("cpu.cfs_quota_us", env.be_dir()) == str(
        v1 / "cpu/kubepods/besteffort/cpu.cfs_quota_us"
    )

    v2 = tmp_path / "v2"
    (v2 / "kubepods.slice").mkdir(parents=True)
    (v2 / "cgroup.controllers").write_text("cpu memory\n")
    env = CgroupEnv.detect(str(v2))
    assert (env.v2, env.driver) == (True, CgroupDriver.SYSTEMD)
    assert env.path("cpu.cfs_quota_us", env.be_dir()) == str(
        v2 / "kubepods.slice/kubepods-besteffort.slice/cpu.max"
    )
    assert env.path("cpuacct.usage", env.be_dir()).endswith("kubepods-besteffort.slice/cpu.stat")


def test_no_kubepods_dir_falls_back_to_systemd(tmp_path: Path) -> None:
    (tmp_path / "cpu").mkdir()
    assert CgroupEnv.detect(str(tmp_path)).driver is CgroupDriver.SYSTEMD
