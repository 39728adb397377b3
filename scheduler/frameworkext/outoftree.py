"""Out-of-tree plugins: scheduler plugins in modules of the user's, imported at start-up.

Upstream compiles out-of-tree plugins into a koord-scheduler binary of one's own
(``app.WithPlugin`` in ``cmd/koord-scheduler/main.go``). Here nothing is rebuilt: each
``--plugin-module`` names a Python module, either a file (``/opt/plugins/prefer_label.py``,
imported under its file name) or a dotted module name found on ``sys.path`` (with every
``--plugin-path`` directory put first). Both flags repeat and take comma-separated lists.

The module lists its plugin classes in ``PLUGINS``; each joins the registry under its
``name``, exactly as an in-tree plugin, so a profile enables it and ``pluginConfig`` configures
it like any other (its ``args`` are the pluginConfig object as written, a dict, or None). A
module that cannot be imported, lacks ``PLUGINS``, lists something that is not a plugin class
or reuses a registered name raises ``PluginModuleError`` naming the module, and koord-scheduler
exits.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType

from scheduler.framework.interface import Plugin
from scheduler.framework.registry import DuplicatePluginError, Registry, register
from scheduler.framework.runtime import FrameworkError

log = logging.getLogger(__name__)

# The module attribute that lists the plugin classes.
PLUGINS = "PLUGINS"


class PluginModuleError(FrameworkError):
    def __init__(self, module: str, problem: str) -> None:
        super().__init__(f"plugin module {module!r}: {problem}")


def split_list(values: Iterable[str]) -> list[str]:
    """The entries of repeated, comma-separated flag values, each once, in order."""
    out: list[str] = []
    for value in values:
        for entry in value.split(","):
            entry = entry.strip()
            if entry and entry not in out:
                out.append(entry)
    return out


def register_plugin_modules(registry: Registry, modules: Sequence[str],
                            paths: Sequence[str] = ()) -> None:
    """Import ``modules`` (``--plugin-module`` values) and register their ``PLUGINS``, with
    the ``--plugin-path`` directories ``paths`` first on ``sys.path``."""
    for directory in reversed(split_list(paths)):
        if directory not in sys.path:
            sys.path.insert(0, directory)
    for spec in split_list(modules):
        plugins = _plugins(spec, _import(spec))
        try:
            register(registry, plugins)
        except DuplicatePluginError as err:
            raise PluginModuleError(spec, str(err)) from err
        log.info("registered out-of-tree plugins %s from %s",
                 ", ".join(cls.name for cls in plugins), spec)


def _import(spec: str) -> ModuleType:
    if not spec.endswith(".py") and "/" not in spec:
        try:
            return importlib.import_module(spec)
        except Exception as err:  # noqa: BLE001 - whatever the module raises stops start-up
            raise PluginModuleError(spec, f"importing it failed: {_describe(err)}") from err
    path = Path(spec)
    if not path.is_file():
        raise PluginModuleError(spec, "no such file")
    name = path.stem
    loaded = sys.modules.get(name)
    if loaded is not None:
        if Path(loaded.__file__ or "").resolve() == path.resolve():
            return loaded  # this file, imported before
        raise PluginModuleError(spec, f"a module named {name!r} is already imported; "
                                      "rename the file")
    loader_spec = importlib.util.spec_from_file_location(name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise PluginModuleError(spec, "not a Python module")
    module = importlib.util.module_from_spec(loader_spec)
    # Registered before it runs, as an import does (dataclasses, for one, look it up).
    sys.modules[name] = module
    try:
        loader_spec.loader.exec_module(module)
    except Exception as err:  # noqa: BLE001 - whatever the module raises stops start-up
        del sys.modules[name]
        raise PluginModuleError(spec, f"importing it failed: {_describe(err)}") from err
    return module


def _plugins(spec: str, module: ModuleType) -> tuple[type[Plugin], ...]:
    plugins = getattr(module, PLUGINS, None)
    if plugins is None:
        raise PluginModuleError(spec, f"it defines no {PLUGINS} (the plugin classes it "
                                      f"adds, e.g. {PLUGINS} = (MyPlugin,))")
    if not isinstance(plugins, (tuple, list)):
        raise PluginModuleError(spec, f"{PLUGINS} must be a tuple or list of plugin "
                                      f"classes, not {type(plugins).__name__}")
    for cls in plugins:
        if not (isinstance(cls, type) and issubclass(cls, Plugin)):
            raise PluginModuleError(spec, f"{PLUGINS} entry {cls!r} is not a plugin class "
                                          "(a subclass of the scheduler.framework.interface "
                                          "bases)")
        if not cls.name:
            raise PluginModuleError(spec, f"plugin class {cls.__name__} has no name")
    return tuple(plugins)


def _describe(err: BaseException) -> str:
    if isinstance(err, SyntaxError):
        return f"SyntaxError: {err.msg} (line {err.lineno})"
    return f"{type(err).__name__}: {err}"
