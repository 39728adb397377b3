"""The shared informer factory: one watch per resource and filter, per process.

Corresponds to client-go's generated ``informers.SharedInformerFactory`` (and
controller-runtime's cache): every component asks the factory instead of building informers,
so two controllers that both need pods share one list/watch and one store. Informers are keyed
by group/version/resource, namespace, label selector, field selector and whether objects are
decoded into ``api`` models.

    factory = SharedInformerFactory(client, resync_period=0)
    pods = factory.informer_for(PODS)                       # indexed by namespace and nodeName
    metrics = factory.informer_for(NODE_METRICS)            # NodeMetric models
    pods.add_event_handler(EventHandlerFuncs(add=on_pod))
    factory.start()
    factory.wait_for_cache_sync(timeout=60)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pkg.client.informers.informer import SharedInformer, Transform, wait_for_cache_sync
from pkg.client.informers.reflector import ResourceListerWatcher
from pkg.client.informers.store import (
    NAMESPACE_INDEX,
    NODE_NAME_INDEX,
    IndexFunc,
    namespace_index,
    pod_node_name_index,
)
from pkg.client.resources import PODS, Resource
from pkg.client.rest import Client
from pkg.util.clock import REAL_CLOCK, Clock
from pkg.util.flowcontrol import Backoff


@dataclass(frozen=True)
class InformerKey:
    group: str
    version: str
    resource: str
    namespace: str
    label_selector: str
    field_selector: str
    typed: bool
    transform: Transform | None = None

    def __str__(self) -> str:
        parts = [f"{self.resource}.{self.version}.{self.group}".rstrip(".")]
        if self.namespace:
            parts.append(f"ns={self.namespace}")
        if self.label_selector:
            parts.append(f"labels={self.label_selector}")
        if self.field_selector:
            parts.append(f"fields={self.field_selector}")
        return " ".join(parts)


def model_transform(resource: Resource) -> Transform:
    """Decode objects into the resource's ``api`` model (errors name the bad field)."""
    from api.loader import load_object

    def transform(obj: dict[str, Any]) -> Any:
        if "apiVersion" not in obj:
            obj["apiVersion"] = resource.api_version
        if "kind" not in obj:
            obj["kind"] = resource.kind
        return load_object(obj)

    return transform


def default_indexers(resource: Resource) -> dict[str, IndexFunc]:
    out: dict[str, IndexFunc] = {}
    if resource.namespaced:
        out[NAMESPACE_INDEX] = namespace_index
    if resource.gvr == PODS.gvr:
        out[NODE_NAME_INDEX] = pod_node_name_index
    return out


class SharedInformerFactory:
    """Creates, shares, starts and stops informers for one client. ``backoff`` makes the
    reflectors' backoff (default: client-go's 800 ms to 30 s)."""

    def __init__(self, client: Client, *, resync_period: float = 0.0,
                 namespace: str | None = None, watch_timeout: float = 300.0,
                 clock: Clock = REAL_CLOCK,
                 backoff: Callable[[], Backoff] | None = None) -> None:
        self.client = client
        self.resync_period = resync_period
        self.namespace = namespace
        self.watch_timeout = watch_timeout
        self.clock = clock
        self._backoff = backoff
        self._lock = threading.Lock()
        self._informers: dict[InformerKey, SharedInformer] = {}
        self._started = False

    def informer_for(self, resource: Resource, *, namespace: str | None = None,
                     label_selector: str | None = None, field_selector: str | None = None,
                     indexers: Mapping[str, IndexFunc] | None = None,
                     resync_period: float | None = None, typed: bool | None = None,
                     transform: Transform | None = None) -> SharedInformer:
        """The shared informer for this resource and filter, created on first use.

        ``typed`` (default: whether the resource has an ``api`` model) decodes objects into
        the model; ``transform`` replaces that decoding with any function (and then also
        keys the informer, by identity). ``indexers`` are added to the shared informer.
        """
        ns = namespace if namespace is not None else self.namespace
        ns = (ns or "") if resource.namespaced else ""
        use_model = resource.model is not None if typed is None else typed
        if use_model and resource.model is None:
            raise ValueError(f"{resource} has no api model to decode into")
        key = InformerKey(resource.group, resource.version, resource.plural, ns,
                          label_selector or "", field_selector or "",
                          use_model and transform is None, transform)
        with self._lock:
            inf = self._informers.get(key)
            if inf is None:
                lw = ResourceListerWatcher(self.client, resource, ns or None, label_selector,
                                           field_selector)
                tf = transform or (model_transform(resource) if use_model else None)
                inf = SharedInformer(
                    lw, name=str(key), namespaced=resource.namespaced,
                    resync_period=self.resync_period if resync_period is None
                    else resync_period,
                    indexers=default_indexers(resource), transform=tf,
                    watch_timeout=self.watch_timeout, clock=self.clock,
                    backoff=self._backoff() if self._backoff is not None else None)
                self._informers[key] = inf
                if self._started:
                    inf.start()
        if indexers:
            inf.add_indexers(indexers)
        return inf

    def informers(self) -> dict[InformerKey, SharedInformer]:
        with self._lock:
            return dict(self._informers)

    def start(self) -> None:
        """Start every informer created so far (and, from now on, new ones at creation)."""
        with self._lock:
            self._started = True
            infs = list(self._informers.values())
        for inf in infs:
            inf.start()

    def wait_for_cache_sync(self, timeout: float | None = None,
                            stop: threading.Event | None = None) -> dict[InformerKey, bool]:
        """Wait for every started informer's first list; returns each one's state."""
        infs = self.informers()
        wait_for_cache_sync(*[i for i in infs.values() if i.started], timeout=timeout,
                            stop=stop)
        return {k: i.has_synced() for k, i in infs.items()}

    def shutdown(self) -> None:
        """Stop every informer (their threads end)."""
        with self._lock:
            infs = list(self._informers.values())
            self._started = False
        for inf in infs:
            inf.stop()

__all__ = ["InformerKey", "SharedInformerFactory", "default_indexers", "model_transform"]
