"""Building a Scheduler from a KubeSchedulerConfiguration: profiles, queue, cache, handlers.

Corresponds to kube-scheduler ``pkg/scheduler/scheduler.go`` (``New``) and
``pkg/scheduler/profile``. Each profile's plugins come from ``expand_profile_plugins`` (the
merged defaults plus the file's lists, multiPoint expanded) and the registry of
``scheduler/plugins/registry.py`` with the out-of-tree plugins of ``--plugin-module``
(``frameworkext/outoftree.py``). A plugin name the registry does not know is a start-up error;
a name of an upstream plugin this implementation does not have yet is left out with a warning
naming the points it was configured at, so upstream's configuration files still load.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pkg.client.resources import PODS
from pkg.util.clock import REAL_CLOCK, Clock
from scheduler.apis.config import KubeSchedulerConfiguration
from scheduler.apis.config.multipoint import expand_profile_plugins
from scheduler.apis.config.types import KubeSchedulerProfile
from scheduler.eventhandlers import EventHandlers
from scheduler.framework.binder import ApiBinder, Binder
from scheduler.framework.cache import Cache
from scheduler.framework.interface import Plugin, implements
from scheduler.framework.queue import SchedulingQueue
from scheduler.framework.runtime import Framework, FrameworkDeps, FrameworkError
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.types import PodInfo
from scheduler.frameworkext.interface import (
    ClientSet,
    InformerFactory,
    NextPodPlugin,
    RecorderFactory,
)
from scheduler.frameworkext.node_transformer import install_node_transformer
from scheduler.frameworkext.outoftree import register_plugin_modules
from scheduler.metrics.metrics import SchedulerMetrics
from scheduler.plugins.registry import NOT_YET_IMPLEMENTED, new_registry
from scheduler.schedule_one import PodGetter
from scheduler.scheduler import Scheduler

log = logging.getLogger(__name__)


@dataclass
class Built:
    scheduler: Scheduler
    handlers: EventHandlers
    skipped_plugins: dict[str, dict[str, list[str]]]  # profile → plugin → points


def _configured_names(profile: KubeSchedulerProfile) -> dict[str, list[str]]:
    """Every enabled plugin name of the profile → the points it is enabled at."""
    out: dict[str, list[str]] = {}
    plugins = profile.plugins
    if plugins is None:
        return out
    for field, pset in plugins:
        point = type(plugins).model_fields[field].alias or field
        for p in pset.enabled:
            out.setdefault(p.name, []).append(point)
    return out


def build_profile(profile: KubeSchedulerProfile, registry: Mapping[str, type[Plugin]],
                  deps: FrameworkDeps) -> tuple[Framework, dict[str, list[str]]]:
    name = profile.scheduler_name or "default-scheduler"
    skipped: dict[str, list[str]] = {}
    for plugin, points in _configured_names(profile).items():
        if plugin in registry:
            continue
        if plugin in NOT_YET_IMPLEMENTED:
            skipped[plugin] = points
            continue
        raise FrameworkError(f"profile {name!r}: plugin {plugin!r} is not registered "
                             f"(known plugins: {', '.join(sorted(registry))})")
    expanded = expand_profile_plugins(
        profile, lambda p, point: p in registry and implements(registry[p], point))
    for plugin, points in skipped.items():
        log.warning("profile %s: plugin %s (%s) is not implemented in this version of "
                    "koord-scheduler and is left out at %s", name, plugin,
                    NOT_YET_IMPLEMENTED[plugin], ", ".join(points))
    # Plugins named at a point itself stay in its expanded list: leave the skipped ones out.
    plugins = {point: [(ref.name, ref.weight) for ref in refs if ref.name not in skipped]
               for point, refs in expanded.items()}
    fwk = Framework(name, plugins, registry, profile.plugin_args(), deps,
                    percentage_of_nodes_to_score=profile.percentage_of_nodes_to_score)
    return fwk, skipped


def build_scheduler(cfg: KubeSchedulerConfiguration, *, client: ClientSet | None = None,
                    informer_factory: InformerFactory | None = None,
                    binder: Binder | None = None,
                    recorder_factory: RecorderFactory | None = None,
                    metrics: SchedulerMetrics | None = None, clock: Clock = REAL_CLOCK,
                    registry: Mapping[str, type[Plugin]] | None = None,
                    rng: random.Random | None = None, bind_workers: int = 16,
                    pod_getter: PodGetter | None = None, plugin_modules: Sequence[str] = (),
                    plugin_path: Sequence[str] = ()) -> Built:
    """A Scheduler with one Framework per profile, sharing one queue, cache and snapshot.

    ``plugin_modules`` and ``plugin_path`` are the ``--plugin-module`` and ``--plugin-path``
    values: out-of-tree plugins joining ``registry`` (default: ``new_registry()``).
    """
    registry = dict(registry) if registry is not None else new_registry()
    register_plugin_modules(registry, plugin_modules, plugin_path)
    if informer_factory is not None:
        # Before any plugin reads nodes: all of them see the allocatable less the node's
        # reservation, as upstream's transformer on the shared Node informer.
        install_node_transformer(informer_factory)
    if binder is None and client is not None:
        binder = ApiBinder(client)
    snapshot = Snapshot()
    deps = FrameworkDeps(snapshot=snapshot, clock=clock, client=client,
                         informer_factory=informer_factory, binder=binder,
                         recorder_factory=recorder_factory,
                         metrics=metrics, parallelism=cfg.parallelism)
    profiles: dict[str, Framework] = {}
    skipped: dict[str, dict[str, list[str]]] = {}
    for profile in cfg.profiles:
        fwk, skipped_here = build_profile(profile, registry, deps)
        profiles[fwk.profile_name] = fwk
        if skipped_here:
            skipped[fwk.profile_name] = skipped_here
    first = next(iter(profiles.values()))

    def pre_enqueue(pod_info: PodInfo) -> tuple[bool, str | None]:
        fwk = profiles.get(pod_info.scheduler_name)
        return (True, None) if fwk is None else fwk.run_pre_enqueue(pod_info)

    # Upstream's framework extender asks the NextPod plugin before every pop; the queue here
    # is shared by the profiles, so it asks each profile's, first answer wins.
    next_pod_plugins = [p for fwk in profiles.values() for p in fwk.instances.values()
                        if isinstance(p, NextPodPlugin)]

    def next_pod() -> str | None:
        for p in next_pod_plugins:
            key = p.next_pod()
            if key is not None:
                return key
        return None

    queue = SchedulingQueue(
        first.queue_sort.less, pre_enqueue=pre_enqueue,
        next_pod=next_pod if next_pod_plugins else None,
        events_to_register={name: fwk.events_to_register() for name, fwk in profiles.items()},
        clock=clock, pod_initial_backoff=float(cfg.pod_initial_backoff_seconds),
        pod_max_backoff=float(cfg.pod_max_backoff_seconds), metrics=metrics)
    deps.nominator = queue.nominator
    deps.activate = queue.activate
    if pod_getter is None and informer_factory is not None:
        pod_getter = informer_factory.informer_for(PODS, typed=False).indexer.get_by_key
    sched = Scheduler(profiles, queue, Cache(clock=clock), snapshot,
                      percentage_of_nodes_to_score=cfg.percentage_of_nodes_to_score or 0,
                      client=client, metrics=metrics, clock=clock,
                      bind_workers=bind_workers, rng=rng, pod_getter=pod_getter)
    return Built(sched, EventHandlers(sched), skipped)
