"""kube-scheduler's default plugins per apiVersion, and merging a profile's plugins into them.

Corresponds to ``getDefaultPlugins``/``mergePlugins``/``mergePluginSet`` of kube-scheduler's
``pkg/scheduler/apis/config/{v1beta2,v1beta3,v1}/default_plugins.go`` with the feature gates at
their v1.35 defaults.

* v1 and v1beta3: every default is a ``multiPoint`` plugin (v1.35's list: the in-tree volume
  limit plugins are gone, ``DynamicResources`` is on). v1beta3 shipped the same list as v1 in
  every release that had both, so it gets v1.35's.
* v1beta2: per-point defaults as last shipped (v1.27), without EBSLimits, GCEPDLimits and
  AzureDiskLimits, which v1.35 no longer has (kube-scheduler's validation refuses them in every
  version). Upstream's v1beta2 merge left ``preEnqueue`` out, dropping the user's entries; we
  merge it like every other point.

Merging a point: ``disabled: "*"`` drops every default there; a disabled name drops that default;
a user-enabled plugin that is also a default replaces it in place (with the user's weight); the
other user plugins follow in their order. v1/v1beta3 keep the disabled lists (multiPoint
expansion reads them); v1beta2 drops them.
"""

from __future__ import annotations

from scheduler.apis.config.extension_points import MULTI_POINT, ExtensionPoint
from scheduler.apis.config.types import V1BETA2, Plugin, Plugins, PluginSet

# Matches every plugin in a ``disabled`` list.
ALL = "*"

E = ExtensionPoint

# v1 (and v1beta3) multiPoint defaults: name and score weight (None: 1 if it scores).
_MULTI_POINT_DEFAULTS: tuple[tuple[str, int | None], ...] = (
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    # Before DefaultPreemption: freeing an idle ResourceClaim beats evicting a running pod.
    ("DynamicResources", None),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
)

# v1beta2 per-point defaults.
_V1BETA2_DEFAULTS: dict[ExtensionPoint, tuple[tuple[str, int | None], ...]] = {
    E.PRE_ENQUEUE: (("SchedulingGates", None),),
    E.QUEUE_SORT: (("PrioritySort", None),),
    E.PRE_FILTER: tuple((n, None) for n in (
        "NodeResourcesFit", "NodePorts", "VolumeRestrictions", "PodTopologySpread",
        "InterPodAffinity", "VolumeBinding", "NodeAffinity")),
    E.FILTER: tuple((n, None) for n in (
        "NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts",
        "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding",
        "VolumeZone", "PodTopologySpread", "InterPodAffinity")),
    E.POST_FILTER: (("DefaultPreemption", None),),
    E.PRE_SCORE: tuple((n, None) for n in (
        "InterPodAffinity", "PodTopologySpread", "TaintToleration", "NodeAffinity")),
    E.SCORE: (
        ("NodeResourcesBalancedAllocation", 1), ("ImageLocality", 1), ("InterPodAffinity", 1),
        ("NodeResourcesFit", 1), ("NodeAffinity", 1),
        # Doubled: a user preference, and comparable to NodeResourcesFit's LeastAllocated.
        ("PodTopologySpread", 2), ("TaintToleration", 1)),
    E.RESERVE: (("VolumeBinding", None),),
    E.PRE_BIND: (("VolumeBinding", None),),
    E.BIND: (("DefaultBinder", None),),
}


def _plugin_set(entries: tuple[tuple[str, int | None], ...]) -> PluginSet:
    return PluginSet(enabled=[Plugin(name=name, weight=weight) for name, weight in entries])


def default_plugins(api_version: str) -> Plugins:
    """kube-scheduler's default plugins for ``api_version`` (a fresh object)."""
    plugins = Plugins()
    if api_version == V1BETA2:
        for point, entries in _V1BETA2_DEFAULTS.items():
            plugins.set(point, _plugin_set(entries))
    else:
        plugins.set(MULTI_POINT, _plugin_set(_MULTI_POINT_DEFAULTS))
    return plugins


def merge_plugin_set(defaults: PluginSet, custom: PluginSet, *, keep_disabled: bool) -> PluginSet:
    """``custom`` merged into ``defaults`` at one point (upstream ``mergePluginSet``)."""
    disabled = {p.name for p in custom.disabled} | {p.name for p in defaults.disabled}
    custom_index = {p.name: i for i, p in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[Plugin] = []
    if ALL not in disabled:
        for plugin in defaults.enabled:
            if plugin.name in disabled:
                continue
            # A default the user configured again takes the user's entry, at the default's place.
            index = custom_index.get(plugin.name)
            if index is not None:
                plugin = custom.enabled[index]
                replaced.add(index)
            enabled.append(plugin.model_copy())
    # Duplicates among the user's entries stay; building the framework refuses them.
    enabled += [p.model_copy() for i, p in enumerate(custom.enabled) if i not in replaced]
    if not keep_disabled:
        return PluginSet(enabled=enabled)
    kept = [Plugin(name=p.name) for p in (*custom.disabled, *defaults.disabled)]
    return PluginSet(enabled=enabled, disabled=kept)


def merge_plugins(api_version: str, custom: Plugins | None) -> Plugins:
    """A profile's effective plugins: ``custom`` merged into the defaults of ``api_version``."""
    defaults = default_plugins(api_version)
    if custom is None:
        return defaults
    merged = Plugins()
    for point in (*ExtensionPoint, MULTI_POINT):
        merged.set(point, merge_plugin_set(defaults.get(point), custom.get(point),
                                           keep_disabled=api_version != V1BETA2))
    return merged
