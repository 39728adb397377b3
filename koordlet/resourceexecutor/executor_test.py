"""ResourceUpdateExecutor on this machine's real cgroup v1, in a test-owned subtree."""

import errno
from collections.abc import Iterator
from pathlib import Path

import pytest

from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.resourceexecutor.reader import CgroupReader
from koordlet.resourceexecutor.updater import new_cgroup_updater
from koordlet.util.system.cgroup import CgroupWriteError, InvalidValueError
from koordlet.util.system.cgroup_env import CgroupEnv
from koordlet.util.system.testing import make_real_cgroup_dir, real_cgroup_v1_tree
from pkg.util.clock import FakeClock

UID = "0b0e2c1d-aaaa-bbbb-cccc-000000000001"


@pytest.fixture
def env() -> Iterator[CgroupEnv]:
    with real_cgroup_v1_tree() as env:
        yield env


def _tree(env: CgroupEnv) -> tuple[str, str, str]:
    qos = env.be_dir()
    pod = env.pod_dir("BestEffort", UID)
    container = env.container_dir(pod, "containerd://c0ffee")
    make_real_cgroup_dir(env, container)
    return qos, pod, container


def test_writes_read_back_from_the_kernel(env: CgroupEnv) -> None:
    _, pod, container = _tree(env)
    executor = ResourceUpdateExecutor()
    reader = CgroupReader.for_env(env)
    for resource_type, value in (
        ("cpu.cfs_quota_us", 50000),
        ("cpu.shares", 512),
        ("memory.limit_in_bytes", 2147483648),
    ):
        assert executor.update(False, new_cgroup_updater(env, resource_type, pod, value))
    # A leaf: its parent's cpuset cannot shrink under its children (see the leveled test).
    assert executor.update(False, new_cgroup_updater(env, "cpuset.cpus", container, "0"))
    assert reader.read_cpu_quota(pod) == 50000
    assert reader.read_cpu_period(pod) == 100000
    assert reader.read_cpu_shares(pod) == 512
    assert reader.read_memory_limit(pod) == 2147483648
    assert reader.read_cpuset_cpus(container) == {0}
    assert reader.read_memory_limit(container) == -1  # v1 "unlimited" reads as −1
    assert reader.read_cpu_usage(container) == 0
    # The same value again is no write (compared as CPU sets for cpuset.cpus).
    assert not executor.update(False, new_cgroup_updater(env, "cpu.shares", pod, 512))
    assert not executor.update(False, new_cgroup_updater(env, "cpuset.cpus", container, "0-0"))


def test_refusals_name_file_and_value(env: CgroupEnv) -> None:
    _, pod, container = _tree(env)
    executor = ResourceUpdateExecutor()
    with pytest.raises(InvalidValueError) as invalid:
        executor.update(False, new_cgroup_updater(env, "cpu.shares", pod, 1))
    assert "cpu.shares" in str(invalid.value) and "'1'" in str(invalid.value)
    assert Path(env.path("cpu.shares", pod)).read_text().strip() == "1024"  # untouched

    executor.update(False, new_cgroup_updater(env, "cpu.cfs_quota_us", pod, 100000))
    with pytest.raises(CgroupWriteError) as refused:  # v1: a child may not exceed its parent
        executor.update(False, new_cgroup_updater(env, "cpu.cfs_quota_us", container, 200000))
    assert refused.value.errno == errno.EINVAL
    assert refused.value.path == env.path("cpu.cfs_quota_us", container)
    assert "'200000'" in str(refused.value)


def test_gone_pod_dir_and_missing_kernel_feature_are_ignored(env: CgroupEnv) -> None:
    executor = ResourceUpdateExecutor()
    gone = env.pod_dir("BestEffort", "no-such-pod")
    assert not executor.update(False, new_cgroup_updater(env, "cpu.shares", gone, 2))
    assert executor.update_batch(False, [new_cgroup_updater(env, "cpu.shares", gone, 2)]) == []
    # memory.min is an Anolis file, looked for in the kubepods root.
    make_real_cgroup_dir(env, env.kube_qos_dir("Guaranteed"))
    updater = new_cgroup_updater(env, "memory.min", env.kube_qos_dir("Guaranteed"), 0)
    assert not executor.update(False, updater)


def test_cache_skips_unchanged_values_until_force_update(env: CgroupEnv) -> None:
    _, pod, _ = _tree(env)
    clock = FakeClock()
    executor = ResourceUpdateExecutor(clock=clock, force_update_seconds=60)
    shares = Path(env.path("cpu.shares", pod))
    assert executor.update(True, new_cgroup_updater(env, "cpu.shares", pod, 512))
    shares.write_text("1000")  # changed behind koordlet's back
    clock.step(30)
    assert not executor.update(True, new_cgroup_updater(env, "cpu.shares", pod, 512))
    assert shares.read_text().strip() == "1000"
    clock.step(30)  # 60 s after the write: rewritten, repairing the file
    assert executor.update(True, new_cgroup_updater(env, "cpu.shares", pod, 512))
    assert shares.read_text().strip() == "512"
    # A different value is never held back by the cache.
    assert executor.update(True, new_cgroup_updater(env, "cpu.shares", pod, 256))


def _levels(env: CgroupEnv, resource_type: str, dirs: tuple[str, ...], value: str):
    return [[new_cgroup_updater(env, resource_type, d, value)] for d in dirs]


def test_leveled_quota_narrows_children_first_and_widens_parents_first(env: CgroupEnv) -> None:
    dirs = _tree(env)
    executor = ResourceUpdateExecutor()
    reader = CgroupReader.for_env(env)
    assert executor.leveled_update_batch(_levels(env, "cpu.cfs_quota_us", dirs, "100000")) == []
    # Narrowing parent first would be EINVAL for the parent (below its children's quota).
    with pytest.raises(CgroupWriteError):
        executor.update(False, new_cgroup_updater(env, "cpu.cfs_quota_us", dirs[0], 50000))
    assert executor.leveled_update_batch(_levels(env, "cpu.cfs_quota_us", dirs, "50000")) == []
    assert [reader.read_cpu_quota(d) for d in dirs] == [50000, 50000, 50000]
    # Widening: a child first would be EINVAL (above its parent's quota).
    with pytest.raises(CgroupWriteError):
        executor.update(False, new_cgroup_updater(env, "cpu.cfs_quota_us", dirs[2], 200000))
    assert executor.leveled_update_batch(_levels(env, "cpu.cfs_quota_us", dirs, "200000")) == []
    assert [reader.read_cpu_quota(d) for d in dirs] == [200000, 200000, 200000]
    # Unlimited (−1) is the widest value: parents are lifted first.
    assert executor.leveled_update_batch(_levels(env, "cpu.cfs_quota_us", dirs, "-1")) == []
    assert [reader.read_cpu_quota(d) for d in dirs] == [-1, -1, -1]


def test_leveled_cpuset_shrinks_below_children(env: CgroupEnv) -> None:
    dirs = _tree(env)
    all_cpus = CgroupReader.for_env(env).read_cpuset_cpus("")
    if len(all_cpus) < 2:
        pytest.fail(f"this test needs at least 2 CPUs in the cpuset root, found {all_cpus}")
    executor = ResourceUpdateExecutor()
    reader = CgroupReader.for_env(env)
    lowest = str(min(all_cpus))
    # The kernel refuses to take CPUs from a parent while a child still uses them (EBUSY).
    with pytest.raises(CgroupWriteError) as busy:
        executor.update(False, new_cgroup_updater(env, "cpuset.cpus", dirs[0], lowest))
    assert busy.value.errno == errno.EBUSY
    assert executor.leveled_update_batch(_levels(env, "cpuset.cpus", dirs, lowest)) == []
    assert [reader.read_cpuset_cpus(d) for d in dirs] == [{int(lowest)}] * 3
    # Growing back: the union goes on top-down, then the exact set bottom-up.
    everything = ",".join(str(c) for c in sorted(all_cpus))
    assert executor.leveled_update_batch(_levels(env, "cpuset.cpus", dirs, everything)) == []
    assert [reader.read_cpuset_cpus(d) for d in dirs] == [all_cpus] * 3


def test_leveled_mixed_resources_and_failures_are_reported(env: CgroupEnv) -> None:
    qos, pod, container = _tree(env)
    executor = ResourceUpdateExecutor()
    errors = executor.leveled_update_batch(
        [
            [new_cgroup_updater(env, "cpu.cfs_quota_us", qos, 400000)],
            [
                new_cgroup_updater(env, "cpu.cfs_quota_us", pod, 300000),
                new_cgroup_updater(env, "cpu.shares", pod, 0),  # invalid: reported, others go on
                new_cgroup_updater(env, "memory.limit_in_bytes", pod, 1 << 30),
            ],
            [new_cgroup_updater(env, "cpu.cfs_quota_us", container, 100000)],
        ]
    )
    assert len(errors) == 1 and isinstance(errors[0], InvalidValueError)
    reader = CgroupReader.for_env(env)
    assert [reader.read_cpu_quota(d) for d in (qos, pod, container)] == [400000, 300000, 100000]
    assert reader.read_memory_limit(pod) == 1 << 30
