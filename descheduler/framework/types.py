"""The descheduler's plugin kinds and the handle they are built with.

Corresponds to koordinator ``pkg/descheduler/framework/types.go``: ``DeschedulePlugin``,
``BalancePlugin``, ``FilterPlugin`` (``Filter`` and ``PreEvictionFilter``), ``EvictPlugin``,
``Evictor`` and ``Handle``. Objects are parsed-JSON dicts as the informers hold them. A plugin's
kinds are the Protocols its class satisfies; the runtime checks them when a profile places it.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pkg.client.informers.factory import SharedInformerFactory
from pkg.client.informers.listers import SelectorLike
from pkg.client.rest import Client
from pkg.events.recorder import EventRecorder
from pkg.evictions.evictions import EvictionClient
from pkg.util.clock import Clock

Obj = Mapping[str, Any]


@dataclass(slots=True)
class Status:
    """A plugin's result: None errors = success (upstream ``*framework.Status``)."""

    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


@dataclass(frozen=True, slots=True)
class EvictOptions:
    """Why a pod is evicted: the plugin asking, and its reason (upstream ``EvictOptions``)."""

    plugin_name: str = ""
    reason: str = ""
    delete_options: Mapping[str, Any] | None = None


@runtime_checkable
class DeschedulePlugin(Protocol):
    """Per-pod policies: looks at each node's pods on its own."""

    def name(self) -> str: ...

    def deschedule(self, nodes: Sequence[Obj]) -> Status: ...


@runtime_checkable
class BalancePlugin(Protocol):
    """Policies over the nodes together (LowNodeLoad and friends)."""

    def name(self) -> str: ...

    def balance(self, nodes: Sequence[Obj]) -> Status: ...


@runtime_checkable
class FilterPlugin(Protocol):
    """Whether a pod may be evicted: ``filter`` when choosing candidates, ``pre_eviction_filter``
    right before evicting. All filter plugins must agree."""

    def name(self) -> str: ...

    def filter(self, pod: Obj) -> bool: ...

    def pre_eviction_filter(self, pod: Obj) -> bool: ...


@runtime_checkable
class EvictPlugin(Protocol):
    """Performs the eviction (exactly one per profile)."""

    def name(self) -> str: ...

    def evict(self, pod: Obj, options: EvictOptions) -> bool: ...


@runtime_checkable
class Runnable(Protocol):
    """A plugin that runs a controller of its own (the MigrationController): the process starts
    it once leading and stops it on the way out (``pkg.component``'s Runnable)."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


class Evictor(Protocol):
    """What plugins evict through: the profile's filters, the limiter, dry run and its evict
    plugin."""

    def filter(self, pod: Obj) -> bool: ...

    def pre_eviction_filter(self, pod: Obj) -> bool: ...

    def evict(self, pod: Obj, options: EvictOptions) -> bool: ...


class ObjectLister(Protocol):
    """A read-only view of an informer's store (``pkg.client.informers.listers.Lister``)."""

    def list(self, selector: SelectorLike = None) -> list[Any]: ...

    def get(self, name: str, namespace: str | None = None) -> Any: ...

    def by_index(self, index_name: str, value: str) -> builtins.list[Any]: ...


@dataclass(frozen=True, slots=True)
class Services:
    """What a running descheduler gives plugins beyond the listers: the full API client, the
    informer factory (for the objects a plugin watches itself, as the MigrationController its
    PodMigrationJobs), the event recorder and the clock."""

    kube_client: Client
    informer_factory: SharedInformerFactory
    event_recorder: EventRecorder
    clock: Clock


class Handle(Protocol):
    """What plugins are built with: the informers' listers, the evictor and the API client;
    ``services`` only where the framework runs in the process (unit tests of plugins that
    need only listers build it without)."""

    @property
    def nodes(self) -> ObjectLister: ...

    @property
    def pods(self) -> ObjectLister: ...

    @property
    def node_metrics(self) -> ObjectLister: ...

    @property
    def evictor(self) -> Evictor: ...

    @property
    def client(self) -> EvictionClient: ...

    @property
    def services(self) -> Services: ...

    @property
    def dry_run(self) -> bool:
        """The descheduler's dry run: the evictor only logs, and plugins that write other
        things (deletion costs) only log them too."""
        ...

    def pods_on_node(self, node_name: str) -> list[Obj]: ...
