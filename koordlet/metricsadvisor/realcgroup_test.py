"""PodResourceCollector on this machine's real cgroup v1 hierarchy, in a test-owned subtree."""

import os
import subprocess
import sys
import time
import uuid

import pytest

from koordlet.metriccache import metric_types as mt
from koordlet.metricsadvisor.cgroupreader import CGROUP_V1, CgroupReader, PodCgroup
from koordlet.metricsadvisor.podresource import PodResourceCollector

ROOT = "/sys/fs/cgroup"
SUBSYSTEMS = ("cpuacct", "memory")


@pytest.fixture
def pod_cgroup():
    if not os.path.isdir(ROOT) or not all(os.path.isdir(f"{ROOT}/{s}") for s in SUBSYSTEMS):
        pytest.skip(f"no cgroup v1 cpuacct/memory hierarchy under {ROOT}")
    rel = f"koordlet-test-{uuid.uuid4().hex[:8]}"
    made = []
    try:
        for s in SUBSYSTEMS:
            os.mkdir(f"{ROOT}/{s}/{rel}")
            made.append(f"{ROOT}/{s}/{rel}")
    except OSError as e:
        pytest.fail(f"cgroup v1 at {ROOT} is not writable ({e}); these tests need real cgroups")
    try:
        yield rel
    finally:
        for d in made:
            os.rmdir(d)


def test_busy_process_in_pod_cgroup_reads_about_one_core(pod_cgroup):
    def join_cgroup() -> None:
        # Join before exec: v1 memory charges stay where pages were first touched.
        for s in SUBSYSTEMS:
            with open(f"{ROOT}/{s}/{pod_cgroup}/cgroup.procs", "w") as f:
                f.write(str(os.getpid()))

    busy = subprocess.Popen(
        [sys.executable, "-c", "while True: x = [1] * 1000"], preexec_fn=join_cgroup
    )
    try:
        pod = PodCgroup("uid-1", pod_cgroup)
        collector = PodResourceCollector(CgroupReader(ROOT, CGROUP_V1), lambda: [pod])
        collector.collect(time.time())
        time.sleep(1.5)
        samples = {s.kind: s.value for s in collector.collect(time.time())}
    finally:
        busy.kill()
        busy.wait()
    assert samples[mt.POD_CPU_USAGE] == pytest.approx(1.0, abs=0.25)
    assert samples[mt.POD_MEMORY_USAGE] > 1 << 20  # the interpreter's anon memory
