"""A thread-safe object store with indexes: what informers fill and listers read.

Corresponds to client-go ``tools/cache`` ``store.go``, ``thread_safe_store.go`` and
``index.go``: objects keyed by ``namespace/name`` (``MetaNamespaceKeyFunc``), with named index
functions mapping an object to index values (``namespace``, a pod's ``spec.nodeName``, or any
custom function), so ``by_index("nodeName", "node-1")`` answers without a scan.

Objects are stored as given (parsed JSON dicts, or ``api`` models) and shared with every
reader: treat them as read-only and copy before changing, as with client-go's cache.
"""

from __future__ import annotations

import builtins
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from api.meta import KubeObject

log = logging.getLogger(__name__)

KeyFunc = Callable[[Any], str]
IndexFunc = Callable[[Any], list[str]]

NAMESPACE_INDEX = "namespace"
NODE_NAME_INDEX = "nodeName"


class DeletedFinalStateUnknown:
    """A tombstone: the object was deleted while we were not watching (found missing on a
    relist), so ``obj`` is the last state we knew, possibly stale. Delete handlers receive it
    instead of the object in that case (client-go's type of the same name)."""

    __slots__ = ("key", "obj")

    def __init__(self, key: str, obj: Any) -> None:
        self.key = key
        self.obj = obj

    def __repr__(self) -> str:
        return f"DeletedFinalStateUnknown({self.key!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DeletedFinalStateUnknown) and other.key == self.key and \
            other.obj == self.obj

    __hash__ = None  # type: ignore[assignment]  # unhashable, as any class defining __eq__


# -- metadata access for dicts and models -------------------------------------------------------

def metadata(obj: Any) -> Mapping[str, Any]:
    """The object's metadata as a mapping (JSON names), for dicts and ``api`` models."""
    if isinstance(obj, Mapping):
        md = obj.get("metadata")
        return md if isinstance(md, Mapping) else {}
    if isinstance(obj, KubeObject):
        m = obj.metadata
        return {"name": m.name, "namespace": m.namespace, "labels": m.labels,
                "resourceVersion": m.resource_version, "uid": m.uid,
                "annotations": m.annotations}
    md = getattr(obj, "metadata", None)
    if isinstance(md, Mapping):
        return md
    raise TypeError(f"object of type {type(obj).__name__} has no metadata")


def name_of(obj: Any) -> str:
    return metadata(obj).get("name") or ""


def namespace_of(obj: Any) -> str:
    return metadata(obj).get("namespace") or ""


def resource_version_of(obj: Any) -> str:
    return metadata(obj).get("resourceVersion") or ""


def labels_of(obj: Any) -> Mapping[str, str]:
    return metadata(obj).get("labels") or {}


def meta_namespace_key(obj: Any) -> str:
    """``namespace/name``, or ``name`` for cluster-scoped objects; a tombstone's key; a string
    is taken to be a key already."""
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    if isinstance(obj, str):
        return obj
    md = metadata(obj)
    name = md.get("name")
    if not name:
        raise KeyError("object has no metadata.name")
    ns = md.get("namespace")
    return f"{ns}/{name}" if ns else name


def split_key(key: str) -> tuple[str, str]:
    """(namespace, name) of a ``meta_namespace_key``; namespace is "" when cluster-scoped."""
    ns, sep, name = key.partition("/")
    if not sep:
        return "", ns
    if "/" in name or not ns or not name:
        raise ValueError(f"unexpected key format: {key!r}")
    return ns, name


def namespace_index(obj: Any) -> list[str]:
    """Index function: the object's namespace (``cache.MetaNamespaceIndexFunc``)."""
    return [namespace_of(obj)]


def pod_node_name_index(obj: Any) -> list[str]:
    """Index function: the node a pod is bound to (none while unscheduled)."""
    if isinstance(obj, Mapping):
        node = (obj.get("spec") or {}).get("nodeName")
    else:
        node = getattr(getattr(obj, "spec", None), "node_name", None)
    return [node] if node else []


# -- the store -------------------------------------------------------------------------------

class Indexer:
    """A thread-safe ``key → object`` store with named indexes (client-go ``cache.Indexer``)."""

    def __init__(self, key_func: KeyFunc = meta_namespace_key,
                 indexers: Mapping[str, IndexFunc] | None = None) -> None:
        self.key_func = key_func
        self._lock = threading.RLock()
        self._items: dict[str, Any] = {}
        self._indexers: dict[str, IndexFunc] = dict(indexers or {})
        # index name → index value → keys
        self._indices: dict[str, dict[str, set[str]]] = {n: {} for n in self._indexers}

    # -- writes ---------------------------------------------------------------------------

    def add(self, obj: Any) -> None:
        self.update(obj)

    def update(self, obj: Any) -> None:
        key = self.key_func(obj)
        with self._lock:
            old = self._items.get(key)
            self._items[key] = obj
            self._update_indices(old, obj, key)

    def delete(self, obj: Any) -> None:
        self.delete_key(self.key_func(obj))

    def delete_key(self, key: str) -> Any:
        """Remove by key; returns the removed object (None when absent)."""
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._update_indices(old, None, key)
            return old

    def replace(self, objs: Iterable[Any]) -> None:
        """Swap the whole content (indexes rebuilt)."""
        items = {self.key_func(o): o for o in objs}
        with self._lock:
            self._items = items
            self._indices = {n: {} for n in self._indexers}
            for key, obj in items.items():
                self._update_indices(None, obj, key)

    def _update_indices(self, old: Any, new: Any, key: str) -> None:
        for name, fn in self._indexers.items():
            index = self._indices[name]
            old_values = _values(fn, old) if old is not None else []
            new_values = _values(fn, new) if new is not None else []
            if old_values == new_values:
                continue
            for v in old_values:
                keys = index.get(v)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[v]
            for v in new_values:
                index.setdefault(v, set()).add(key)

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add index functions (and index the objects already stored). Re-adding an index
        name with the same function is a no-op; with another function it is an error."""
        with self._lock:
            for name, fn in indexers.items():
                cur = self._indexers.get(name)
                if cur is not None:
                    if cur is not fn:
                        raise ValueError(f"indexer {name!r} conflicts with an existing one")
                    continue
                self._indexers[name] = fn
                index: dict[str, set[str]] = {}
                for key, obj in self._items.items():
                    for v in _values(fn, obj):
                        index.setdefault(v, set()).add(key)
                self._indices[name] = index

    # -- reads ----------------------------------------------------------------------------

    def get(self, obj: Any) -> Any:
        return self.get_by_key(self.key_func(obj))

    def get_by_key(self, key: str) -> Any:
        with self._lock:
            return self._items.get(key)

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def list(self) -> list[Any]:
        with self._lock:
            return list(self._items.values())

    def list_keys(self) -> builtins.list[str]:
        with self._lock:
            return list(self._items)

    def items(self) -> builtins.list[tuple[str, Any]]:
        with self._lock:
            return list(self._items.items())

    def indexers(self) -> dict[str, IndexFunc]:
        with self._lock:
            return dict(self._indexers)

    def _index(self, name: str) -> dict[str, set[str]]:
        try:
            return self._indices[name]
        except KeyError:
            raise KeyError(f"index {name!r} does not exist") from None

    def index_keys(self, index_name: str, value: str) -> builtins.list[str]:
        """Keys of the objects whose index function yields ``value``."""
        with self._lock:
            return sorted(self._index(index_name).get(value, ()))

    def by_index(self, index_name: str, value: str) -> builtins.list[Any]:
        """Objects whose index function yields ``value`` (in key order)."""
        with self._lock:
            keys = self._index(index_name).get(value, ())
            return [self._items[k] for k in sorted(keys)]

    def index(self, index_name: str, obj: Any) -> builtins.list[Any]:
        """Objects sharing any index value with ``obj``."""
        with self._lock:
            fn = self._indexers.get(index_name)
            if fn is None:
                raise KeyError(f"index {index_name!r} does not exist")
            index = self._indices[index_name]
            keys: set[str] = set()
            for v in _values(fn, obj):
                keys |= index.get(v, set())
            return [self._items[k] for k in sorted(keys)]

    def list_index_func_values(self, index_name: str) -> builtins.list[str]:
        """Every value the index currently holds."""
        with self._lock:
            return sorted(self._index(index_name))


def _values(fn: IndexFunc, obj: Any) -> list[str]:
    try:
        vals = fn(obj)
    except Exception:  # noqa: BLE001 - a bad object must not corrupt the store
        log.exception("index function %s failed on %s", getattr(fn, "__name__", fn),
                      _describe(obj))
        return []
    if len(vals) > 1:
        return sorted(set(vals))
    return list(vals)


def _describe(obj: Any) -> str:
    try:
        return meta_namespace_key(obj)
    except (KeyError, TypeError):
        return type(obj).__name__


__all__ = [
    "NAMESPACE_INDEX", "NODE_NAME_INDEX", "DeletedFinalStateUnknown", "IndexFunc", "Indexer",
    "KeyFunc", "labels_of", "meta_namespace_key", "metadata", "name_of", "namespace_index",
    "namespace_of", "pod_node_name_index", "resource_version_of", "split_key",
]
