"""The component runner every Koordinator process starts through (controller-runtime's
``pkg/manager`` and ``pkg/manager/signals``)."""

from pkg.component.runner import (
    CACHE_SYNC_TIMEOUT,
    DEFAULT_GRACE_PERIOD,
    Build,
    Component,
    Hooks,
    InformerFactory,
    Runnable,
    Runner,
    Task,
    run,
)
from pkg.component.signals import handle_signals

__all__ = [
    "CACHE_SYNC_TIMEOUT", "DEFAULT_GRACE_PERIOD", "Build", "Component", "Hooks",
    "InformerFactory", "Runnable", "Runner", "Task", "handle_signals", "run",
]
