"""NodeResourceCollector (upstream ``pkg/koordlet/metricsadvisor/collectors/noderesource``):
node CPU usage in cores from two ``/proc/stat`` samples and node memory from ``/proc/meminfo``
(memory with page cache is the PageCacheCollector's, as upstream).
"""

from __future__ import annotations

from dataclasses import dataclass

from koordlet.metriccache import metric_types as mt
from koordlet.metriccache.metric_cache import MetricSample
from koordlet.metricsadvisor import procfs


@dataclass(slots=True)
class _CPUSample:
    ticks: int
    wall: float


class NodeResourceCollector:
    name = "NodeResourceCollector"

    def __init__(self, proc_root: str = "/proc") -> None:
        self.proc_root = proc_root
        self._last: _CPUSample | None = None

    def collect(self, now: float) -> list[MetricSample]:
        mem = procfs.read_meminfo(self.proc_root)
        samples = [MetricSample(mt.NODE_MEMORY_USAGE, {}, now, float(mem.mem_usage_bytes()))]
        cur = _CPUSample(procfs.read_cpu_ticks(self.proc_root), now)
        last, self._last = self._last, cur
        # The first round only primes; a clock that did not advance gives no rate.
        if last is not None and cur.wall > last.wall:
            cores = (cur.ticks - last.ticks) / ((cur.wall - last.wall) * procfs.CLK_TCK)
            samples.append(MetricSample(mt.NODE_CPU_USAGE, {}, now, max(cores, 0.0)))
        return samples
