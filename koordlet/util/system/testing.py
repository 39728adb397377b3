"""Test trees for cgroup code (shared by the tests of util/system, resourceexecutor and later
qosmanager/runtimehooks; a test module cannot import another one under Bazel).

`real_cgroup_v1_tree` makes a test-owned subtree `koordlet-test-<random>` under each v1
controller of this machine's `/sys/fs/cgroup` (cpu, cpuacct, cpuset and memory unless a test
names others, e.g. blkio) and removes it afterwards, children first. When
the cgroup filesystem is absent the test is skipped with that reason; when it is present but
not writable the test fails loudly, since enforcement would then be untested.
`shield_from_outside_load` gives such a subtree the highest CPU weight, for tests that measure
how much CPU their processes use.
`fake_v2_tree` lays out a cgroup v2 hierarchy of plain files in a temp dir.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from koordlet.util.system.cgroup_driver import CgroupDriver
from koordlet.util.system.cgroup_env import CgroupEnv
from koordlet.util.system.config import HOST_MODE_CGROUP_ROOT_DIR

V1_CONTROLLERS = ("cpu", "cpuacct", "cpuset", "memory")


@contextmanager
def real_cgroup_v1_tree(
    driver: CgroupDriver = CgroupDriver.CGROUPFS,
    root: str = HOST_MODE_CGROUP_ROOT_DIR,
    controllers: tuple[str, ...] = V1_CONTROLLERS,
) -> Iterator[CgroupEnv]:
    missing = [c for c in controllers if not os.path.isdir(os.path.join(root, c))]
    if missing:
        pytest.skip(f"no cgroup v1 filesystem: {root} lacks {', '.join(missing)}")
    env = CgroupEnv(
        root=root, v2=False, driver=driver, prefix=f"koordlet-test-{uuid.uuid4().hex[:8]}"
    )
    try:
        make_real_cgroup_dir(env, "", controllers)
        yield env
    finally:
        for controller in controllers:
            top = os.path.join(root, controller, env.prefix)
            if not os.path.isdir(top):
                continue
            for dirpath, _, _ in sorted(os.walk(top), key=lambda w: -w[0].count("/")):
                os.rmdir(dirpath)


# cgroup v1's highest cpu.shares (the same as cpu.weight 10000 on v2).
MAX_CPU_SHARES = 262144


def shield_from_outside_load(env: CgroupEnv) -> None:
    """Sets the test subtree's `cpu.shares` to the maximum, so that processes outside it (other
    tests, a busy CI machine; each weighs 1024 in the root cgroup) cannot starve the processes
    a test runs inside it: when the CPUs are contended, the subtree gets ~256 times the share of
    any one of them. Only the CFS weight changes, not any quota or cpuset a test checks, so a
    test keeps its meaning; it cannot help where the hypervisor lends the VM less than its CPUs
    (steal time). Processes must join the `cpu` controller's dirs for it to apply.
    """
    Path(env.root, "cpu", env.prefix, "cpu.shares").write_text(str(MAX_CPU_SHARES))


def make_real_cgroup_dir(
    env: CgroupEnv, relative_dir: str, controllers: tuple[str, ...] = V1_CONTROLLERS
) -> None:
    """Creates `relative_dir` (and its parents) below the test prefix in each of `controllers`
    (those of `real_cgroup_v1_tree`'s, which removes them).

    A new v1 cpuset cgroup starts with no CPUs and no memory nodes, so each new level copies its
    parent's `cpuset.cpus` and `cpuset.mems` as kubelet does.
    """
    parts = [p for p in relative_dir.split("/") if p]
    for controller in controllers:
        path = os.path.join(env.root, controller, env.prefix)
        for depth in range(len(parts) + 1):
            if depth:
                path = os.path.join(path, parts[depth - 1])
            if os.path.isdir(path):
                continue
            try:
                os.mkdir(path)
                if controller == "cpuset":
                    for name in ("cpuset.cpus", "cpuset.mems"):
                        value = Path(os.path.dirname(path), name).read_text().strip()
                        Path(path, name).write_text(value)
            except OSError as e:
                pytest.fail(
                    f"cgroup v1 is mounted at {env.root} but {path} cannot be set up ({e}); "
                    "these tests need a writable cgroup filesystem (run as root)"
                )


# Default contents of the files a fresh v2 cgroup has, for the fake tree (the memcg QoS files
# `memory.min/low/high/oom.group` are the upstream kernel's; the Anolis-only wmark and priority
# files are not).
_V2_FILES = {
    "cpu.max": "max 100000",
    "cpu.weight": "100",
    "cpu.stat": "usage_usec 0\nuser_usec 0\nsystem_usec 0",
    "memory.max": "max",
    "memory.current": "0",
    "memory.min": "0",
    "memory.low": "0",
    "memory.high": "max",
    "memory.oom.group": "0",
    "cpuset.cpus": "",
    "cpuset.cpus.effective": "0-7",
}


def fake_v2_tree(root: Path, relative_dirs: list[str]) -> CgroupEnv:
    """A v2 hierarchy at `root` with each dir of `relative_dirs` (and its parents) populated."""
    (root / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    for relative_dir in relative_dirs:
        path = root
        for part in [p for p in relative_dir.split("/") if p]:
            path = path / part
            path.mkdir(exist_ok=True)
            for name, content in _V2_FILES.items():
                if not (path / name).exists():
                    (path / name).write_text(content + "\n")
    return CgroupEnv.detect(str(root))
