"""The executor and reader on a fake cgroup v2 tree: v1 values are translated on the way in and
out (upstream `pkg/koordlet/util/system/cgroup2.go` and the v2 registry of
`cgroup_resource.go`)."""

from pathlib import Path

import pytest

from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.resourceexecutor.reader import CgroupReader
from koordlet.resourceexecutor.updater import new_cgroup_updater
from koordlet.util.system.cgroup import MalformedCgroupFileError, ResourceUnsupportedError
from koordlet.util.system.cgroup_driver import CgroupDriver
from koordlet.util.system.cgroup_env import CgroupEnv
from koordlet.util.system.testing import fake_v2_tree

UID = "0b0e2c1d-aaaa-bbbb-cccc-000000000002"
POD = (
    f"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{UID.replace('-', '_')}.slice"
)
CONTAINER = f"{POD}/cri-containerd-c0ffee.scope"


@pytest.fixture
def env(tmp_path: Path) -> CgroupEnv:
    return fake_v2_tree(tmp_path, [CONTAINER])


def _file(env: CgroupEnv, relative: str) -> str:
    return Path(env.root, relative).read_text().strip()


def test_detected_as_systemd_v2_with_upstream_layout(env: CgroupEnv) -> None:
    assert (env.v2, env.driver) == (True, CgroupDriver.SYSTEMD)
    pod = env.pod_dir("BestEffort", UID)
    assert pod == POD
    assert env.container_dir(pod, "containerd://c0ffee") == CONTAINER


def test_v1_values_are_written_as_v2(env: CgroupEnv) -> None:
    executor = ResourceUpdateExecutor()
    for resource_type, value in (
        ("cpu.cfs_quota_us", 50000),
        ("cpu.shares", 1024),
        ("memory.limit_in_bytes", 2147483648),
        ("cpuset.cpus", "0-1"),
    ):
        assert executor.update(False, new_cgroup_updater(env, resource_type, POD, value))
    assert _file(env, f"{POD}/cpu.max") == "50000"  # the quota alone; the kernel keeps the period
    assert _file(env, f"{POD}/cpu.weight") == "39"
    assert _file(env, f"{POD}/memory.max") == "2147483648"
    assert _file(env, f"{POD}/cpuset.cpus") == "0-1"

    Path(env.root, POD, "cpu.max").write_text("50000 100000\n")  # as the kernel shows it
    executor.update(False, new_cgroup_updater(env, "cpu.cfs_quota_us", POD, -1))
    executor.update(False, new_cgroup_updater(env, "memory.limit_in_bytes", POD, -1))
    assert _file(env, f"{POD}/cpu.max") == "max"
    assert _file(env, f"{POD}/memory.max") == "max"


def test_reads_translate_back_to_v1_units(env: CgroupEnv) -> None:
    Path(env.root, POD, "cpu.max").write_text("50000 100000\n")
    Path(env.root, POD, "cpu.weight").write_text("100\n")
    Path(env.root, POD, "cpuset.cpus.effective").write_text("2-3\n")
    Path(env.root, POD, "cpu.stat").write_text("usage_usec 1500\nuser_usec 1000\n")
    reader = CgroupReader.for_env(env)
    assert (reader.read_cpu_quota(POD), reader.read_cpu_period(POD)) == (50000, 100000)
    assert reader.read_cpu_shares(POD) == 2597
    assert reader.read_cpuset_cpus(POD) == {2, 3}
    assert reader.read_cpu_usage(POD) == 1_500_000
    assert reader.read_memory_limit(POD) == -1  # "max"
    assert reader.read_cpu_quota(CONTAINER) == -1


def test_unlimited_over_max_is_no_write(env: CgroupEnv) -> None:
    executor = ResourceUpdateExecutor()
    # Fresh cgroups hold "max 100000" and "max": −1 asks for what is already there.
    assert not executor.update(False, new_cgroup_updater(env, "cpu.cfs_quota_us", POD, -1))
    assert not executor.update(False, new_cgroup_updater(env, "memory.limit_in_bytes", POD, -1))
    assert _file(env, f"{POD}/cpu.max") == "max 100000"


def test_leveled_quota_merge_reads_cpu_max(env: CgroupEnv) -> None:
    executor = ResourceUpdateExecutor()
    dirs = (env.be_dir(), POD, CONTAINER)
    for d in dirs:
        Path(env.root, d, "cpu.max").write_text("200000 100000\n")
    # Narrowing: the merge pass compares with cpu.max's quota and leaves it; one exact write each.
    levels = [[new_cgroup_updater(env, "cpu.cfs_quota_us", d, 50000)] for d in dirs]
    assert executor.leveled_update_batch(levels) == []
    assert [_file(env, f"{d}/cpu.max") for d in dirs] == ["50000"] * 3


def test_blkio_cannot_be_used_on_v2(env: CgroupEnv) -> None:
    with pytest.raises(ResourceUnsupportedError):
        new_cgroup_updater(env, "blkio.cost.weight", POD, 50)


@pytest.mark.parametrize(("content", "quota", "period"), [
    ("max", -1, 100000), ("max 100000", -1, 100000), ("50000", 50000, 100000),
    ("20000 50000", 20000, 50000)])
def test_cpu_max_reads_with_or_without_period(env: CgroupEnv, content: str, quota: int,
                                              period: int) -> None:
    Path(env.root, POD, "cpu.max").write_text(content + "\n")
    reader = CgroupReader.for_env(env)
    assert (reader.read_cpu_quota(POD), reader.read_cpu_period(POD)) == (quota, period)


def test_a_garbled_cpu_max_is_named_and_never_written_over(env: CgroupEnv) -> None:
    Path(env.root, POD, "cpu.max").write_text("garbage\n")
    path = str(Path(env.root, POD, "cpu.max"))
    reader = CgroupReader.for_env(env)
    for read in (reader.read_cpu_quota, reader.read_cpu_period):
        with pytest.raises(MalformedCgroupFileError, match=path):
            read(POD)
    executor = ResourceUpdateExecutor()
    with pytest.raises(MalformedCgroupFileError, match=path):
        executor.update(False, new_cgroup_updater(env, "cpu.cfs_quota_us", POD, 50000))
    # A batch names it among its failures and goes on with the other dirs.
    levels = [[new_cgroup_updater(env, "cpu.cfs_quota_us", d, 50000)] for d in (POD, CONTAINER)]
    errors = executor.leveled_update_batch(levels)
    assert [e.path for e in errors if isinstance(e, MalformedCgroupFileError)] == [path]
    assert _file(env, f"{POD}/cpu.max") == "garbage"
    assert _file(env, f"{CONTAINER}/cpu.max") == "50000"


def test_garbled_reads_name_the_file(env: CgroupEnv) -> None:
    for name, content in (("cpu.weight", "x"), ("cpuset.cpus.effective", "0-"),
                          ("memory.max", "lots"), ("cpu.stat", "usage_usec x")):
        Path(env.root, POD, name).write_text(content + "\n")
    reader = CgroupReader.for_env(env)
    for read, name in ((reader.read_cpu_shares, "cpu.weight"),
                       (reader.read_cpuset_cpus, "cpuset.cpus.effective"),
                       (reader.read_memory_limit, "memory.max"),
                       (reader.read_cpu_usage, "cpu.stat")):
        with pytest.raises(MalformedCgroupFileError, match=name):
            read(POD)
