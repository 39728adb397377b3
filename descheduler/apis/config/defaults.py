"""Defaulting a decoded DeschedulerConfiguration: profiles, plugins, plugin args, addresses.

Corresponds to ``SetDefaults_DeschedulerConfiguration``, ``setDefaults_Profile`` and
``getDefaultPlugins``/``mergePlugins``/``mergePluginSet`` of Koordinator
``pkg/descheduler/apis/config/v1alpha2/{defaults.go,default_plugins.go}``. The defaults of
plain fields are those of the models in ``types.py``; of plugin args, those of ``args.py``.

Merging a point: ``disabled: "*"`` drops every default there; a disabled name drops that
default; a user-enabled plugin that is also a default keeps the default's place; the other user
plugins follow in their order (duplicates too: validation refuses them). The merged sets keep
only ``enabled``, as upstream's.
"""

from __future__ import annotations

import ipaddress

from descheduler.apis.config.args import ARGS_KINDS
from descheduler.apis.config.registry import EVICT, FILTER
from descheduler.apis.config.types import (
    DEFAULT_INSECURE_PORT,
    DEFAULT_PROFILE_NAME,
    EXTENSION_POINTS,
    V1ALPHA2,
    DeschedulerConfiguration,
    DeschedulerProfile,
    Plugin,
    PluginConfig,
    Plugins,
    PluginSet,
)
from scheduler.apis.config.base import PluginArgs

# Matches every plugin in a ``disabled`` list.
ALL = "*"

_DEFAULT_PLUGINS = {EVICT: ("MigrationController",), FILTER: ("MigrationController",)}


def default_plugins() -> Plugins:
    """The descheduler's default plugins (a fresh object)."""
    plugins = Plugins()
    for point, names in _DEFAULT_PLUGINS.items():
        plugins.get(point).enabled = [Plugin(name=name) for name in names]
    return plugins


def merge_plugin_set(defaults: PluginSet, custom: PluginSet) -> PluginSet:
    """``custom`` merged into ``defaults`` at one point (upstream ``mergePluginSet``)."""
    disabled = {p.name for p in custom.disabled}
    custom_index = {p.name: i for i, p in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[Plugin] = []
    if ALL not in disabled:
        for plugin in defaults.enabled:
            if plugin.name in disabled:
                continue
            index = custom_index.get(plugin.name)
            if index is not None:
                replaced.add(index)
            enabled.append(plugin.model_copy())
    enabled += [p.model_copy() for i, p in enumerate(custom.enabled) if i not in replaced]
    return PluginSet(enabled=enabled)


def merge_plugins(custom: Plugins | None) -> Plugins:
    """A profile's effective plugins: ``custom`` merged into the defaults."""
    defaults = default_plugins()
    if custom is None:
        return defaults
    merged = Plugins()
    for point in EXTENSION_POINTS:
        merged.get(point).enabled = merge_plugin_set(defaults.get(point),
                                                     custom.get(point)).enabled
    return merged


def default_plugin_args(name: str) -> PluginArgs:
    """The defaulted args of plugin ``name`` (which must be in ARGS_KINDS)."""
    model = ARGS_KINDS[name]
    return model(api_version=V1ALPHA2, kind=model.kind_name())


def bind_address(address: str | None) -> str | None:
    """A healthz/metrics address as upstream defaults it: unset → ``0.0.0.0:10251``; an empty
    host → ``0.0.0.0``; a bare IP gets port 10251; anything else is left for validation."""
    if address is None:
        return f"0.0.0.0:{DEFAULT_INSECURE_PORT}"
    split = split_host_port(address)
    if split is not None:
        return join_host_port(split[0] or "0.0.0.0", split[1])
    try:
        ipaddress.ip_address(address)
    except ValueError:
        return address
    return join_host_port(address, str(DEFAULT_INSECURE_PORT))


def split_host_port(address: str) -> tuple[str, str] | None:
    """``(host, port)`` as Go's ``net.SplitHostPort`` splits ``address``, or None when it is
    not ``host:port`` (``[v6]:port`` for an IPv6 host)."""
    if address.startswith("["):
        host, sep, rest = address[1:].partition("]")
        if not sep or not rest.startswith(":") or ":" in rest[1:]:
            return None
        return host, rest[1:]
    host, sep, port = address.rpartition(":")
    if not sep or ":" in host or "[" in host or "]" in host:
        return None
    return host, port


def join_host_port(host: str, port: str) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def set_defaults(config: DeschedulerConfiguration) -> None:
    """Default ``config`` in place: one profile if none; the name ``koord-descheduler`` for a
    lone unnamed profile (with several, validation asks for names); each profile's plugins
    merged with the defaults; default args for every enabled plugin with a known args kind and
    no ``pluginConfig`` entry, appended in name order; the bind addresses."""
    if not config.profiles:
        config.profiles.append(DeschedulerProfile())
    if len(config.profiles) == 1 and not config.profiles[0].name:
        config.profiles[0].name = DEFAULT_PROFILE_NAME
    for profile in config.profiles:
        profile.plugins = merge_plugins(profile.plugins)
        configured = {pc.name for pc in profile.plugin_config}
        profile.plugin_config += [
            PluginConfig(name=name, args=default_plugin_args(name))
            for name in profile.plugins.names() if name in ARGS_KINDS and name not in configured
        ]
    config.healthz_bind_address = bind_address(config.healthz_bind_address)
    config.metrics_bind_address = bind_address(config.metrics_bind_address)
