"""Collection and metric-cache benchmark for koordlet (no upstream counterpart; the targets come
from issue 6): CPU time per collection tick with 200 pod cgroups (200 pods × 2 containers in a
fake cgroup v1 tree under a temp dir, with realistic ``cpuacct.usage`` and ``memory.stat``
files), and process RSS after a simulated hour of 1 s samples (node + 200 pods × CPU/memory
series) in the metric cache. The tick runs upstream's default collectors; a second row adds
the PageCacheCollector of ``--enable-pagecache-collector`` (off by default, as upstream).

Targets: < 20 ms CPU per tick, < 150 MiB RSS.
"""

from __future__ import annotations

import argparse
import tempfile
import time

from koordlet.metriccache import metric_types as mt
from koordlet.metriccache.metric_cache import MetricCache, MetricCacheConfig, MetricSample
from koordlet.metricsadvisor.framework import Collector
from koordlet.metricsadvisor.noderesource import NodeResourceCollector
from koordlet.metricsadvisor.pagecache import PageCacheCollector
from koordlet.metricsadvisor.podresource import PodResourceCollector
from koordlet.metricsadvisor.testing import fake_pods, write_cgroup
from koordlet.resourceexecutor.reader import CGROUP_V1, CgroupReader
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
