"""koord-manager's controllers by name (upstream ``cmd/koord-manager/options/controllers.go``:
``controllerAddFuncs`` and the ``--controllers`` selection).

``REGISTRY`` maps each upstream name to the function that builds the controller from what the
controllers share (``Context``: controller-runtime's one client, one informer cache and one
event broadcaster). ``Controllers`` is the leader-bound runnable that main registers: it is
built on every replica (so the shared cache knows its informers), but starts the controllers
only on the leader, in ``CONTROLLERS`` order, and stops them in reverse.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from manager.quota_controller import QuotaProfileController
from manager.quota_controller.profile import EVENT_SOURCE as QUOTA_PROFILE_EVENT_SOURCE
from manager.slo_controller.config import SLOConfigCache
from manager.slo_controller.nodemetric.controller import NodeMetricController
from manager.slo_controller.noderesource.controller import NodeResourceController
from manager.slo_controller.noderesource.plugins import enabled_plugins, is_enabled
from manager.slo_controller.nodeslo.controller import NodeSLOController
from pkg.client.informers import SharedInformerFactory
from pkg.client.rest import Client
from pkg.events.recorder import EventBroadcaster
from pkg.features import default_feature_gate
from pkg.features.features import COLOCATION_PROFILE_CONTROLLER

NODEMETRIC = "nodemetric"
NODERESOURCE = "noderesource"
NODESLO = "nodeslo"
QUOTAPROFILE = "quotaprofile"
COLOCATIONPROFILE = "colocationprofile"
CONTROLLERS = (NODEMETRIC, NODERESOURCE, NODESLO, QUOTAPROFILE)
# Upstream's names, the unimplemented colocationprofile included (what --controllers lists).
ALL_NAMES = tuple(sorted(CONTROLLERS + (COLOCATIONPROFILE,)))
# How long a stopping controller's running reconciles may take.
STOP_TIMEOUT = 10.0

log = logging.getLogger(__name__)


class Controller(Protocol):
    def start(self, sync_timeout: float | None = None) -> bool: ...

    def stop(self, timeout: float | None = 30.0) -> bool: ...


@dataclass
class Context:
    """What the controllers share, and the settings they take from the flags."""

    client: Client
    factory: SharedInformerFactory
    events: EventBroadcaster
    config_namespace: str
    slo_config_name: str
    noderesource_plugins: Sequence[str]
    slo_config: SLOConfigCache | None = field(default=None, init=False)

    def config_cache(self) -> SLOConfigCache:
        """The slo-controller-config cache, created on first use."""
        if self.slo_config is None:
            self.slo_config = SLOConfigCache(
                self.factory, self.events.new_recorder("slo-controller"),
                namespace=self.config_namespace, name=self.slo_config_name)
        return self.slo_config


REGISTRY: dict[str, Callable[[Context], Controller]] = {
    NODEMETRIC: lambda c: NodeMetricController(c.client, c.factory, c.config_cache()),
    NODERESOURCE: lambda c: NodeResourceController(
        c.client, c.factory, c.config_cache(),
        plugins=enabled_plugins(c.noderesource_plugins),
        recorder=c.events.new_recorder("slo-controller")),
    NODESLO: lambda c: NodeSLOController(c.client, c.factory, c.config_cache(),
                                         c.events.new_recorder("nodeslo-controller")),
    QUOTAPROFILE: lambda c: QuotaProfileController(
        c.client, c.factory, c.events.new_recorder(QUOTA_PROFILE_EVENT_SOURCE)),
}


def enabled_controllers(selection: Sequence[str]) -> list[str]:
    """The controllers to run, by the ``--controllers`` grammar, in ``CONTROLLERS`` order."""
    names = [n for n in CONTROLLERS if is_enabled(n, selection)]
    if default_feature_gate.enabled(COLOCATION_PROFILE_CONTROLLER) and \
            is_enabled(COLOCATIONPROFILE, selection):
        log.warning("controller %s (gate %s) is not implemented; not starting it",
                    COLOCATIONPROFILE, COLOCATION_PROFILE_CONTROLLER)
    return names


class Controllers:
    """The enabled controllers as one runnable, started once leading."""

    def __init__(self, context: Context, names: Sequence[str]) -> None:
        self.built = [(name, REGISTRY[name](context)) for name in names]
        self.running: list[tuple[str, Controller]] = []

    def start(self) -> None:
        log.info("starting controllers: %s", ", ".join(n for n, _ in self.built) or "(none)")
        for name, ctrl in self.built:
            # The runner waited for the shared cache before starting us: a controller whose
            # caches have not synced by now is left out.
            if not ctrl.start(sync_timeout=0):
                log.error("controller %s: caches did not sync", name)
                continue
            self.running.append((name, ctrl))
        log.info("controllers started: %s", ", ".join(n for n, _ in self.running) or "(none)")

    def stop(self) -> None:
        for name, ctrl in reversed(self.running):
            if not ctrl.stop(timeout=STOP_TIMEOUT):
                log.warning("controller %s: reconciles still running at shutdown", name)
