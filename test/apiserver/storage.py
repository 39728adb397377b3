"""In-memory object storage with one global, monotonically increasing resourceVersion.

Corresponds to upstream ``k8s.io/apiserver/pkg/storage`` (etcd3 store) plus the indexes of the
watch cache. Objects are plain JSON dicts, treated as immutable once stored (writers store a new
dict), so lists, watch events and continue-token snapshots can share them without copying.
A collection is keyed by (group, plural): all served versions of a resource share it.
"""

from __future__ import annotations

import itertools
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .watch import Event, Stored, WatchCache


def object_key(namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


class Collection:
    """The objects of one resource, with a namespace index and an optional field index."""

    def __init__(
        self,
        gr: tuple[str, str],
        namespaced: bool,
        watch_capacity: int,
        start_rv: int,
        index: tuple[str, Callable[[dict[str, Any]], str]] | None = None,
    ) -> None:
        self.gr = gr
        self.namespaced = namespaced
        self.items: dict[str, Stored] = {}
        self.by_ns: dict[str, dict[str, Stored]] = {}
        self.index = index
        self.by_index: dict[str, dict[str, Stored]] = {}
        self.watch = WatchCache(watch_capacity, start_rv, index)
        self._sorted: list[str] | None = None
        self._sorted_ns: dict[str, list[str]] = {}

    def __len__(self) -> int:
        return len(self.items)

    def get(self, namespace: str | None, name: str) -> Stored | None:
        return self.items.get(object_key(namespace, name))

    def sorted_items(self, namespace: str | None = None) -> list[Stored]:
        """Objects in key order (namespace/name), as etcd lists them."""
        if namespace and self.namespaced:
            names = self._sorted_ns.get(namespace)
            bucket = self.by_ns.get(namespace, {})
            if names is None:
                names = self._sorted_ns[namespace] = sorted(bucket)
            return [bucket[n] for n in names]
        keys = self._sorted
        if keys is None:
            keys = self._sorted = sorted(self.items)
        items = self.items
        return [items[k] for k in keys]

    def indexed(self, value: str) -> list[Stored]:
        """Objects whose indexed field equals ``value``, in key order."""
        bucket = self.by_index.get(value, {})
        return [bucket[k] for k in sorted(bucket)]

    def namespace_count(self, namespace: str) -> int:
        return len(self.by_ns.get(namespace, ()))

    # -- mutation (called by Storage only) ----------------------------------------------------

    def _put(self, key: str, st: Stored, old: Stored | None) -> None:
        self.items[key] = st
        md = st.obj["metadata"]
        ns = md.get("namespace") if self.namespaced else None
        if old is None:
            self._sorted = None
            if ns:
                self.by_ns.setdefault(ns, {})[md["name"]] = st
                self._sorted_ns.pop(ns, None)
        elif ns:
            self.by_ns[ns][md["name"]] = st
        if self.index is not None:
            get = self.index[1]
            v = get(st.obj)
            if old is not None:
                ov = get(old.obj)
                if ov != v:
                    b = self.by_index.get(ov)
                    if b is not None:
                        b.pop(key, None)
                        if not b:
                            del self.by_index[ov]
            self.by_index.setdefault(v, {})[key] = st

    def _remove(self, key: str) -> Stored | None:
        st = self.items.pop(key, None)
        if st is None:
            return None
        self._sorted = None
        md = st.obj["metadata"]
        ns = md.get("namespace") if self.namespaced else None
        if ns:
            b = self.by_ns.get(ns)
            if b is not None:
                b.pop(md["name"], None)
                if not b:
                    del self.by_ns[ns]
            self._sorted_ns.pop(ns, None)
        if self.index is not None:
            v = self.index[1](st.obj)
            b = self.by_index.get(v)
            if b is not None:
                b.pop(key, None)
                if not b:
                    del self.by_index[v]
        return st


@dataclass(slots=True)
class SavedCollection:
    """The objects of one collection as a previous process kept them (see persistence.py)."""

    namespaced: bool
    items: dict[str, dict[str, Any]] = field(default_factory=dict)  # key -> object


class Snapshot:
    """The remaining items of a paginated list, frozen at the first page's resourceVersion."""

    __slots__ = ("rv", "items", "created")

    def __init__(self, rv: int, items: list[Stored]) -> None:
        self.rv = rv
        self.items = items
        self.created = time.monotonic()


class Storage:
    """All collections, the resourceVersion counter and list snapshots for continue tokens."""

    def __init__(
        self,
        watch_capacity: int = 20_000,
        snapshot_ttl: float = 300.0,
        max_snapshots: int = 64,
    ) -> None:
        self.rv = 0
        self.watch_capacity = watch_capacity
        self.collections: dict[tuple[str, str], Collection] = {}
        self.snapshots: OrderedDict[int, Snapshot] = OrderedDict()
        self.snapshot_ttl = snapshot_ttl
        self.max_snapshots = max_snapshots
        self._snap_ids = itertools.count(1)
        # Called with each write's collection and event before the write is applied or seen
        # by watchers (the persistence journal's write-ahead log); raising refuses the write.
        self.before_write: list[Callable[[Collection, Event], None]] = []

    def collection(
        self,
        gr: tuple[str, str],
        namespaced: bool,
        index: tuple[str, Callable[[dict[str, Any]], str]] | None = None,
    ) -> Collection:
        c = self.collections.get(gr)
        if c is None:
            c = self.collections[gr] = Collection(
                gr, namespaced, self.watch_capacity, self.rv, index
            )
        return c

    def drop_collection(self, gr: tuple[str, str]) -> None:
        c = self.collections.pop(gr, None)
        if c is not None:
            c.watch.close_all()

    def _next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def _log(self, c: Collection, ev: Event) -> None:
        for fn in self.before_write:
            fn(c, ev)

    def restore(self, rv: int, saved: Mapping[tuple[str, str], SavedCollection]) -> None:
        """Load the objects a previous process kept, at its last resourceVersion ``rv``.

        Watch caches start empty at ``rv``: a watch from an older resourceVersion gets 410 Gone
        and its client relists, as after an etcd compaction."""
        self.rv = max(self.rv, rv)
        for gr, s in saved.items():
            c = self.collection(gr, s.namespaced)
            for key, obj in s.items.items():
                c._put(key, Stored(obj), None)
        for c in self.collections.values():
            c.watch.window_rv = self.rv

    def create(self, c: Collection, obj: dict[str, Any]) -> Stored:
        rv = self._next_rv()
        md = obj["metadata"]
        md["resourceVersion"] = str(rv)
        st = Stored(obj)
        ev = Event(rv, "ADDED", st, None)
        self._log(c, ev)
        c._put(
            object_key(md.get("namespace") if c.namespaced else None, md["name"]),
            st,
            None,
        )
        c.watch.add_event(ev)
        return st

    def update(self, c: Collection, obj: dict[str, Any], old: Stored) -> Stored:
        rv = self._next_rv()
        md = obj["metadata"]
        md["resourceVersion"] = str(rv)
        st = Stored(obj)
        ev = Event(rv, "MODIFIED", st, old)
        self._log(c, ev)
        c._put(
            object_key(md.get("namespace") if c.namespaced else None, md["name"]),
            st,
            old,
        )
        c.watch.add_event(ev)
        return st

    def delete(self, c: Collection, old: Stored, final: dict[str, Any] | None = None) -> Stored:
        """Remove an object; the DELETED event carries its last state (``final``, default the
        stored object) with the deletion's resourceVersion."""
        rv = self._next_rv()
        md = old.obj["metadata"]
        last = dict(final if final is not None else old.obj)
        last["metadata"] = dict(last["metadata"], resourceVersion=str(rv))
        st = Stored(last)
        ev = Event(rv, "DELETED", st, old)
        self._log(c, ev)
        c._remove(object_key(md.get("namespace") if c.namespaced else None, md["name"]))
        c.watch.add_event(ev)
        return st

    # -- continue-token snapshots -------------------------------------------------------------

    def save_snapshot(self, rv: int, items: list[Stored]) -> int:
        now = time.monotonic()
        while self.snapshots:
            sid, snap = next(iter(self.snapshots.items()))
            if len(self.snapshots) >= self.max_snapshots or now - snap.created > self.snapshot_ttl:
                del self.snapshots[sid]
            else:
                break
        sid = next(self._snap_ids)
        self.snapshots[sid] = Snapshot(rv, items)
        return sid

    def snapshot(self, sid: int) -> Snapshot | None:
        snap = self.snapshots.get(sid)
        if snap is not None and time.monotonic() - snap.created > self.snapshot_ttl:
            del self.snapshots[sid]
            return None
        return snap
