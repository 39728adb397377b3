"""PodResourceCollector (upstream ``pkg/koordlet/metricsadvisor/collectors/podresource``):
pod and container CPU (cores, from two cgroup CPU-usage samples) and memory usage.

Pods or containers whose cgroup read fails are skipped, as upstream.
"""

from __future__ import annotations

from dataclasses import dataclass

from koordlet.metriccache import metric_types as mt
from koordlet.metriccache.metric_cache import MetricSample
from koordlet.metricsadvisor.cgroupreader import CgroupReader, PodSource

# Upstream expires "last CPU sample" entries after collect interval × 20, GC'd every 600 s.
_EXPIRE_INTERVALS = 20
_GC_PERIOD_SECONDS = 600.0


@dataclass(slots=True)
class _CPUSample:
    usage_ns: int
    wall: float


class PodResourceCollector:
    name = "PodResourceCollector"

    def __init__(
        self, reader: CgroupReader, pods: PodSource, collect_interval: float = 1.0
    ) -> None:
        self.reader = reader
        self.pods = pods
        self.collect_interval = collect_interval
        self._last: dict[str, _CPUSample] = {}
        self._last_gc = 0.0

    def _cpu(self, key: str, cgroup_dir: str, now: float) -> float | None:
        cur = _CPUSample(self.reader.cpu_usage_ns(cgroup_dir), now)
        last = self._last.get(key)
        self._last[key] = cur
        if last is None or cur.wall <= last.wall:
            return None  # first sample primes
        return max(cur.usage_ns - last.usage_ns, 0) / ((cur.wall - last.wall) * 1e9)

    def _collect_one(
        self,
        out: list[MetricSample],
        cpu_kind: str,
        mem_kind: str,
        mem_pc_kind: str,
        props: dict[str, str],
        key: str,
        cgroup_dir: str,
        now: float,
    ) -> None:
        try:
            cpu = self._cpu(key, cgroup_dir, now)
            mem = self.reader.memory_stat(cgroup_dir)
        except (OSError, ValueError):
            return
        if cpu is not None:
            out.append(MetricSample(cpu_kind, props, now, cpu))
        out.append(MetricSample(mem_kind, props, now, float(mem.usage())))
        out.append(MetricSample(mem_pc_kind, props, now, float(mem.usage_with_page_cache())))

    def collect(self, now: float) -> list[MetricSample]:
        out: list[MetricSample] = []
        for pod in self.pods():
            self._collect_one(
                out,
                mt.POD_CPU_USAGE,
                mt.POD_MEMORY_USAGE,
                mt.POD_MEMORY_USAGE_WITH_PAGE_CACHE,
                {mt.POD_UID: pod.pod_uid},
                "pod/" + pod.pod_uid,
                pod.cgroup_dir,
                now,
            )
            for c in pod.containers:
                self._collect_one(
                    out,
                    mt.CONTAINER_CPU_USAGE,
                    mt.CONTAINER_MEMORY_USAGE,
                    mt.CONTAINER_MEMORY_USAGE_WITH_PAGE_CACHE,
                    {mt.CONTAINER_ID: c.container_id},
                    "container/" + c.container_id,
                    c.cgroup_dir,
                    now,
                )
        if now - self._last_gc >= _GC_PERIOD_SECONDS:
            self._gc(now)
        return out

    def _gc(self, now: float) -> None:
        cutoff = now - self.collect_interval * _EXPIRE_INTERVALS
        self._last = {k: v for k, v in self._last.items() if v.wall >= cutoff}
        self.reader.sweep()  # closes the files of pods gone since the last GC
        self._last_gc = now
