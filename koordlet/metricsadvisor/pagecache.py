"""PageCacheCollector (upstream ``pkg/koordlet/metricsadvisor/collectors/pagecache``): node, pod
and container memory usage *with* page cache, for the NodeMetric memory collect policy
``usageWithPageCache``. Off unless ``--enable-pagecache-collector`` is set, as upstream: it reads
every pod's and container's ``memory.stat`` a second time each round.

Node: ``(MemTotal − MemFree) × 1024``; pod and container: ``inactive_anon + active_anon +
unevictable + active_file + inactive_file``. A pod or container whose cgroup cannot be read is
skipped for the round.
"""

from __future__ import annotations

from koordlet.metriccache import metric_types as mt
from koordlet.metriccache.metric_cache import MetricSample
from koordlet.metricsadvisor import procfs
from koordlet.metricsadvisor.framework import PodSource
from koordlet.resourceexecutor.reader import CgroupReader


class PageCacheCollector:
    name = "PageCacheCollector"

    def __init__(self, proc_root: str, reader: CgroupReader, pods: PodSource) -> None:
        self.proc_root = proc_root
        self.reader = reader
        self.pods = pods

    def _sample(self, out: list[MetricSample], kind: str, props: dict[str, str],
                cgroup_dir: str, now: float) -> None:
        try:
            usage = self.reader.read_memory_stat(cgroup_dir).usage_with_page_cache()
        except (OSError, ValueError):
            return
        out.append(MetricSample(kind, props, now, float(usage)))

    def collect(self, now: float) -> list[MetricSample]:
        mem = procfs.read_meminfo(self.proc_root)
        out = [MetricSample(mt.NODE_MEMORY_USAGE_WITH_PAGE_CACHE, {}, now,
                            float(mem.mem_usage_with_page_cache_bytes()))]
        for pod in self.pods():
            self._sample(out, mt.POD_MEMORY_USAGE_WITH_PAGE_CACHE, {mt.POD_UID: pod.pod_uid},
                         pod.cgroup_dir, now)
            for c in pod.containers:
                self._sample(out, mt.CONTAINER_MEMORY_USAGE_WITH_PAGE_CACHE,
                             {mt.CONTAINER_ID: c.container_id}, c.cgroup_dir, now)
        return out
