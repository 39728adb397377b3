"""Test helpers for the wrapped sigs.k8s.io/descheduler plugins: one plugin in a profile with
DefaultEvictor as filter and evict plugin, over listers holding the test's nodes and pods, as
upstream's plugin tests build their framework handle."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from descheduler.apis.config.loader import decode_plugin_args
from descheduler.apis.config.registry import PLUGIN_POINTS
from descheduler.apis.config.types import DeschedulerProfile
from descheduler.framework.limiter import EvictionLimiter
from descheduler.framework.plugins.kubernetes import PodLifeTime, RemoveFailedPods
from descheduler.framework.registry import in_tree_registry
from descheduler.framework.runtime import Framework
from descheduler.framework.testing import NOW, FakeClient, listers
from pkg.util.clock import FakeClock
from scheduler.apis.config.base import PluginArgs


class Env:
    """``plugin`` with ``args`` (raw JSON, decoded and defaulted as the loader does) and
    DefaultEvictor (with ``evictor`` args) over ``nodes`` and ``pods``."""

    def __init__(self, plugin: str, nodes: Sequence[dict[str, Any]],
                 pods: Sequence[dict[str, Any]], args: dict[str, Any] | None = None, *,
                 evictor: dict[str, Any] | None = None, limiter: EvictionLimiter | None = None,
                 now: float = NOW) -> None:
        decoded, errors = decode_plugin_args(plugin, args or {})
        assert errors == [], errors
        assert isinstance(decoded, PluginArgs), decoded
        problems = decoded.validate_args()
        assert problems == [], problems
        evictor_args, errors = decode_plugin_args("DefaultEvictor", evictor or {})
        assert errors == [], errors
        [point] = PLUGIN_POINTS[plugin]
        profile = DeschedulerProfile.model_validate({
            "name": "p",
            "plugins": {point: {"enabled": [{"name": plugin}]},
                        "evict": {"enabled": [{"name": "DefaultEvictor"}]},
                        "filter": {"enabled": [{"name": "DefaultEvictor"}]}},
            "pluginConfig": [{"name": plugin, "args": decoded},
                             {"name": "DefaultEvictor", "args": evictor_args}]})
        self.clock = FakeClock(now)
        registry = in_tree_registry()
        # the plugins that read the clock get the test's
        if plugin == PodLifeTime.__name__:
            registry[plugin] = lambda a, h: PodLifeTime(a, h, self.clock)
        elif plugin == RemoveFailedPods.__name__:
            registry[plugin] = lambda a, h: RemoveFailedPods(a, h, self.clock)
        self.point = point
        self.nodes = list(nodes)
        self.client = FakeClient()
        self.framework = Framework(profile, registry, listers(nodes, pods), self.client,
                                   limiter or EvictionLimiter())

    def run(self) -> list[str]:
        """One pass of the plugin; the names of the pods it evicted, in order."""
        run = (self.framework.run_deschedule_plugins if self.point == "deschedule"
               else self.framework.run_balance_plugins)
        status = run(self.nodes)
        assert status.ok, status.errors
        return [key.split("/")[1] for key in self.client.evicted()]


def with_status(pod: dict[str, Any], **status: Any) -> dict[str, Any]:
    """``pod`` with ``status`` fields set (phase, reason, containerStatuses, ...)."""
    pod["status"] = {**pod["status"], **status}
    return pod


def taint(node: dict[str, Any], key: str, value: str = "",
          effect: str = "NoSchedule") -> dict[str, Any]:
    """``node`` with one more taint."""
    node["spec"].setdefault("taints", []).append({"key": key, "value": value, "effect": effect})
    return node


def ago(seconds: float) -> str:
    """The creationTimestamp of a pod ``seconds`` old at the tests' NOW."""
    return datetime.fromtimestamp(NOW - seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def waiting(reason: str, restarts: int = 0) -> dict[str, Any]:
    """A container status waiting for ``reason``."""
    return {"name": "c", "restartCount": restarts, "state": {"waiting": {"reason": reason}}}


def terminated(reason: str = "", exit_code: int = 0, restarts: int = 0) -> dict[str, Any]:
    """A container status that terminated with ``reason`` and ``exit_code``."""
    return {"name": "c", "restartCount": restarts,
            "state": {"terminated": {"reason": reason, "exitCode": exit_code}}}


def with_labels(obj: dict[str, Any], labels: Mapping[str, str]) -> dict[str, Any]:
    """``obj`` with ``labels`` added (keys that are no Python names, such as
    ``kubernetes.io/hostname``)."""
    obj["metadata"]["labels"] = {**obj["metadata"].get("labels", {}), **labels}
    return obj
