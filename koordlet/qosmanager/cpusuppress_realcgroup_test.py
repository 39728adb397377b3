"""cpusuppress on this machine's real cgroup v1, in a test-owned subtree (issue 6, Done when).

A busy BE process and a busy prod (Burstable) process run in pod cgroups of the tree; the real
PodResourceCollector feeds pod usage into a metric cache. Node usage comes from the cpuacct
usage of the test tree's root instead of /proc/stat, so other load on this (2-core) machine
cannot move the allowance: the node is the tree, with a declared capacity of 2 cores. With a
65 % threshold the BE allowance is 1300m − ~1000m prod = ~300m, so the BE quota drops to
~30000 and the BE process is held near 0.3 core; after the prod process stops the quota grows
back 20000 (10 % of the node) per round to 130000 and the BE process gets a full core again.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest

from koordlet.metriccache import metric_types as mt
from koordlet.metriccache.metric_cache import MetricCache, MetricSample
from koordlet.metricsadvisor.framework import PodCgroup
from koordlet.metricsadvisor.nodeinfo import read_cpu_topology
from koordlet.metricsadvisor.podresource import PodResourceCollector
from koordlet.qosmanager.cpusuppress import CPUSuppress
from koordlet.qosmanager.framework import Context
from koordlet.qosmanager.testing import FakeStates, node, node_slo, pod
from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.resourceexecutor.reader import CGROUP_V1, CgroupReader
from koordlet.util.system.cgroup_env import CgroupEnv
from koordlet.util.system.testing import make_real_cgroup_dir, real_cgroup_v1_tree
from pkg.features import koordlet_feature_gate

BUSY = [sys.executable, "-c", "while True: pass"]


def _spawn(env: CgroupEnv, relative_dir: str) -> subprocess.Popen:
    def join() -> None:
        # Join before exec so every cycle of the child is charged to the pod cgroup.
        for controller in ("cpu", "cpuacct", "cpuset", "memory"):
            with open(
                os.path.join(env.root, controller, env.prefix, relative_dir, "cgroup.procs"), "w"
            ) as f:
                f.write(str(os.getpid()))

    return subprocess.Popen(BUSY, preexec_fn=join)


class TreeNodeCollector:
    """Node CPU usage = cpuacct usage rate of the test tree's root (see module docstring)."""

    def __init__(self, reader: CgroupReader, root_dir: str) -> None:
        self.reader, self.root_dir = reader, root_dir
        self._last: tuple[int, float] | None = None

    def collect(self, now: float) -> list[MetricSample]:
        cur = (self.reader.read_cpu_usage(self.root_dir), now)
        last, self._last = self._last, cur
        if last is None:
            return []
        return [
            MetricSample(mt.NODE_CPU_USAGE, {}, now, (cur[0] - last[0]) / ((now - last[1]) * 1e9))
        ]


@pytest.fixture
def env() -> Iterator[CgroupEnv]:
    with real_cgroup_v1_tree() as env:
        yield env


def _be_cores(env: CgroupEnv, be_pod_dir: str, seconds: float) -> float:
    reader = CgroupReader.for_env(env)
    start = reader.read_cpu_usage(be_pod_dir)
    time.sleep(seconds)
    return (reader.read_cpu_usage(be_pod_dir) - start) / (seconds * 1e9)


def _tick_until(tick: Callable[[], None], read: Callable[[], int],
                done: Callable[[int], bool], rounds: int) -> int:
    """Runs up to ``rounds`` one-second rounds until ``done(read())``; the last value read."""
    value = read()
    for _ in range(rounds):
        time.sleep(1.0)
        tick()
        value = read()
        if done(value):
            break
    return value


def test_be_suppressed_under_prod_load_and_released_after(env: CgroupEnv) -> None:
    be_pod, prod_pod = pod("be-1", "BE", "BestEffort"), pod("prod-1", "LS", "Burstable")
    be_dir, prod_dir = env.pod_dir("BestEffort", "be-1"), env.pod_dir("Burstable", "prod-1")
    for d in (be_dir, prod_dir):
        make_real_cgroup_dir(env, d)
    cache = MetricCache()
    cache.set(mt.NODE_CPU_INFO_KEY, read_cpu_topology())
    states = FakeStates(
        node=node("2"), node_slo=node_slo(True, threshold=65), pods=[be_pod, prod_pod]
    )
    gate = koordlet_feature_gate.copy()
    ctx = Context(
        env=env,
        executor=ResourceUpdateExecutor(),
        metric_cache=cache,
        states=states,
        feature_gate=gate,
    )
    plugin = CPUSuppress(ctx)
    reader = CgroupReader(env.root, CGROUP_V1)
    pods = [
        PodCgroup("be-1", f"{env.prefix}/{be_dir}"),
        PodCgroup("prod-1", f"{env.prefix}/{prod_dir}"),
    ]
    collectors = [PodResourceCollector(reader, lambda: pods), TreeNodeCollector(reader, env.prefix)]
    quota = CgroupReader.for_env(env)

    def tick() -> None:
        now = time.time()
        for c in collectors:
            cache.append(c.collect(now))
        plugin.run_once()

    be = _spawn(env, be_dir)
    prod = _spawn(env, prod_dir)
    try:
        tick()  # primes the CPU rates
        # A round acts on the last second's usage, so it takes a few rounds; more where the
        # host lends this VM less than a whole CPU for a second (seen in CI: prod at 0.54).
        suppressed = _tick_until(tick, lambda: quota.read_cpu_quota(env.be_dir()),
                                 lambda q: 2000 <= q <= 60000, rounds=10)
        assert 2000 <= suppressed <= 60000, suppressed  # ~1300m − 1000m prod = ~30000
        assert _be_cores(env, be_dir, 2.0) < 0.5

        prod.kill()
        prod.wait()
        # 30000 → 130000 in steps of 20000. Back to the whole allowance (1300m), less the
        # tree's own "system" usage: the root's cpuacct is read a moment after the pods', so
        # node − pods is a few millicores of noise.
        released = _tick_until(tick, lambda: quota.read_cpu_quota(env.be_dir()),
                               lambda q: 127400 <= q <= 130000, rounds=12)
        assert 127400 <= released <= 130000, released
        assert _be_cores(env, be_dir, 2.0) > 0.8

        states.node_slo = node_slo(False)
        tick()
        assert quota.read_cpu_quota(env.be_dir()) == -1
    finally:
        for p in (be, prod):
            p.kill()
            p.wait()
