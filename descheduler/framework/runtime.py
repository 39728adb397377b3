"""One framework per descheduler profile: its plugins, built from the configuration, and the
evictor they share.

Corresponds to koordinator ``pkg/descheduler/framework/runtime/framework.go`` (``NewFramework``,
``RunDeschedulePlugins``, ``RunBalancePlugins``, the ``Evictor`` over the filter plugins, the
limiter and the evict plugin). A plugin enabled at several points is built once, with its args
from the profile's ``pluginConfig``. Construction fails as upstream's does: an unknown plugin,
a plugin listed twice at one point, a plugin at a point it does not implement, and anything but
exactly one evict plugin.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from descheduler.apis.config.registry import BALANCE, DESCHEDULE, EVICT, FILTER, INTERFACES
from descheduler.apis.config.types import DeschedulerProfile
from descheduler.framework.limiter import EvictionLimiter
from descheduler.framework.registry import Registry
from descheduler.framework.types import (
    BalancePlugin,
    DeschedulePlugin,
    EvictOptions,
    Evictor,
    EvictPlugin,
    FilterPlugin,
    Obj,
    ObjectLister,
    Services,
    Status,
)
from pkg.client.informers.store import NODE_NAME_INDEX
from pkg.evictions.evictions import EvictionClient

log = logging.getLogger(__name__)

_KINDS: dict[str, type] = {DESCHEDULE: DeschedulePlugin, BALANCE: BalancePlugin,
                           EVICT: EvictPlugin, FILTER: FilterPlugin}


class FrameworkError(Exception):
    """A profile whose plugins cannot be built."""


@dataclass(frozen=True, slots=True)
class Listers:
    """The informers' listers plugins read (pods indexed by ``NODE_NAME_INDEX``)."""

    nodes: ObjectLister
    pods: ObjectLister
    node_metrics: ObjectLister


class Framework:
    """A profile's plugins; it is also their ``Handle`` and, through ``evictor``, the way they
    evict."""

    def __init__(self, profile: DeschedulerProfile, registry: Registry, listers: Listers,
                 client: EvictionClient, limiter: EvictionLimiter, *,
                 dry_run: bool = False, services: Services | None = None) -> None:
        self.profile_name = profile.name
        self._services = services
        self._listers = listers
        self._client = client
        self.limiter = limiter
        self.dry_run = dry_run
        self.deschedule_plugins: list[DeschedulePlugin] = []
        self.balance_plugins: list[BalancePlugin] = []
        self.filter_plugins: list[FilterPlugin] = []
        evict_plugins: list[EvictPlugin] = []
        args = profile.plugin_args()
        built: dict[str, object] = {}
        plugins = profile.plugins
        for point, into in ((DESCHEDULE, self.deschedule_plugins),
                            (BALANCE, self.balance_plugins), (EVICT, evict_plugins),
                            (FILTER, self.filter_plugins)):
            names = plugins.get(point).names() if plugins is not None else []
            for i, name in enumerate(names):
                if name in names[:i]:
                    raise FrameworkError(f"plugin {name!r} already registered as "
                                         f"{INTERFACES[point]}")
                if name not in built:
                    factory = registry.get(name)
                    if factory is None:
                        raise FrameworkError(f"plugin {name!r} does not exist")
                    built[name] = factory(args.get(name), self)
                plugin = built[name]
                if not isinstance(plugin, _KINDS[point]):
                    raise FrameworkError(f"{name} does not implement {INTERFACES[point]}")
                into.append(plugin)  # type: ignore[arg-type]  # checked by isinstance above
        if not evict_plugins:
            raise FrameworkError("no evict plugin is enabled")
        if len(evict_plugins) > 1:
            raise FrameworkError("only one evict plugin can be enabled")
        self.evict_plugin = evict_plugins[0]
        self._plugins = list(built.values())

    def plugins(self) -> list[object]:
        """Each plugin the profile built, once."""
        return list(self._plugins)

    # -- Handle ---------------------------------------------------------------------------

    @property
    def nodes(self) -> ObjectLister:
        return self._listers.nodes

    @property
    def pods(self) -> ObjectLister:
        return self._listers.pods

    @property
    def node_metrics(self) -> ObjectLister:
        return self._listers.node_metrics

    @property
    def evictor(self) -> Evictor:
        return self

    @property
    def client(self) -> EvictionClient:
        return self._client

    @property
    def services(self) -> Services:
        if self._services is None:
            raise FrameworkError(f"profile {self.profile_name}: built without the API "
                                 "services a plugin asked for")
        return self._services

    def pods_on_node(self, node_name: str) -> list[Obj]:
        return self._listers.pods.by_index(NODE_NAME_INDEX, node_name)

    # -- Evictor --------------------------------------------------------------------------

    def filter(self, pod: Obj) -> bool:
        return all(p.filter(pod) for p in self.filter_plugins)

    def pre_eviction_filter(self, pod: Obj) -> bool:
        return all(p.pre_eviction_filter(pod) for p in self.filter_plugins)

    def evict(self, pod: Obj, options: EvictOptions) -> bool:
        """Evicts ``pod`` unless a limit is reached; in dry run only logs what it would do."""
        if not self.limiter.allows(pod):
            return False
        md = pod.get("metadata") or {}
        if self.dry_run:
            log.info("dry run: would evict pod %s/%s on node %s (profile %s, plugin %s): %s",
                     md.get("namespace"), md.get("name"), (pod.get("spec") or {}).get("nodeName"),
                     self.profile_name, options.plugin_name, options.reason)
        elif not self.evict_plugin.evict(pod, options):
            return False
        self.limiter.count(pod)
        return True

    # -- running --------------------------------------------------------------------------

    def run_deschedule_plugins(self, nodes: Sequence[Obj]) -> Status:
        """Runs every Deschedule plugin in order, aggregating their errors."""
        status = Status()
        for plugin in self.deschedule_plugins:
            status.errors += [f"{plugin.name()}: {e}" for e in plugin.deschedule(nodes).errors]
        return status

    def run_balance_plugins(self, nodes: Sequence[Obj]) -> Status:
        """Runs every Balance plugin in order, aggregating their errors."""
        status = Status()
        for plugin in self.balance_plugins:
            status.errors += [f"{plugin.name()}: {e}" for e in plugin.balance(nodes).errors]
        return status
