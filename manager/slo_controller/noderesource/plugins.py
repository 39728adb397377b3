"""The plugin registration list and ``--noderesource-plugins`` (upstream
`pkg/slo-controller/noderesource/plugins_profile.go`).

Stages run in registration order, upstream's: CPUNormalization, ResourceAmplification,
MidResource, BatchResource, GPUDeviceResource and RDMADeviceResource.
CPUNormalization comes first: its ratio scales batch-cpu when BatchResource writes it.
"""

from __future__ import annotations

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

# Calculate / NodePrepare / NodeStatusCheck / NodeMetaCheck order, as upstream.
PLUGINS: tuple[Plugin, ...] = (CPUNormalizationPlugin(), ResourceAmplificationPlugin(),
                               MidResourcePlugin(), BatchResourcePlugin(),
                               GPUDeviceResourcePlugin(), RDMADeviceResourcePlugin())

ALL_PLUGIN_NAMES = tuple(sorted(p.name for p in PLUGINS))


def is_enabled(name: str, selection: Sequence[str]) -> bool:
    """The ``--controllers`` grammar: first exact ``name`` / ``-name`` wins, else ``*``."""
    for item in selection:
        if item == name:
            return True
        if item == f"-{name}":
            return False
    return "*" in selection


def enabled_plugins(selection: Sequence[str] = ("*",)) -> tuple[Plugin, ...]:
    """The registered plugins the flag value (split on commas) enables, in order."""
    return tuple(p for p in PLUGINS if is_enabled(p.name, selection))


__all__ = ["ALL_PLUGIN_NAMES", "PLUGINS", "enabled_plugins", "is_enabled"]
