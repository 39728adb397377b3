"""PodResourceCollector on this machine's real cgroup v1 hierarchy, in a test-owned subtree."""

import os
import subprocess
import sys
import time

import pytest

from koordlet.metriccache import metric_types as mt
from koordlet.metricsadvisor.framework import PodCgroup
from koordlet.metricsadvisor.podresource import PodResourceCollector
from koordlet.resourceexecutor.reader import CGROUP_V1, CgroupReader
from koordlet.util.system.testing import real_cgroup_v1_tree

SUBSYSTEMS = ("cpuacct", "memory")


@pytest.fixture
def pod_cgroup():
    """A test-owned pod cgroup on this machine's real v1 hierarchy (removed afterwards)."""
    with real_cgroup_v1_tree() as env:
        yield env.root, env.prefix


def test_busy_process_in_pod_cgroup_reads_about_one_core(pod_cgroup):
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
        pod = PodCgroup("uid-1", rel)
        collector = PodResourceCollector(CgroupReader(root, CGROUP_V1), lambda: [pod])
        collector.collect(time.time())
        time.sleep(1.5)
        samples = {s.kind: s.value for s in collector.collect(time.time())}
    finally:
        busy.kill()
        busy.wait()
    assert samples[mt.POD_CPU_USAGE] == pytest.approx(1.0, abs=0.25)
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
