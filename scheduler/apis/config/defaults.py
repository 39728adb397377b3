"""Defaulting a decoded configuration: profiles, their plugins and their plugins' args.

Corresponds to ``SetDefaults_KubeSchedulerConfiguration`` and ``setDefaults_KubeSchedulerProfile``
of kube-scheduler's ``pkg/scheduler/apis/config/{v1beta2,v1beta3,v1}/defaults.go``; the
defaults of plain fields are those of the models in ``types.py``, the defaults of plugin args
those of their models.
"""

from __future__ import annotations

from scheduler.apis.config.default_plugins import merge_plugins
from scheduler.apis.config.plugin_args import ARGS_KINDS, default_plugin_args
from scheduler.apis.config.types import (
    DEFAULT_SCHEDULER_NAME,
    KubeSchedulerConfiguration,
    KubeSchedulerProfile,
    PluginConfig,
)


def set_defaults(config: KubeSchedulerConfiguration) -> None:
    """Default ``config`` in place: one profile if none; the name ``default-scheduler`` for a
    lone unnamed profile (with several, validation asks for names); each profile's plugins
    merged with the defaults of the apiVersion; default args for every enabled plugin with a
    known args kind and no ``pluginConfig`` entry, appended in name order."""
    if not config.profiles:
        config.profiles.append(KubeSchedulerProfile())
    if len(config.profiles) == 1 and config.profiles[0].scheduler_name is None:
        config.profiles[0].scheduler_name = DEFAULT_SCHEDULER_NAME
    for profile in config.profiles:
        profile.plugins = merge_plugins(config.api_version, profile.plugins)
        configured = {pc.name for pc in profile.plugin_config}
        profile.plugin_config += [
            PluginConfig(name=name, args=default_plugin_args(name, config.api_version))
            for name in profile.plugins.names() if name in ARGS_KINDS and name not in configured
        ]
