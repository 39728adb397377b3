"""Reads of the admission handlers served from informer caches.

Upstream's webhook handlers read through controller-runtime's cached client
(``mgr.GetClient()``): ClusterColocationProfiles, Namespaces and PriorityClasses come from
informers, so admitting a pod never waits on an API round trip or on the manager's client rate
limit (``--rest-config-qps``). ``CachedReader`` does the same for the resources it is given:
``get``/``list_all`` answer from the informer's store once it has synced; before that, for any
other resource, and for a ``get`` the cache does not have yet (an object created a moment ago),
they ask the API server. Like upstream, a profile created an instant before a pod may not be
seen by that pod's admission yet.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from pkg.client import Client, Resource
from pkg.client.informers import SharedInformerFactory
from pkg.client.informers.informer import SharedInformer

Obj = dict[str, Any]


class Reader(Protocol):
    """What the webhooks read through: a ``Client`` or a ``CachedReader``."""

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj: ...

    def list_all(self, resource: Resource) -> Obj: ...


def _key(resource: Resource) -> tuple[str, str]:
    return resource.group, resource.plural


class CachedReader:
    def __init__(self, client: Client, resources: Iterable[Resource]) -> None:
        self.client = client
        self._factory = SharedInformerFactory(client)
        self._informers: dict[tuple[str, str], SharedInformer] = {
            _key(r): self._factory.informer_for(r, typed=False) for r in resources}

    def start(self) -> None:
        self._factory.start()

    def stop(self) -> None:
        self._factory.shutdown()

    def informer(self, resource: Resource) -> SharedInformer:
        """The informer of one of the resources given (to add event handlers to)."""
        return self._informers[_key(resource)]

    def has_synced(self) -> bool:
        return all(i.has_synced() for i in self._informers.values())

    def _synced(self, resource: Resource) -> SharedInformer | None:
        inf = self._informers.get(_key(resource))
        return inf if inf is not None and inf.has_synced() else None

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj:
        inf = self._synced(resource)
        if inf is not None:
            obj = inf.indexer.get_by_key(f"{namespace}/{name}" if namespace else name)
            if obj is not None:
                return obj
        return self.client.get(resource, name, namespace)

    def list_all(self, resource: Resource) -> Obj:
        inf = self._synced(resource)
        if inf is None:
            return self.client.list_all(resource)
        return {"items": inf.indexer.list()}
