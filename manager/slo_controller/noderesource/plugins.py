"""The noderesource plugins by name, and ``--noderesource-plugins`` (upstream
`pkg/slo-controller/noderesource/plugins_profile.go`, and ``addPluginOption`` and the flag in
`noderesource_controller.go`).

This is the one place plugins are registered. Each plugin class declares its own name and, by
the stage bases it subclasses (``framework``), the stages it joins; every stage runs the
plugins in this order, upstream's: CPUNormalization, ResourceAmplification, MidResource,
BatchResource, GPUDeviceResource and RDMADeviceResource. CPUNormalization comes first: its
ratio scales batch-cpu when BatchResource writes it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from manager.slo_controller.noderesource.batchresource import BatchResourcePlugin
from manager.slo_controller.noderesource.cpunormalization import CPUNormalizationPlugin
from manager.slo_controller.noderesource.deviceresource import (
    GPUDeviceResourcePlugin,
    RDMADeviceResourcePlugin,
)
from manager.slo_controller.noderesource.framework import Plugin
from manager.slo_controller.noderesource.midresource import MidResourcePlugin
from manager.slo_controller.noderesource.resourceamplification import (
    ResourceAmplificationPlugin,
)

log = logging.getLogger(__name__)

NODE_RESOURCE_PLUGINS: dict[str, type[Plugin]] = {
    plugin.name: plugin
    for plugin in (CPUNormalizationPlugin, ResourceAmplificationPlugin, MidResourcePlugin,
                   BatchResourcePlugin, GPUDeviceResourcePlugin, RDMADeviceResourcePlugin)
}

PLUGINS: tuple[Plugin, ...] = tuple(new() for new in NODE_RESOURCE_PLUGINS.values())

ALL_PLUGIN_NAMES = tuple(sorted(NODE_RESOURCE_PLUGINS))


def is_enabled(name: str, selection: Sequence[str]) -> bool:
    """The ``--controllers`` grammar: first exact ``name`` / ``-name`` wins, else ``*``."""
    for item in selection:
        if item == name:
            return True
        if item == f"-{name}":
            return False
    return "*" in selection


def enabled_plugins(selection: Sequence[str] = ("*",)) -> tuple[Plugin, ...]:
    """The registered plugins the flag value (split on commas) enables, in order. A name no
    plugin has is logged and matches nothing (upstream ignores it silently)."""
    unknown = [item for item in selection
               if item != "*" and item.removeprefix("-") not in NODE_RESOURCE_PLUGINS]
    if unknown:
        log.error("--noderesource-plugins: unknown plugin %s ignored; the plugins are %s",
                  ", ".join(unknown), ", ".join(ALL_PLUGIN_NAMES))
    return tuple(p for p in PLUGINS if is_enabled(p.name, selection))


__all__ = ["ALL_PLUGIN_NAMES", "NODE_RESOURCE_PLUGINS", "PLUGINS", "enabled_plugins",
           "is_enabled"]
