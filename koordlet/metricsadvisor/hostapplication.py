"""HostApplicationCollector (upstream
``pkg/koordlet/metricsadvisor/collectors/hostapplication``): CPU (cores, from two cgroup
CPU-usage samples), memory (``memory.stat``: anon + unevictable) and memory with page cache
(``memory.usage_in_bytes`` / ``memory.current``) of each NodeSLO host application, keyed by
its name; the CPU and memory also go to the ``host_application_resource_usage`` gauge, whose
series are reset every round so an application gone from NodeSLO is no longer exported.

As upstream: an application whose CPU usage, ``memory.stat`` or memory usage cannot be read is
skipped; its first readable round only primes the CPU reading and stores nothing; without a
NodeSLO the round stores nothing (logged).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from koordlet.metriccache import metric_types as mt
from koordlet.metriccache.metric_cache import MetricSample
from koordlet.metrics import metrics
from koordlet.resourceexecutor.reader import CgroupReader
from koordlet.util.system.cgroup import CgroupError

log = logging.getLogger(__name__)

# Upstream keeps the last CPU reading per application in a cache expiring after the collect
# interval × ContextExpiredRatio (20), swept every CleanupInterval (600 s).
_EXPIRE_INTERVALS = 20
_GC_PERIOD_SECONDS = 600.0


@dataclass(slots=True, frozen=True)
class HostAppCgroup:
    name: str
    cgroup_dir: str  # relative to the reader's hierarchy
    priority: str = ""  # the gauge's labels, "" when unset as upstream's
    qos: str = ""


# The NodeSLO's host applications with their cgroup dirs; None while there is no NodeSLO.
HostAppSource = Callable[[], Iterable[HostAppCgroup] | None]


@dataclass(slots=True)
class _LastCPU:
    props: dict[str, str]  # the application's sample properties, one dict for its whole life
    usage_ns: int
    wall: float


class HostApplicationCollector:
    name = "HostApplicationCollector"

    def __init__(self, reader: CgroupReader, apps: HostAppSource,
                 collect_interval: float = 1.0) -> None:
        self.reader = reader
        self.apps = apps
        self.collect_interval = collect_interval
        self._last: dict[str, _LastCPU] = {}  # by application name
        self._last_gc = 0.0

    def collect(self, now: float) -> list[MetricSample]:
        apps = self.apps()
        if apps is None:
            log.warning("no NodeSLO: host application resource usage not collected")
            return []
        metrics.reset_host_application_resource_usage()
        out: list[MetricSample] = []
        for app in apps:
            try:
                usage_ns = self.reader.read_cpu_usage(app.cgroup_dir)
                mem = self.reader.read_memory_stat(app.cgroup_dir)
                with_page_cache = self.reader.read_memory_usage(app.cgroup_dir)
            except (OSError, ValueError, CgroupError) as e:
                log.debug("cannot collect host application %s usage from %s: %s",
                          app.name, app.cgroup_dir, e)
                continue
            last = self._last.get(app.name)
            if last is None:
                self._last[app.name] = _LastCPU({mt.HOST_APP_NAME: app.name}, usage_ns, now)
                log.debug("first cpu reading of host application %s only primes", app.name)
                continue
            if now <= last.wall:  # a second round within the same instant has no rate
                continue
            cores = max(usage_ns - last.usage_ns, 0) / ((now - last.wall) * 1e9)
            last.usage_ns, last.wall = usage_ns, now
            metrics.record_host_application_resource_usage(
                "cpu", app.name, app.priority, app.qos, cores)
            metrics.record_host_application_resource_usage(
                "memory", app.name, app.priority, app.qos, float(mem.usage()))
            out += (
                MetricSample(mt.HOST_APPLICATION_CPU_USAGE, last.props, now, cores),
                MetricSample(mt.HOST_APPLICATION_MEMORY_USAGE, last.props, now,
                             float(mem.usage())),
                MetricSample(mt.HOST_APPLICATION_MEMORY_USAGE_WITH_PAGE_CACHE, last.props, now,
                             float(with_page_cache)),
            )
        if now - self._last_gc >= _GC_PERIOD_SECONDS:
            self._gc(now)
        return out

    def _gc(self, now: float) -> None:
        cutoff = now - self.collect_interval * _EXPIRE_INTERVALS
        for name in [k for k, t in self._last.items() if t.wall < cutoff]:
            del self._last[name]
        self.reader.sweep()  # closes the files of applications gone since the last GC
        self._last_gc = now

