"""A plugin registry: plugin name → the plugin class, which is its factory.

Corresponds to kube-scheduler ``pkg/scheduler/framework/runtime/registry.go`` (``Registry``,
``Register``). The framework builds a plugin as ``cls(args, handle)``; the extension points it
serves are the interface bases its class subclasses (``interface.py``). koord-scheduler's
registry is ``scheduler/plugins/registry.py``'s ``new_registry``.
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping

from scheduler.framework.interface import Plugin

Registry = MutableMapping[str, type[Plugin]]


class DuplicatePluginError(ValueError):
    """A plugin name registered twice."""


def register(registry: Registry, plugins: Iterable[type[Plugin]]) -> None:
    """Add ``plugins`` under their names."""
    for cls in plugins:
        if cls.name in registry:
            raise DuplicatePluginError(f"plugin {cls.name!r} is already registered "
                                       f"(by {registry[cls.name].__module__})")
        registry[cls.name] = cls
