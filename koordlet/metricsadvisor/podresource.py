"""PodResourceCollector (upstream ``pkg/koordlet/metricsadvisor/collectors/podresource``):
pod and container CPU (cores, from two cgroup CPU-usage samples) and memory usage. Memory with
page cache is the PageCacheCollector's (``pagecache.py``), as upstream.

Pods or containers whose cgroup read fails are skipped, as upstream.
"""

from __future__ import annotations

from dataclasses import dataclass

from koordlet.metriccache import metric_types as mt
from koordlet.metriccache.metric_cache import MetricSample
from koordlet.metricsadvisor.framework import PodSource
from koordlet.resourceexecutor.reader import CgroupReader

# Upstream expires "last CPU sample" entries after collect interval × 20, GC'd every 600 s.
_EXPIRE_INTERVALS = 20
_GC_PERIOD_SECONDS = 600.0


@dataclass(slots=True)
class _Tracked:
    """A pod or container between ticks: the properties its samples carry (one dict for its
    whole life, not one per tick) and its last CPU usage reading."""

    props: dict[str, str]
    usage_ns: int
    wall: float


@dataclass(slots=True, frozen=True)
class _Kinds:
    prop: str
    cpu: str
    memory: str


_POD = _Kinds(mt.POD_UID, mt.POD_CPU_USAGE, mt.POD_MEMORY_USAGE)
_CONTAINER = _Kinds(mt.CONTAINER_ID, mt.CONTAINER_CPU_USAGE, mt.CONTAINER_MEMORY_USAGE)


class PodResourceCollector:
    name = "PodResourceCollector"

    def __init__(
        self, reader: CgroupReader, pods: PodSource, collect_interval: float = 1.0
    ) -> None:
        self.reader = reader
        self.pods = pods
        self.collect_interval = collect_interval
        self._pods: dict[str, _Tracked] = {}  # by pod UID
        self._containers: dict[str, _Tracked] = {}  # by container ID
        self._last_gc = 0.0

    def _collect_one(
        self,
        out: list[MetricSample],
        kinds: _Kinds,
        tracked: dict[str, _Tracked],
        ident: str,
        cgroup_dir: str,
        now: float,
    ) -> None:
        """Appends the cgroup's samples; CPU needs a previous reading (the first one primes)."""
        try:
            usage_ns = self.reader.read_cpu_usage(cgroup_dir)
            mem = self.reader.read_memory_stat(cgroup_dir)
        except (OSError, ValueError):
            return
        t = tracked.get(ident)
        if t is None:
            t = tracked[ident] = _Tracked({kinds.prop: ident}, usage_ns, now)
        else:
            if now > t.wall:
                cores = max(usage_ns - t.usage_ns, 0) / ((now - t.wall) * 1e9)
                out.append(MetricSample(kinds.cpu, t.props, now, cores))
            t.usage_ns, t.wall = usage_ns, now
        out.append(MetricSample(kinds.memory, t.props, now, float(mem.usage())))

    def collect(self, now: float) -> list[MetricSample]:
        out: list[MetricSample] = []
        collect_one, pods, containers = self._collect_one, self._pods, self._containers
        for pod in self.pods():
            collect_one(out, _POD, pods, pod.pod_uid, pod.cgroup_dir, now)
            for c in pod.containers:
                collect_one(out, _CONTAINER, containers, c.container_id, c.cgroup_dir, now)
        if now - self._last_gc >= _GC_PERIOD_SECONDS:
            self._gc(now)
        return out

    def _gc(self, now: float) -> None:
        cutoff = now - self.collect_interval * _EXPIRE_INTERVALS
        for tracked in (self._pods, self._containers):
            for ident in [k for k, t in tracked.items() if t.wall < cutoff]:
                del tracked[ident]
        self.reader.sweep()  # closes the files of pods gone since the last GC
        self._last_gc = now
