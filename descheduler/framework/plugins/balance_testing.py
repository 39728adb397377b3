"""Test helpers for the balance plugins: one pass of a plugin from the in-tree registry over a
framework with DefaultEvictor as filter and evict plugin, and an API client recording the
patches plugins write (deletion costs, cordons)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from descheduler.apis.config.args import DefaultEvictorArgs
from descheduler.apis.config.types import DeschedulerProfile
from descheduler.framework.limiter import EvictionLimiter
from descheduler.framework.registry import in_tree_registry
from descheduler.framework.runtime import Framework
from descheduler.framework.testing import FakeClient, listers
from descheduler.framework.types import Services
from pkg.client.errors import ApiError
from pkg.client.resources import Resource
from pkg.client.rest import Client
from pkg.util.clock import FakeClock
from scheduler.apis.config.base import PluginArgs


@dataclass
class PatchRecorder:
    """The ``patch`` of an API client: records ``(kind, namespace/name, patch)``; names in
    ``refuse`` are answered with a 500."""

    patches: list[tuple[str, str, Any]] = field(default_factory=list)
    refuse: set[str] = field(default_factory=set)

    def patch(self, resource: Resource, name: str, patch: Any, namespace: str | None = None,
              **_: Any) -> dict[str, Any]:
        if name in self.refuse:
            raise ApiError(500, "InternalError", f"refusing {name}")
        key = f"{namespace}/{name}" if namespace else name
        self.patches.append((resource.kind, key, patch))
        return {}


@dataclass
class BalanceRun:
    framework: Framework
    client: FakeClient
    kube: PatchRecorder

    def run(self) -> list[str]:
        """One balance pass; the names of the pods evicted in it, in order."""
        before = len(self.client.evicted())
        self.framework.limiter.reset()
        status = self.framework.run_balance_plugins(list(self.framework.nodes.list()))
        assert status.ok, status.errors
        return [key.split("/")[1] for key in self.client.evicted()[before:]]


def balance_run(plugin: str, args: PluginArgs, nodes: Sequence[dict[str, Any]],
                pods: Sequence[dict[str, Any]], *, dry_run: bool = False,
                evictor_args: dict[str, Any] | None = None) -> BalanceRun:
    """``plugin`` with valid ``args`` in a profile of its own."""
    assert args.validate_args() == [], args.validate_args()
    profile = DeschedulerProfile.model_validate({
        "name": "p", "plugins": {"balance": {"enabled": [{"name": plugin}]},
                                 "evict": {"enabled": [{"name": "DefaultEvictor"}]},
                                 "filter": {"enabled": [{"name": "DefaultEvictor"}]}},
        "pluginConfig": [{"name": plugin, "args": args},
                         {"name": "DefaultEvictor",
                          "args": DefaultEvictorArgs.model_validate(evictor_args or {})}]})
    client, kube = FakeClient(), PatchRecorder()
    services = Services(kube_client=cast(Client, kube), informer_factory=cast(Any, None),
                        event_recorder=cast(Any, None), clock=FakeClock(0.0))
    framework = Framework(profile, in_tree_registry(), listers(nodes, pods), client,
                          EvictionLimiter(), dry_run=dry_run, services=services)
    return BalanceRun(framework, client, kube)
