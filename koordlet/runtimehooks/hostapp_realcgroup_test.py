"""Host applications on this machine's real cgroup v1, in a test-owned subtree: an LS
application in its default dir (``host-latency-sensitive/<name>``) and a BE one under the
BestEffort kube-QoS dir, with a real process in the BE one.

The host-application reconciler writes only ``cpu.bvt_warp_ns`` (the one hook upstream
registers for host applications is GroupIdentity). An upstream kernel has no group identity:
there koordlet detects that once, and a round writes nothing, creates nothing and raises
nothing. On a kernel that has it (Anolis), each application gets its class's value instead.
The collector reads the application's real usage either way.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path

from api.slo.v1alpha1.host_application import HostApplicationSpec
from koordlet.metriccache import metric_types as mt
from koordlet.metricsadvisor.hostapplication import HostAppCgroup, HostApplicationCollector
from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.resourceexecutor.reader import CGROUP_V1, CgroupReader
from koordlet.runtimehooks.cgroupapply import CgroupApplier, HostAppReconciler
from koordlet.runtimehooks.hooks.groupidentity import GroupIdentityRule, probe_supported
from koordlet.runtimehooks.rule import Rules
from koordlet.util.system.host_app import host_app_relative_dir
from koordlet.util.system.testing import make_real_cgroup_dir, real_cgroup_v1_tree

LS_APP = HostApplicationSpec.model_validate({"name": "nginx", "qos": "LS"})
BE_APP = HostApplicationSpec.model_validate({
    "name": "yarn", "qos": "BE",
    "cgroupPath": {"base": "KubepodsBesteffort", "parentDir": "host-be", "relativePath": "yarn"}})
RULE = GroupIdentityRule(lsr_value=2, ls_value=2, be_value=-1, lsr_enabled=True,
                         ls_enabled=True, be_enabled=True)
MI = 1 << 20
# The child: ~64 MiB of anonymous memory, 0.3 s of CPU, then "ready" and it waits for stdin.
CHILD = ("import sys, time\n"
         "x = b'x' * (64 << 20)\n"
         "end = time.process_time() + 0.3\n"
         "while time.process_time() < end: pass\n"
         "print('ready', flush=True)\n"
         "sys.stdin.read()\n")


def test_reconciler_gives_each_app_its_class_where_the_kernel_has_group_identity(
        caplog) -> None:
    with real_cgroup_v1_tree() as env:
        dirs = {app.name: host_app_relative_dir(env.driver, app) for app in (LS_APP, BE_APP)}
        for d in ("kubepods", *dirs.values()):
            make_real_cgroup_dir(env, d)
        supported = probe_supported(env, "/proc")
        rules = Rules(group_identity=RULE, group_identity_supported=supported)
        reconciler = HostAppReconciler(lambda: [LS_APP, BE_APP], rules,
                                       CgroupApplier(env, ResourceUpdateExecutor()))
        with caplog.at_level(logging.DEBUG, logger="koordlet.runtimehooks.hooks.groupidentity"):
            assert reconciler.reconcile_once() == []
        bvt = {name: Path(env.path("cpu.bvt_warp_ns", d)) for name, d in dirs.items()}
        if supported:  # an Anolis kernel
            assert bvt["nginx"].read_text().strip() == "2"
            assert bvt["yarn"].read_text().strip() == "-1"
            return
        assert not any(p.exists() for p in bvt.values())
        for name in dirs:
            assert f"host application {name} left as it is" in caplog.text


def test_collector_reads_the_real_usage_of_a_process_in_the_app_cgroup() -> None:
    with real_cgroup_v1_tree() as env:
        app_dir = host_app_relative_dir(env.driver, BE_APP)
        make_real_cgroup_dir(env, app_dir)
        app = HostAppCgroup("yarn", os.path.join(env.prefix, app_dir))
        collector = HostApplicationCollector(CgroupReader(env.root, CGROUP_V1), lambda: [app])

        def join_cgroup() -> None:
            # Join before exec: v1 memory charges stay where pages were first touched.
            for s in ("cpu", "cpuacct", "memory"):
                Path(env.root, s, app.cgroup_dir, "cgroup.procs").write_text(str(os.getpid()))

        t0 = time.time()
        assert collector.collect(t0) == []  # primes
        child = subprocess.Popen([sys.executable, "-c", CHILD], preexec_fn=join_cgroup,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert child.stdout is not None and child.stdout.readline() == "ready\n"
            t1 = time.time()
            samples = {s.kind: s.value for s in collector.collect(t1)}
        finally:
            child.kill()
            child.wait()
    assert samples[mt.HOST_APPLICATION_CPU_USAGE] * (t1 - t0) >= 0.25  # its 0.3 s of CPU
    assert samples[mt.HOST_APPLICATION_MEMORY_USAGE] >= 64 * MI
    assert (samples[mt.HOST_APPLICATION_MEMORY_USAGE_WITH_PAGE_CACHE]
            >= samples[mt.HOST_APPLICATION_MEMORY_USAGE])
