"""Out-of-tree plugin modules: a plugin written to a file (or a package on --plugin-path)
joins the registry, is enabled in a profile like any other and changes placements; a bad
module is refused with its name."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pkg.util.clock import FakeClock
from scheduler.apis.config import load_scheduler_config
from scheduler.factory import build_scheduler
from scheduler.framework.binder import InMemoryBinder
from scheduler.framework.registry import Registry
from scheduler.frameworkext.outoftree import PluginModuleError, register_plugin_modules
from scheduler.plugins.registry import new_registry

PREFER_LABEL = '''
from scheduler.framework.interface import ScorePlugin


class PreferLabel(ScorePlugin):
    name = "PreferLabel"

    def __init__(self, args, handle):
        super().__init__(args, handle)
        self.key = (args or {}).get("key", "example.com/preferred")

    def score(self, state, pod, node_info):
        return (100 if node_info.labels.get(self.key) == "true" else 0), None


PLUGINS = (PreferLabel,)
'''

CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
- schedulerName: prefer-label
  plugins:
    score: {enabled: [{name: PreferLabel, weight: 10}]}
  pluginConfig:
  - name: PreferLabel
    args: {key: example.com/fast}
"""


@pytest.fixture(autouse=True)
def restore_imports(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Plugin modules and --plugin-path directories do not outlive a test."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        del sys.modules[name]


def write(directory: Path, name: str, source: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return path


def node(name: str, cpu: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}}}


def pod(name: str, scheduler: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"schedulerName": scheduler, "containers": [
                {"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
            "status": {"phase": "Pending"}}


def test_a_plugin_file_is_enabled_in_a_profile_and_changes_placements(tmp_path: Path) -> None:
    path = write(tmp_path, "prefer_label_file.py", PREFER_LABEL)
    binder = InMemoryBinder()
    built = build_scheduler(load_scheduler_config(CONFIG), binder=binder, clock=FakeClock(),
                            plugin_modules=[str(path)])
    sched = built.scheduler
    try:
        # The default plugins prefer the emptier, bigger node; PreferLabel the labelled one.
        built.handlers.add_node(node("big", "16"))
        built.handlers.add_node(node("fast", "4", **{"example.com/fast": "true"}))
        built.handlers.add_pod_to_queue(pod("plain", "default-scheduler"))
        built.handlers.add_pod_to_queue(pod("preferring", "prefer-label"))
        for _ in range(2):
            assert sched.schedule_one(timeout=0)
        assert sched.wait_for_bindings(5)
        assert binder.bindings == {"default/plain": "big", "default/preferring": "fast"}
    finally:
        sched.stop()


def test_a_dotted_module_on_the_plugin_path(tmp_path: Path) -> None:
    write(tmp_path, "acme_plugins/__init__.py", "")
    write(tmp_path, "acme_plugins/prefer.py", PREFER_LABEL)
    registry = new_registry()
    register_plugin_modules(registry, ["acme_plugins.prefer"], [str(tmp_path)])
    assert registry["PreferLabel"].__module__ == "acme_plugins.prefer"


def test_modules_repeat_and_are_comma_separated(tmp_path: Path) -> None:
    one = write(tmp_path, "one_plugin.py", PREFER_LABEL)
    two = write(tmp_path, "two_plugin.py", PREFER_LABEL.replace('"PreferLabel"', '"Other"'))
    registry: Registry = {}
    register_plugin_modules(registry, [f"{one},{two}", str(one)])
    assert sorted(registry) == ["Other", "PreferLabel"]


BAD_MODULES = [
    ("missing.py", None, "no such file"),
    ("syntax_error.py", "def broken(:\n", "importing it failed: SyntaxError: invalid syntax"),
    ("raises.py", "raise RuntimeError('no GPU here')\n",
     "importing it failed: RuntimeError: no GPU here"),
    ("no_plugins.py", "X = 1\n", "it defines no PLUGINS"),
    ("not_a_tuple.py", "PLUGINS = 'PreferLabel'\n", "PLUGINS must be a tuple or list"),
    ("not_a_plugin.py", "class Thing:\n    name = 'Thing'\nPLUGINS = (Thing,)\n",
     "PLUGINS entry <class 'not_a_plugin.Thing'> is not a plugin class"),
    ("nameless.py", "from scheduler.framework.interface import ScorePlugin\n"
                    "class Nameless(ScorePlugin):\n    pass\nPLUGINS = (Nameless,)\n",
     "plugin class Nameless has no name"),
    ("clash.py", "from scheduler.framework.interface import FilterPlugin\n"
                 "class Mine(FilterPlugin):\n    name = 'NodeName'\nPLUGINS = (Mine,)\n",
     "plugin 'NodeName' is already registered (by scheduler.framework.plugins.nodename"),
]


@pytest.mark.parametrize(("file", "source", "problem"), BAD_MODULES,
                         ids=[m[0] for m in BAD_MODULES])
def test_a_bad_module_is_refused_with_its_name(tmp_path: Path, file: str, source: str | None,
                                                problem: str) -> None:
    path = tmp_path / file if source is None else write(tmp_path, file, source)
    with pytest.raises(PluginModuleError) as err:
        register_plugin_modules(new_registry(), [str(path)])
    assert str(err.value).startswith(f"plugin module {str(path)!r}: {problem}")


def test_an_unknown_dotted_module_is_refused() -> None:
    with pytest.raises(PluginModuleError, match=r"^plugin module 'acme\.nowhere': importing "
                                                r"it failed: ModuleNotFoundError"):
        register_plugin_modules(new_registry(), ["acme.nowhere"])
