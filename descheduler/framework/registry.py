"""The descheduler's plugin registry: upstream plugin name → factory.

Corresponds to koordinator ``pkg/descheduler/framework/runtime/registry.go`` and the in-tree
registry of ``cmd/koord-descheduler/app`` (``descheduler/apis/config/registry.py`` lists every
name a configuration may use). A factory takes the plugin's args (the typed model of
``ARGS_KINDS``, raw JSON, or None) and the framework's handle. Plugins upstream has that are
not here yet fail when a profile enables them (``FrameworkError``: the plugin does not exist).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from descheduler.controllers.migration.controller import MigrationController
from descheduler.framework.plugins import kubernetes
from descheduler.framework.plugins.custompriority import CustomPriority
from descheduler.framework.plugins.defaultevictor import DefaultEvictor
from descheduler.framework.plugins.fragmentationaware import FragmentationAware
from descheduler.framework.plugins.kubernetes.nodeutilization import (
    HighNodeUtilization,
    LowNodeUtilization,
)
from descheduler.framework.plugins.loadaware import LowNodeLoad
from descheduler.framework.plugins.scaledownbinpack import ScaleDownBinPack
from descheduler.framework.types import Handle

Factory = Callable[[Any, Handle], object]
Registry = Mapping[str, Factory]


def in_tree_registry() -> dict[str, Factory]:
    """The plugins this descheduler can build, by upstream name."""
    return {
        "DefaultEvictor": DefaultEvictor.new, "MigrationController": MigrationController.new,
        "LowNodeLoad": LowNodeLoad.new, "CustomPriority": CustomPriority.new,
        "FragmentationAware": FragmentationAware.new, "ScaleDownBinPack": ScaleDownBinPack.new,
        # the wrapped sigs.k8s.io/descheduler plugins
        **{plugin.__name__: plugin.new for plugin in (
            HighNodeUtilization, LowNodeUtilization, kubernetes.PodLifeTime,
            kubernetes.RemoveFailedPods, kubernetes.RemovePodsHavingTooManyRestarts,
            kubernetes.RemovePodsViolatingNodeAffinity, kubernetes.RemovePodsViolatingNodeTaints,
            kubernetes.RemovePodsViolatingInterPodAntiAffinity, kubernetes.RemoveDuplicates,
            kubernetes.RemovePodsViolatingTopologySpreadConstraint)},
    }
