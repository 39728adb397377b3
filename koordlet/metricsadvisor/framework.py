"""The collector interface, the pods the cgroup collectors read, and the loop that drives the
collectors (upstream ``pkg/koordlet/metricsadvisor/framework``: ``Collector``, ``Config``;
``metrics_advisor.go``).

A collector returns one round of samples instead of writing the cache itself, so a simulated
source (simulated nodes in test/) replaces the real collectors by implementing ``collect`` and
the advisor appends each round to the metric cache in one call (one transaction upstream).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from koordlet.metriccache.metric_cache import MetricCache, MetricSample
from pkg.util.clock import Clock, RealClock

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Config:
    """Flags of upstream ``metricsadvisor/framework/config.go`` (seconds)."""

    collect_res_used_interval: float = 1.0
    collect_node_cpu_info_interval: float = 60.0
    psi_collector_interval: float = 10.0


@dataclass(slots=True, frozen=True)
class ContainerCgroup:
    container_id: str  # full status form, e.g. containerd://<id>
    cgroup_dir: str
    name: str = ""  # labels the exported series (PSI, CPI)


@dataclass(slots=True, frozen=True)
class PodCgroup:
    pod_uid: str
    cgroup_dir: str
    containers: tuple[ContainerCgroup, ...] = ()
    name: str = ""  # name and namespace label the exported series (PSI, CPI)
    namespace: str = ""


# Where the pods are (cgroup dirs relative to the reader's hierarchy): statesinformer's pods in
# koordlet's main, fake trees in tests; collectors only call it.
PodSource = Callable[[], Iterable[PodCgroup]]


class Collector(Protocol):
    name: str

    def collect(self, now: float) -> list[MetricSample]:
        """One round: samples stamped ``now``. Rate collectors prime on their first round."""
        ...


class MetricAdvisor:
    """Runs every collector once per ``collect_res_used_interval`` and stores the rounds.

    An interval below one second disables metricsadvisor entirely, as upstream.
    """

    def __init__(
        self,
        cache: MetricCache,
        collectors: Sequence[Collector],
        config: Config | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.cache = cache
        self.collectors = list(collectors)
        self.config = config or Config()
        self.clock = clock or RealClock()

    def enabled(self) -> bool:
        return self.config.collect_res_used_interval >= 1.0

    def run_once(self) -> None:
        now = self.clock.now()
        for collector in self.collectors:
            try:
                self.cache.append(collector.collect(now))
            except (OSError, ValueError):
                log.exception("collector %s failed", collector.name)

    def run(self, stop: threading.Event) -> None:
        if not self.enabled():
            log.info("collect-res-used-interval < 1s: metrics advisor disabled")
            return
        while not stop.is_set():
            self.run_once()
            if self.clock.sleep(self.config.collect_res_used_interval, stop):
                return
