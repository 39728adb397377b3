"""One descheduling pass over every profile.

Corresponds to koordinator ``pkg/descheduler/descheduler.go`` (``deschedulerOnce``): the ready
nodes matching the global ``nodeSelector``; fewer than two → an error and nothing done; the
eviction limiter reset; each profile's Deschedule plugins over the nodes of its own
``nodeSelector``, then each profile's Balance plugins. Before the first pass LowNodeLoad's
``detectorCacheTimeout`` is raised to the ``deschedulingInterval`` when shorter. ``run`` is
upstream's ``wait.NonSlidingUntil`` loop: a pass every ``deschedulingInterval`` measured from
the start of the previous one, a single pass when the interval is 0 (the process keeps running:
the MigrationController still has PodMigrationJobs to carry out).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
import time
from collections.abc import Iterator, Sequence

from api.meta import LabelSelector
from descheduler.apis.config.args import LowNodeLoadArgs
from descheduler.apis.config.types import DeschedulerConfiguration
from descheduler.framework.limiter import EvictionLimiter
from descheduler.framework.registry import Registry
from descheduler.framework.runtime import Framework, Listers
from descheduler.framework.types import Obj, Services
from descheduler.utils.node import node_ready
from pkg.evictions.evictions import EvictionClient
from pkg.util.labels import Selector, parse_selector

log = logging.getLogger(__name__)


@contextlib.contextmanager
def caches_frozen() -> Iterator[None]:
    """Keeps every object alive at the start (the informers' caches, mostly) out of the cyclic
    garbage collector's reach while the block runs: otherwise the collections a pass's own
    allocations trigger re-scan them all (a third of a pass over 50,000 pods). They go back
    to the collector afterwards, so nothing that turns into cyclic garbage is kept."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


class DeschedulingError(Exception):
    """A pass that did nothing (too few nodes) or whose plugins failed."""


def _selector(selector: LabelSelector | None) -> Selector:
    """None selects every node (``parse_selector`` would select none)."""
    return Selector.everything() if selector is None else parse_selector(selector)


class Descheduler:
    def __init__(self, config: DeschedulerConfiguration, registry: Registry, listers: Listers,
                 client: EvictionClient, *, services: Services | None = None) -> None:
        self.listers = listers
        self.interval = config.descheduling_interval
        self.limiter = EvictionLimiter(config.max_no_of_pods_to_evict_per_node,
                                       config.max_no_of_pods_to_evict_per_namespace,
                                       config.max_no_of_pods_to_evict_total)
        self.node_selector = _selector(config.node_selector)
        interval = config.descheduling_interval
        self.profiles: list[tuple[Framework, Selector]] = []
        for profile in config.profiles:
            for pc in profile.plugin_config:
                if (isinstance(pc.args, LowNodeLoadArgs) and interval > 0
                        and pc.args.detector_cache_timeout < interval):
                    pc.args.detector_cache_timeout = interval
            framework = Framework(profile, registry, listers, client, self.limiter,
                                  dry_run=config.dry_run, services=services)
            self.profiles.append((framework, _selector(profile.node_selector)))

    def plugins(self) -> list[object]:
        """Every plugin of every profile, each once (the process starts those that run
        controllers of their own)."""
        seen: dict[int, object] = {}
        for framework, _ in self.profiles:
            for plugin in framework.plugins():
                seen.setdefault(id(plugin), plugin)
        return list(seen.values())

    def run(self, stop: threading.Event) -> None:
        """Passes until ``stop`` is set: every ``interval`` seconds from the start of the last
        one, or once when the interval is 0. A failed pass is logged; the next one runs."""
        while not stop.is_set():
            started = time.monotonic()
            try:
                with caches_frozen():
                    self.run_once()
            except DeschedulingError as err:
                log.error("descheduling pass failed: %s", err)
            log.info("descheduling pass took %.3fs", time.monotonic() - started)
            if self.interval <= 0:
                log.info("deschedulingInterval is 0: one pass done, no more passes")
                return
            stop.wait(max(0.0, self.interval - (time.monotonic() - started)))

    def ready_nodes(self) -> list[Obj]:
        return [n for n in self.listers.nodes.list()
                if self.node_selector.matches((n.get("metadata") or {}).get("labels") or {})
                and node_ready(n)]

    def run_once(self) -> None:
        """One pass; raises DeschedulingError naming what went wrong."""
        nodes = self.ready_nodes()
        if len(nodes) <= 1:
            raise DeschedulingError("the cluster size is 0 or 1 meaning eviction causes "
                                    "service disruption or degradation, so aborting")
        self.limiter.reset()
        for point in ("deschedule", "balance"):
            for framework, selector in self.profiles:
                profile_nodes = _matching(nodes, selector)
                status = (framework.run_deschedule_plugins(profile_nodes) if point == "deschedule"
                          else framework.run_balance_plugins(profile_nodes))
                if not status.ok:
                    raise DeschedulingError(f"profile {framework.profile_name}: "
                                            + "; ".join(status.errors))


def _matching(nodes: Sequence[Obj], selector: Selector) -> list[Obj]:
    return [n for n in nodes if selector.matches((n.get("metadata") or {}).get("labels") or {})]
