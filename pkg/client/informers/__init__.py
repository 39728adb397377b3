"""Informers: local, indexed, event-driven caches of API objects (client-go ``tools/cache``
and ``informers``).

``SharedInformerFactory`` hands out one ``SharedInformer`` per resource and filter; each runs a
``Reflector`` (list, then watch with resume, relist on 410 and after reconnects) into an
``Indexer`` and feeds ``ResourceEventHandler``s in order. ``Lister`` reads the cache.
"""

from pkg.client.informers.factory import InformerKey, SharedInformerFactory, model_transform
from pkg.client.informers.handlers import (
    EventHandlerFuncs,
    FilteringEventHandler,
    ResourceEventHandler,
    deleted_object,
)
from pkg.client.informers.informer import Registration, SharedInformer, wait_for_cache_sync
from pkg.client.informers.listers import Lister, NamespaceLister
from pkg.client.informers.reflector import (
    ListerWatcher,
    Reflector,
    ReflectorStats,
    ResourceListerWatcher,
)
from pkg.client.informers.store import (
    NAMESPACE_INDEX,
    NODE_NAME_INDEX,
    DeletedFinalStateUnknown,
    Indexer,
    meta_namespace_key,
    namespace_index,
    pod_node_name_index,
    split_key,
)

__all__ = [
    "NAMESPACE_INDEX",
    "NODE_NAME_INDEX",
    "DeletedFinalStateUnknown",
    "EventHandlerFuncs",
    "FilteringEventHandler",
    "Indexer",
    "InformerKey",
    "Lister",
    "ListerWatcher",
    "NamespaceLister",
    "Reflector",
    "ReflectorStats",
    "Registration",
    "ResourceEventHandler",
    "ResourceListerWatcher",
    "SharedInformer",
    "SharedInformerFactory",
    "deleted_object",
    "meta_namespace_key",
    "model_transform",
    "namespace_index",
    "pod_node_name_index",
    "split_key",
    "wait_for_cache_sync",
]
