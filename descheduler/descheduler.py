"""One descheduling pass over every profile.

Corresponds to koordinator ``pkg/descheduler/descheduler.go`` (``deschedulerOnce``): the ready
nodes matching the global ``nodeSelector``; fewer than two → an error and nothing done; the
eviction limiter reset; each profile's Deschedule plugins over the nodes of its own
``nodeSelector``, then each profile's Balance plugins. Before the first pass LowNodeLoad's
``detectorCacheTimeout`` is raised to the ``deschedulingInterval`` when shorter. The periodic
loop, informers and leader election are not wired yet (``descheduler/main.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from api.meta import LabelSelector
from descheduler.apis.config.args import LowNodeLoadArgs
from descheduler.apis.config.types import DeschedulerConfiguration
from descheduler.framework.limiter import EvictionLimiter
from descheduler.framework.registry import Registry
from descheduler.framework.runtime import Framework, Listers
from descheduler.framework.types import Obj
from descheduler.utils.node import node_ready
from pkg.evictions.evictions import EvictionClient
from pkg.util.labels import Selector, parse_selector

log = logging.getLogger(__name__)


class DeschedulingError(Exception):
    """A pass that did nothing (too few nodes) or whose plugins failed."""


def _selector(selector: LabelSelector | None) -> Selector:
    """None selects every node (``parse_selector`` would select none)."""
    return Selector.everything() if selector is None else parse_selector(selector)


class Descheduler:
    def __init__(self, config: DeschedulerConfiguration, registry: Registry, listers: Listers,
                 client: EvictionClient) -> None:
        self.listers = listers
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
                                  dry_run=config.dry_run)
            self.profiles.append((framework, _selector(profile.node_selector)))

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
