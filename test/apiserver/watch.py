"""Watch machinery: a bounded event history per collection and per-watcher queues.

Corresponds to upstream ``k8s.io/apiserver/pkg/storage/cacher`` (the watch cache): every write
becomes an event kept in a ring buffer, so a watch can resume from a recent resourceVersion;
a resourceVersion older than the buffer answers 410 Gone. Events fan out to watchers through
per-watcher buffers without copying objects: each stored object is serialized once and its
bytes are shared by list responses and all watchers. Watchers whose filter pins a namespace
(or an indexed field such as a pod's ``spec.nodeName``) are indexed by it, so a write only
visits the watchers it can concern.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

import orjson


class Stored:
    """An immutable stored object and its lazily cached JSON encoding."""

    __slots__ = ("obj", "_raw")

    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj = obj
        self._raw: bytes | None = None

    def raw(self) -> bytes:
        r = self._raw
        if r is None:
            r = self._raw = orjson.dumps(self.obj)
        return r

    def copy(self) -> dict[str, Any]:
        """A deep, mutable copy of the object."""
        return orjson.loads(self.raw())


class Event:
    """One write: type ADDED/MODIFIED/DELETED, the new state and the previous one."""

    __slots__ = ("rv", "type", "new", "old")

    def __init__(self, rv: int, type_: str, new: Stored, old: Stored | None) -> None:
        self.rv = rv
        self.type = type_
        self.new = new
        self.old = old


# Encodes (event type, stored object) to one line of the watch stream.
Encoder = Callable[[str, Stored], bytes]


def default_encoder(type_: str, st: Stored) -> bytes:
    return b'{"type":"' + type_.encode() + b'","object":' + st.raw() + b"}\n"


class Watcher:
    """One watch connection: a filter, an encoder and a buffer of encoded lines."""

    __slots__ = (
        "predicate",
        "encoder",
        "namespace",
        "index_value",
        "buf",
        "wake",
        "closed",
        "overflowed",
        "max_buffer",
        "bookmarks",
        "last_rv",
        "cache",
    )

    def __init__(
        self,
        predicate: Callable[[dict[str, Any]], bool],
        encoder: Encoder = default_encoder,
        namespace: str | None = None,
        index_value: tuple[str, str] | None = None,
        bookmarks: bool = False,
        max_buffer: int = 200_000,
    ) -> None:
        self.predicate = predicate
        self.encoder = encoder
        self.namespace = namespace
        self.index_value = index_value
        self.buf: list[bytes] = []
        self.wake = asyncio.Event()
        self.closed = False
        self.overflowed = False
        self.max_buffer = max_buffer
        self.bookmarks = bookmarks
        self.last_rv = 0
        self.cache: WatchCache | None = None

    def push(self, line: bytes) -> None:
        if self.closed:
            return
        if len(self.buf) >= self.max_buffer:
            # Like the cacher, a watcher that cannot keep up is terminated; the client
            # re-watches from the last resourceVersion it saw.
            self.overflowed = True
            self.closed = True
            self.wake.set()
            return
        self.buf.append(line)
        self.wake.set()

    def deliver(self, ev: Event) -> None:
        """Filter one event, turning it into ADDED/DELETED when it enters or leaves the filter."""
        new_ok = self.predicate(ev.new.obj)
        if ev.type == "MODIFIED" and ev.old is not None:
            old_ok = self.predicate(ev.old.obj)
            if new_ok and old_ok:
                self.push(self.encoder("MODIFIED", ev.new))
            elif new_ok:
                self.push(self.encoder("ADDED", ev.new))
            elif old_ok:
                self.push(self.encoder("DELETED", ev.new))
        elif new_ok:
            self.push(self.encoder(ev.type, ev.new))
        self.last_rv = ev.rv

    def take(self) -> list[bytes]:
        out, self.buf = self.buf, []
        self.wake.clear()
        return out

    def close(self) -> None:
        self.closed = True
        self.wake.set()
        if self.cache is not None:
            self.cache.remove(self)


class WatchCache:
    """Event history (ring buffer) and the watchers of one collection.

    ``index`` optionally names a field (for pods ``spec.nodeName``) and a getter: watchers that
    pin that field's value are only shown events whose old or new object has that value.
    """

    def __init__(
        self,
        capacity: int,
        start_rv: int,
        index: tuple[str, Callable[[dict[str, Any]], str]] | None = None,
    ) -> None:
        self.ring: deque[Event] = deque(maxlen=max(1, capacity))
        # Every event with rv > window_rv is still in the ring.
        self.window_rv = start_rv
        self.index = index
        self.all: set[Watcher] = set()
        self.by_ns: dict[str, set[Watcher]] = {}
        self.by_index: dict[str, set[Watcher]] = {}

    def add_event(self, ev: Event) -> None:
        ring = self.ring
        if len(ring) == ring.maxlen:
            self.window_rv = ring[0].rv
        ring.append(ev)
        self._dispatch(ev)

    def _targets(self, ev: Event) -> Iterable[Watcher]:
        if not self.by_ns and not self.by_index:
            return self.all
        out = list(self.all)
        if self.by_ns:
            ns = ev.new.obj.get("metadata", {}).get("namespace")
            s = self.by_ns.get(ns) if ns else None
            if s:
                out.extend(s)
        if self.by_index and self.index is not None:
            get = self.index[1]
            v_new = get(ev.new.obj)
            s = self.by_index.get(v_new)
            if s:
                out.extend(s)
            if ev.old is not None:
                v_old = get(ev.old.obj)
                if v_old != v_new:
                    s = self.by_index.get(v_old)
                    if s:
                        out.extend(s)
        return out

    def _dispatch(self, ev: Event) -> None:
        for w in self._targets(ev):
            w.deliver(ev)

    def too_old(self, rv: int) -> bool:
        return rv < self.window_rv

    def since(self, rv: int) -> list[Event]:
        """Events with resourceVersion > rv, oldest first (caller checks ``too_old`` first)."""
        ring = self.ring
        if not ring or ring[-1].rv <= rv:
            return []
        # Binary search over the deque by index (deque indexing is O(1) near both ends and
        # O(n/64) in the middle, fine for our sizes).
        lo, hi = 0, len(ring)
        while lo < hi:
            mid = (lo + hi) // 2
            if ring[mid].rv <= rv:
                lo = mid + 1
            else:
                hi = mid
        return [ring[i] for i in range(lo, len(ring))]

    def add(self, w: Watcher) -> None:
        w.cache = self
        if (
            w.index_value is not None
            and self.index is not None
            and w.index_value[0] == self.index[0]
        ):
            self.by_index.setdefault(w.index_value[1], set()).add(w)
        elif w.namespace:
            self.by_ns.setdefault(w.namespace, set()).add(w)
        else:
            self.all.add(w)

    def remove(self, w: Watcher) -> None:
        self.all.discard(w)
        if w.namespace and w.namespace in self.by_ns:
            s = self.by_ns[w.namespace]
            s.discard(w)
            if not s:
                del self.by_ns[w.namespace]
        if w.index_value is not None and w.index_value[1] in self.by_index:
            s = self.by_index[w.index_value[1]]
            s.discard(w)
            if not s:
                del self.by_index[w.index_value[1]]

    def watchers(self) -> list[Watcher]:
        out = list(self.all)
        for s in self.by_ns.values():
            out.extend(s)
        for s in self.by_index.values():
            out.extend(s)
        return out

    def close_all(self) -> None:
        for w in self.watchers():
            w.close()
