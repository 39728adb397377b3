"""PodResourceCollector on this machine's real cgroup v1 hierarchy, in a test-owned subtree."""

import os
import subprocess
import sys
import time

import psutil
import pytest

from koordlet.metriccache import metric_types as mt
from koordlet.metricsadvisor.framework import PodCgroup
from koordlet.metricsadvisor.podresource import PodResourceCollector
from koordlet.resourceexecutor.reader import CGROUP_V1, CgroupReader
from koordlet.util.system.testing import real_cgroup_v1_tree, shield_from_outside_load

# `cpu` for the shares of shield_from_outside_load, cpuacct and memory for the readings.
SUBSYSTEMS = ("cpu", "cpuacct", "memory")
# Rounding of the process's CPU time: each reading is short by under two clock ticks (USER_HZ
# 100: utime and stime each truncated), so a difference is off by up to 0.02 s in 1.5 s; and a
# margin.
TICKS = 2 * 0.01 / 1.5 + 0.01


def _cpu_seconds(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return times.user + times.system


@pytest.fixture
def pod_cgroup():
    """A test-owned pod cgroup on this machine's real v1 hierarchy (removed afterwards)."""
    with real_cgroup_v1_tree() as env:
        shield_from_outside_load(env)
        yield env.root, env.prefix


def test_busy_process_in_pod_cgroup_reads_the_cpu_it_got(pod_cgroup):
    """The collector's rate is the CPU time the kernel gave the process over the collector's
    own window. The process's CPU time (/proc/PID/stat, an independent counter) is read just
    before and just after each of the collector's two reads, so these bounds hold however
    long the test itself waits for a CPU; the shielded cgroup gets ~1 core on a busy machine."""
    root, rel = pod_cgroup

    def join_cgroup() -> None:
        # Join before exec: v1 memory charges stay where pages were first touched.
        for s in SUBSYSTEMS:
            with open(f"{root}/{s}/{rel}/cgroup.procs", "w") as f:
                f.write(str(os.getpid()))

    busy = subprocess.Popen(
        [sys.executable, "-c", "while True: x = [1] * 1000"], preexec_fn=join_cgroup
    )
    try:
        proc = psutil.Process(busy.pid)
        pod = PodCgroup("uid-1", rel)
        collector = PodResourceCollector(CgroupReader(root, CGROUP_V1), lambda: [pod])
        before0, t0 = _cpu_seconds(proc), time.time()
        collector.collect(t0)
        after0 = _cpu_seconds(proc)
        time.sleep(1.5)
        before1, t1 = _cpu_seconds(proc), time.time()
        samples = {s.kind: s.value for s in collector.collect(t1)}
        after1 = _cpu_seconds(proc)
    finally:
        busy.kill()
        busy.wait()
    cores = samples[mt.POD_CPU_USAGE]
    low, high = (before1 - after0) / (t1 - t0), (after1 - before0) / (t1 - t0)
    assert low - TICKS <= cores <= high + TICKS, (low, cores, high)
    assert cores >= 0.5, "the busy process hardly ran: the comparison means little"
    assert samples[mt.POD_MEMORY_USAGE] > 1 << 20  # the interpreter's anon memory


def test_kept_open_file_of_a_removed_cgroup_raises() -> None:
    """On real cgroupfs a kept descriptor re-reads live counters, and once the cgroup is removed
    the read fails (ENODEV), the reopen finds nothing and the reader raises: a gone pod is
    skipped, never reported with stale numbers."""
    with real_cgroup_v1_tree() as env:
        reader = CgroupReader(env.root, CGROUP_V1)
        first = reader.read_cpu_usage(env.prefix)
        stat = reader.read_memory_stat(env.prefix)
        assert first >= 0 and stat.usage() >= 0
        assert len(reader.files) == 2
        for s in ("cpuacct", "memory"):
            os.rmdir(os.path.join(env.root, s, env.prefix))
        with pytest.raises(OSError):
            reader.read_cpu_usage(env.prefix)
        with pytest.raises(OSError):
            reader.read_memory_stat(env.prefix)
        assert len(reader.files) == 0
        for s in ("cpuacct", "memory"):  # the fixture's cleanup expects every controller dir
            os.mkdir(os.path.join(env.root, s, env.prefix))
