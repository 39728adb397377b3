"""A profile's plugin list at each extension point, with ``multiPoint`` expanded.

Corresponds to kube-scheduler v1.35's ``frameworkImpl`` construction
(``pkg/scheduler/framework/runtime/framework.go``): ``updatePluginList`` (a plugin twice at one
point is an error), ``expandMultiPointPlugins`` and ``getScoreWeights``.

At each point, unless its ``disabled`` list has ``"*"``, the multiPoint plugins that implement
the point and are not disabled there join it, ordered as: plugins both at the point and in
multiPoint (the explicit entry wins; in the point's order), then the other multiPoint plugins
(in multiPoint order), then the point's remaining plugins. A score weight comes from the
plugin's ``score`` entry, else its multiPoint entry; unset or 0 means 1.

Whether a plugin implements a point is the framework registry's knowledge, passed in as
``implements``; names it does not know are left for the framework to refuse.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn

from scheduler.apis.config.default_plugins import ALL
from scheduler.apis.config.errors import FieldError, SchedulerConfigError
from scheduler.apis.config.extension_points import MULTI_POINT, ExtensionPoint, PluginRef
from scheduler.apis.config.types import KubeSchedulerProfile, Plugins

# implements(plugin_name, extension_point) → whether the plugin extends that point.
Implements = Callable[[str, str], bool]


def expand_profile_plugins(profile: KubeSchedulerProfile, implements: Implements
                           ) -> dict[str, list[PluginRef]]:
    """Extension point (camelCase name) → the plugins run there, in order, for a profile whose
    plugins were merged with the defaults (as ``load_scheduler_config`` returns it).

    Raises SchedulerConfigError when a plugin is registered twice at one point.
    """
    plugins = profile.plugins or Plugins()
    weights = _score_weights(plugins, implements)
    expanded = {}
    for point in ExtensionPoint:
        names = _expand_point(profile, plugins, point, implements)
        expanded[point.value] = [PluginRef(n, weights[n] if point is ExtensionPoint.SCORE else 0)
                                 for n in names]
    return expanded


def _expand_point(profile: KubeSchedulerProfile, plugins: Plugins, point: ExtensionPoint,
                  implements: Implements) -> list[str]:
    plugin_set = plugins.get(point)
    enabled: list[str] = []
    for i, plugin in enumerate(plugin_set.enabled):
        if plugin.name in enabled:
            _fail(profile, ("plugins", point.value, "enabled", i),
                  f"plugin {plugin.name!r} is already registered at {point.value}")
        enabled.append(plugin.name)
    disabled = {p.name for p in plugin_set.disabled}
    if ALL in disabled:
        return enabled
    overrides: list[str] = []
    from_multi_point: list[str] = []
    for i, plugin in enumerate(plugins.multi_point.enabled):
        name = plugin.name
        if not implements(name, point.value) or name in disabled:
            continue
        if name in enabled:
            # Configured at the point itself: that entry wins over multiPoint's.
            overrides.append(name)
        elif name in from_multi_point:
            _fail(profile, ("plugins", MULTI_POINT, "enabled", i),
                  f"plugin {name!r} is already registered at {point.value}")
        else:
            from_multi_point.append(name)
    first = [n for n in enabled if n in overrides]
    rest = [n for n in enabled if n not in overrides]
    return first + from_multi_point + rest


def _score_weights(plugins: Plugins, implements: Implements) -> dict[str, int]:
    """Plugin → score weight: the ``score`` entry first, then multiPoint's."""
    weights: dict[str, int] = {}
    candidates = [*plugins.score.enabled,
                  *(p for p in plugins.multi_point.enabled
                    if implements(p.name, ExtensionPoint.SCORE.value))]
    for plugin in candidates:
        # A zero weight is not allowed: a plugin is switched off by disabling it.
        weights.setdefault(plugin.name, plugin.weight or 1)
    return weights


def _fail(profile: KubeSchedulerProfile, loc: tuple[str | int, ...], message: str) -> NoReturn:
    raise SchedulerConfigError([FieldError(loc, message)],
                               source=f"profile {profile.scheduler_name!r}")
