"""Collection and metric-cache benchmark for koordlet (no upstream counterpart; the targets come
from issue 6): CPU time per collection tick with 200 pod cgroups (200 pods × 2 containers in a
fake cgroup v1 tree under a temp dir, with realistic ``cpuacct.usage`` and ``memory.stat``
files), and process RSS after a simulated hour of 1 s samples (node + 200 pods × CPU/memory
series) in the metric cache. The tick runs upstream's default collectors; a second row adds
the PageCacheCollector of ``--enable-pagecache-collector`` (off by default, as upstream).

The qosmanager row (issue 20) runs one round of every strategy of ``STRATEGY_PLUGINS`` with all
their gates on (CPUSuppress, CPUEvict, MemoryEvict, CPUBurst, ResctrlReconcile,
CgroupReconcile, BlkioReconcile, SystemConfigReconcile) over a simulated node of 200 pods × 2
containers: the local cluster's fake cgroup v1 tree (an Anolis kernel's memcg files), a resctrl
filesystem laid out as plain files, one disk in /sys/block, a NodeSLO turning every strategy
on, and one collect interval of node, pod, container and BE metrics appended before each round,
below the eviction thresholds (the steady state: nothing to evict). Its figures are CPU ms per
round of each strategy and of all together, and the RSS once they ran.

Targets: < 20 ms CPU per tick, < 150 MiB RSS.
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from pathlib import Path
from typing import Any

from koordlet.metriccache import metric_types as mt
from koordlet.metriccache.metric_cache import MetricCache, MetricCacheConfig, MetricSample
from koordlet.metricsadvisor.framework import Collector
from koordlet.metricsadvisor.nodeinfo import CPUTopology, ProcessorInfo
from koordlet.metricsadvisor.noderesource import NodeResourceCollector
from koordlet.metricsadvisor.pagecache import PageCacheCollector
from koordlet.metricsadvisor.podresource import PodResourceCollector
from koordlet.metricsadvisor.testing import fake_pods, write_cgroup
from koordlet.qosmanager.framework import Context, KubeDict
from koordlet.qosmanager.register import STRATEGY_PLUGINS
from koordlet.qosmanager.testing import (
    FakeStates,
    pod_with_containers,
    resctrl_groups,
    resctrl_tree,
)
from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.resourceexecutor.reader import CGROUP_V1, CgroupReader
from koordlet.statesinformer.states_view import parse_node_slo
from koordlet.util.system.config import Config as SystemConfig
from koordlet.util.system.fake_tree import ensure_fake_v1_tree, ensure_pod_dirs, fake_v1_env
from pkg.features import koordlet_feature_gate
from pkg.util.clock import FakeClock
from pkg.util.process import rss_mib

TICK_TARGET_MS = 20.0
RSS_TARGET_MIB = 150.0


def bench_tick(n_pods: int, ticks: int, page_cache: bool = False) -> float:
    """Median CPU ms of one collection round (collect + append) over the fake tree."""
    with tempfile.TemporaryDirectory(prefix="koordlet-bench-") as root:
        pods = fake_pods(n_pods, 2, systemd=True)
        for i, p in enumerate(pods):
            mem = dict(inactive_anon=i << 20, active_anon=i << 21, inactive_file=i << 22)
            write_cgroup(root, CGROUP_V1, p.cgroup_dir, i * 10**9, **mem)
            for c in p.containers:
                write_cgroup(root, CGROUP_V1, c.cgroup_dir, i * 10**8, **mem)
        cache = MetricCache()
        reader = CgroupReader(root, CGROUP_V1)
        collectors: list[Collector] = [
            NodeResourceCollector(),
            PodResourceCollector(reader, lambda: pods),
        ]
        if page_cache:
            collectors.append(PageCacheCollector("/proc", reader, lambda: pods))
        costs = []
        now = time.time()
        for t in range(ticks + 1):
            start = time.process_time()
            for collector in collectors:
                cache.append(collector.collect(now + t))
            if t:  # the first tick only primes the CPU rates
                costs.append((time.process_time() - start) * 1000)
        costs.sort()
        return costs[len(costs) // 2]


# Every gate of the registered strategies (the Beta ones are on by default).
QOS_GATES = ("BECPUSuppress=true,CPUBurst=true,RdtResctrl=true,CgroupReconcile=true,"
             "BECPUEvict=true,CPUEvict=true,BEMemoryEvict=true,MemoryEvict=true,"
             "BlkIOReconcile=true,SystemConfig=true")
NODE_CORES = 96
GI = 1 << 30
_CLASS = {"cpuQOS": {"enable": True}, "resctrlQOS": {"enable": True},
          "memoryQOS": {"enable": True, "minLimitPercent": 50, "lowLimitPercent": 100,
                        "throttlingPercent": 80}}
QOS_NODE_SLO = {
    "metadata": {"name": "bench"},
    "spec": {
        "resourceUsedThresholdWithBE": {
            "enable": True, "cpuSuppressThresholdPercent": 65, "cpuSuppressPolicy": "cfsQuota",
            "memoryEvictThresholdPercent": 70, "cpuEvictBESatisfactionLowerPercent": 60,
            "cpuEvictBESatisfactionUpperPercent": 80, "cpuEvictThresholdPercent": 80,
            "evictEnabledPriorityThreshold": 5000},
        "resourceQOSStrategy": {"lsrClass": _CLASS, "lsClass": _CLASS, "beClass": _CLASS},
        "cpuBurstStrategy": {"policy": "auto", "cpuBurstPercent": 1000,
                             "cfsQuotaBurstPercent": 300, "cfsQuotaBurstPeriodSeconds": -1,
                             "sharePoolThresholdPercent": 50},
    },
}


def _qos_pods(n_pods: int) -> list[KubeDict]:
    """A tenth LSR (Guaranteed), four tenths LS (Burstable), half BE (batch resources, labelled
    eviction-enabled at a priority the thresholds allow), each with 2 containers."""
    pods = []
    for i in range(n_pods):
        if i % 10 == 0:
            res = {"cpu": "1", "memory": "2Gi"}
            pod = pod_with_containers(f"p{i}", "LSR", "Guaranteed", [(res, res)] * 2)
        elif i % 10 < 5:
            pod = pod_with_containers(f"p{i}", "LS", "Burstable", [
                ({"cpu": "500m", "memory": "1Gi"}, {"cpu": "2", "memory": "2Gi"})] * 2)
        else:
            res = {"kubernetes.io/batch-cpu": "500", "kubernetes.io/batch-memory": "1Gi"}
            pod = pod_with_containers(f"p{i}", "BE", "BestEffort", [(res, res)] * 2)
            pod["metadata"]["labels"]["koordinator.sh/eviction-enabled"] = "true"
            pod["spec"]["priority"] = 5000
        pods.append(pod)
    return pods


def _qos_samples(now: float, pods: list[KubeDict]) -> list[MetricSample]:
    """One collect interval: the node at 30 % CPU and 50 % memory, the BE pods satisfied."""
    out = [MetricSample(mt.NODE_CPU_USAGE, {}, now, NODE_CORES * 0.3),
           MetricSample(mt.NODE_MEMORY_USAGE, {}, now, NODE_CORES * 2 * GI)]
    out += [MetricSample(mt.NODE_BE, {mt.BE_RESOURCE: "cpu", mt.BE_ALLOCATION: a}, now, v)
            for a, v in (("usage", 20000.0), ("request", 50000.0), ("realLimit", 40000.0))]
    for pod in pods:
        uid = {mt.POD_UID: pod["metadata"]["uid"]}
        out.append(MetricSample(mt.POD_CPU_USAGE, uid, now, 0.1))
        out.append(MetricSample(mt.POD_MEMORY_USAGE, uid, now, 0.5 * GI))
        for status in pod["status"]["containerStatuses"]:
            cid = {mt.CONTAINER_ID: status["containerID"]}
            out.append(MetricSample(mt.CONTAINER_CPU_USAGE, cid, now, 0.05))
            out.append(MetricSample(mt.CONTAINER_CPU_THROTTLED, cid, now, 0.0))
    return out


def _qos_node(root: Path, pods: list[KubeDict], clock: FakeClock) -> Context:
    """The simulated node: its cgroup tree (with the containers' thread ids in `tasks`), its
    resctrl filesystem and /proc/cpuinfo, statesinformer's view and a metric cache."""
    cgroup = root / "cgroup"
    ensure_fake_v1_tree(str(cgroup), NODE_CORES)
    env = fake_v1_env(str(cgroup))
    ensure_pod_dirs(env, pods, NODE_CORES)
    tid = 1000
    for pod in pods:
        pod_dir = env.pod_dir(pod["status"]["qosClass"], pod["metadata"]["uid"])
        for status in pod["status"]["containerStatuses"]:
            tid += 1
            Path(env.path("tasks", env.container_dir(pod_dir, status["containerID"]))
                 ).write_text(f"{tid}\n")
    resctrl_groups(resctrl_tree(root / "sys-fs"))
    (root / "proc").mkdir()
    (root / "proc" / "cpuinfo").write_text("processor\t: 0\nvendor_id\t: GenuineIntel\n")
    (root / "proc" / "mounts").write_text("/dev/vda1 / ext4 rw 0 0\n")
    (root / "sys" / "block" / "vda").mkdir(parents=True)
    (root / "sys" / "block" / "vda" / "dev").write_text("253:0\n")
    node: dict[str, Any] = {"metadata": {"name": "bench"}, "status": {
        "capacity": {"cpu": str(NODE_CORES), "memory": f"{NODE_CORES * 4}Gi"},
        "allocatable": {"cpu": str(NODE_CORES), "memory": f"{NODE_CORES * 4}Gi"}}}
    cache = MetricCache()
    cache.set(mt.NODE_CPU_INFO_KEY, CPUTopology(
        [ProcessorInfo(i, i, 0, 0, "", 0) for i in range(NODE_CORES)]))
    gate = koordlet_feature_gate.copy()
    gate.set(QOS_GATES)
    return Context(env=env, executor=ResourceUpdateExecutor(clock), metric_cache=cache,
                   states=FakeStates(node, parse_node_slo(QOS_NODE_SLO), pods),
                   feature_gate=gate, clock=clock,
                   system=SystemConfig(sys_root_dir=str(root / "sys"),
                                       sys_fs_root_dir=str(root / "sys-fs"),
                                       proc_root_dir=str(root / "proc")))


def bench_qos(n_pods: int, ticks: int) -> tuple[dict[str, float], float, float]:
    """Median CPU ms of each strategy's round and of all of them in one tick, and the RSS
    (MiB) after ``ticks`` rounds; the first round, which writes every file once, is left out
    of the medians."""
    pods = _qos_pods(n_pods)
    with tempfile.TemporaryDirectory(prefix="koordlet-bench-qos-") as root:
        clock = FakeClock()
        ctx = _qos_node(Path(root), pods, clock)
        strategies = [factory(ctx) for factory in STRATEGY_PLUGINS.values()]
        off = [s.name for s in strategies if not s.enabled()]
        if off:
            raise RuntimeError(f"strategies not enabled: {off}")
        costs: dict[str, list[float]] = {s.name: [] for s in strategies}
        totals = []
        for t in range(ticks + 1):
            clock.step(1.0)
            ctx.metric_cache.append(_qos_samples(clock.now(), pods))
            total = 0.0
            for strategy in strategies:
                start = time.process_time()
                strategy.run_once()
                cost = (time.process_time() - start) * 1000
                total += cost
                if t:
                    costs[strategy.name].append(cost)
            if t:
                totals.append(total)
        rss = rss_mib()
    return {name: _median(c) for name, c in costs.items()}, _median(totals), rss


def _median(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 2]


def bench_hour(n_pods: int, seconds: int) -> tuple[float, int, float]:
    """RSS (MiB), series count and cache bytes after ``seconds`` of 1 s samples."""
    cache = MetricCache(MetricCacheConfig(metric_expire_seconds=seconds))
    uids = [{mt.POD_UID: f"pod-{i}"} for i in range(n_pods)]
    t0 = time.time() - seconds
    for s in range(seconds):
        now = t0 + s
        batch = [
            MetricSample(mt.NODE_CPU_USAGE, {}, now, 1.0),
            MetricSample(mt.NODE_MEMORY_USAGE, {}, now, 2.0),
        ]
        for props in uids:
            batch.append(MetricSample(mt.POD_CPU_USAGE, props, now, 0.5))
            batch.append(MetricSample(mt.POD_MEMORY_USAGE, props, now, 1e8))
        cache.append(batch)
    return rss_mib(), cache.series_count(), cache.allocated_bytes() / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m koordlet.bench")
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--ticks", type=int, default=200)
    parser.add_argument("--seconds", type=int, default=3600)
    args = parser.parse_args()

    # The strategies log what they change at info level; the bench shows only warnings.
    logging.basicConfig(level=logging.WARNING)
    per_strategy, qos_ms, qos_rss = bench_qos(args.pods, args.ticks)
    tick_ms = bench_tick(args.pods, args.ticks)
    page_cache_ms = bench_tick(args.pods, args.ticks, page_cache=True)
    rss, series, cache_mib = bench_hour(args.pods, args.seconds)
    rows = [
        (
            f"CPU per collection tick ({args.pods} pods x 2 containers)",
            f"{tick_ms:.2f} ms",
            f"< {TICK_TARGET_MS:.0f} ms",
            tick_ms < TICK_TARGET_MS,
        ),
        (
            "  the same with --enable-pagecache-collector (off by default)",
            f"{page_cache_ms:.2f} ms",
            "",
            None,
        ),
        (
            f"CPU per qosmanager round, every strategy on ({args.pods} pods x 2 containers)",
            f"{qos_ms:.2f} ms",
            f"< {TICK_TARGET_MS:.0f} ms",
            qos_ms < TICK_TARGET_MS,
        ),
        *((f"  {name}", f"{ms:.2f} ms", "", None) for name, ms in per_strategy.items()),
        (
            "RSS once the qosmanager rounds ran",
            f"{qos_rss:.1f} MiB",
            f"< {RSS_TARGET_MIB:.0f} MiB",
            qos_rss < RSS_TARGET_MIB,
        ),
        (
            f"RSS after {args.seconds} s of samples ({series} series, cache {cache_mib:.1f} MiB)",
            f"{rss:.1f} MiB",
            f"< {RSS_TARGET_MIB:.0f} MiB",
            rss < RSS_TARGET_MIB,
        ),
    ]
    print(f"{'measure':<70} {'value':>24} {'target':>10}  ok")
    for name, value, target, ok in rows:
        verdict = "" if ok is None else "yes" if ok else "NO"
        print(f"{name:<70} {value:>24} {target:>10}  {verdict}")


if __name__ == "__main__":
    main()
