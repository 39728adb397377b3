"""The shared informer: a reflector, an indexed store, and event handlers fed in order.

Corresponds to client-go ``tools/cache/shared_informer.go`` (``sharedIndexInformer``,
``sharedProcessor``, ``processorListener``). One reflector thread applies list results and
watch events to the store; each change is queued, in order, to every registered handler, and
each handler runs on its own thread with an unbounded queue, so a slow handler delays only
itself. Per object, a handler sees changes in the order the server made them.

What handlers receive:

* the first list: ``on_add(obj, is_in_initial_list=True)`` for each object;
* watch events: ``on_add``, ``on_update(old, new)``, ``on_delete(last state)``;
* a relist (after 410 Gone or a reconnect): adds for new objects, updates for those whose
  resourceVersion changed, and ``on_delete(DeletedFinalStateUnknown(key, last known))`` for
  objects that vanished meanwhile; unchanged objects produce nothing;
* a periodic resync (``resync_period`` > 0): ``on_update(obj, obj)`` for every object;
* a handler added to a running informer first gets ``on_add`` for every cached object.

A ``transform`` turns each incoming JSON object into what the store keeps (for example an
``api`` model). When it fails on an object, the error is logged with the object's name and the
last good state is kept.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from pkg.client.informers.handlers import ResourceEventHandler
from pkg.client.informers.listers import Lister
from pkg.client.informers.reflector import ListerWatcher, Reflector
from pkg.client.informers.store import (
    DeletedFinalStateUnknown,
    Indexer,
    IndexFunc,
    meta_namespace_key,
    metadata,
)
from pkg.util.clock import REAL_CLOCK, Clock
from pkg.util.flowcontrol import Backoff

log = logging.getLogger(__name__)

Transform = Callable[[dict[str, Any]], Any]

_ADD, _UPDATE, _DELETE, _SYNCED = "add", "update", "delete", "synced"


class Registration:
    """A handler registered on an informer (client-go ``ResourceEventHandlerRegistration``).

    ``has_synced()`` is true once the informer has synced and this handler has processed
    every notification of the initial list. Each handler runs on its own thread, as client-go's
    listeners do; one registered with ``after`` handles a notification only once those
    registrations have handled it.
    """

    def __init__(self, informer: SharedInformer, handler: ResourceEventHandler,
                 resync_period: float, after: tuple[Registration, ...] = ()) -> None:
        self.informer = informer
        self.handler = handler
        self.resync_period = resync_period
        self.next_resync = 0.0
        # (kind, a, b, seq): seq numbers the informer's notifications, 0 for those only this
        # registration gets (the replay of the store when it is added, resyncs, sync marks).
        self._queue: deque[tuple[str, Any, Any, int]] = deque()
        self._cond = threading.Condition()
        self._stopped = False
        self._after = after
        self._done_seq = 0
        self._synced = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"handler-{informer.name}")
        self._thread.start()

    def has_synced(self) -> bool:
        return self._synced.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    def _push(self, kind: str, a: Any = None, b: Any = None, seq: int = 0) -> None:
        with self._cond:
            self._queue.append((kind, a, b, seq))
            self._cond.notify()

    def _wait_handled(self, seq: int) -> None:
        with self._cond:
            while self._done_seq < seq and not self._stopped:
                self._cond.wait()

    def pending(self) -> int:
        with self._cond:
            return len(self._queue)

    def _stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()  # its thread, and later registrations waiting on it

    def _run(self) -> None:
        h = self.handler
        while True:
            with self._cond:
                while not self._queue and not self._stopped:
                    self._cond.wait()
                if self._stopped:
                    return
                kind, a, b, seq = self._queue.popleft()
            if seq:
                for earlier in self._after:
                    earlier._wait_handled(seq)
            try:
                if kind == _ADD:
                    h.on_add(a, bool(b))
                elif kind == _UPDATE:
                    h.on_update(a, b)
                elif kind == _DELETE:
                    h.on_delete(a)
                else:
                    self._synced.set()
            except Exception:  # noqa: BLE001 - a failing handler must not stop the others
                log.exception("%s: event handler failed on %s", self.informer.name, kind)
            if seq:
                with self._cond:
                    self._done_seq = seq
                    self._cond.notify_all()


class SharedInformer:
    """Watches one resource (with one namespace/selector set) for any number of handlers."""

    def __init__(self, lw: ListerWatcher, *, name: str = "", resync_period: float = 0.0,
                 indexers: Mapping[str, IndexFunc] | None = None,
                 transform: Transform | None = None, namespaced: bool = True,
                 watch_timeout: float = 300.0, clock: Clock = REAL_CLOCK,
                 backoff: Backoff | None = None) -> None:
        self.name = name or type(lw).__name__
        self.indexer = Indexer(meta_namespace_key, indexers)
        self.lister: Lister[Any] = Lister(self.indexer, namespaced)
        self.resync_period = resync_period
        self.clock = clock
        self._transform = transform
        self._lock = threading.RLock()  # orders store changes and notifications
        self._registrations: list[Registration] = []
        self._seq = 0  # notifications distributed so far (Registration's ordering)
        self._synced = threading.Event()
        self._started = False
        self._stop = threading.Event()
        self._resync_thread: threading.Thread | None = None
        self.reflector = Reflector(lw, self, name=self.name, watch_timeout=watch_timeout,
                                   clock=clock, backoff=backoff)

    # -- configuration --------------------------------------------------------------------

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        self.indexer.add_indexers(indexers)

    def set_transform(self, transform: Transform | None) -> None:
        if self._started:
            raise RuntimeError("set_transform after the informer started")
        self._transform = transform

    def add_event_handler(self, handler: ResourceEventHandler,
                          resync_period: float | None = None, *,
                          after_existing: bool = False) -> Registration:
        """Register a handler; on a running informer it first gets an add per cached object.
        ``resync_period`` (default: the informer's) is raised to the informer's when shorter
        and ignored when the informer does not resync. With ``after_existing`` the handler
        sees each change only once every handler registered before it has handled it: a
        scheduler requeues pods on a change only after the plugins' caches fed by the same
        informer took it in (where Go's plugins read the informer's store itself)."""
        period = self.resync_period if resync_period is None else resync_period
        if period > 0 and self.resync_period > 0:
            period = max(period, self.resync_period)
        elif self.resync_period <= 0:
            period = 0.0
        with self._lock:
            reg = Registration(self, handler, period,
                               tuple(self._registrations) if after_existing else ())
            reg.next_resync = self.clock.monotonic() + period
            if self._synced.is_set():
                for obj in self.indexer.list():
                    reg._push(_ADD, obj, True)
                reg._push(_SYNCED)
            self._registrations.append(reg)
        return reg

    def remove_event_handler(self, reg: Registration) -> None:
        with self._lock:
            if reg in self._registrations:
                self._registrations.remove(reg)
        reg._stop()

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
        self.reflector.start()
        if self.resync_period > 0:
            self._resync_thread = threading.Thread(target=self._resync_loop, daemon=True,
                                                   name=f"resync-{self.name}")
            self._resync_thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.reflector.stop()
        with self._lock:
            regs = list(self._registrations)
        for r in regs:
            r._stop()

    @property
    def started(self) -> bool:
        return self._started

    def has_synced(self) -> bool:
        return self._synced.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    @property
    def last_sync_resource_version(self) -> str:
        return self.reflector.last_sync_resource_version

    # -- the reflector's sink -------------------------------------------------------------

    def _decode(self, obj: dict[str, Any]) -> Any:
        if self._transform is None:
            return obj
        try:
            return self._transform(obj)
        except Exception as e:  # noqa: BLE001 - bad input keeps the last good state
            md = obj.get("metadata") or {}
            name = f"{md.get('namespace')}/{md.get('name')}" if md.get("namespace") \
                else md.get("name")
            log.error("%s: cannot decode %s %s (keeping the last good state): %s", self.name,
                      obj.get("kind", "object"), name, e)
            return None

    def replace(self, items: list[dict[str, Any]], resource_version: str) -> None:
        """A full list: diff it against the store and notify."""
        initial = not self._synced.is_set()
        with self._lock:
            regs = self._registrations
            seen: set[str] = set()
            for raw in items:
                try:
                    key = meta_namespace_key(raw)
                except KeyError:
                    log.error("%s: listed object without a name ignored", self.name)
                    continue
                seen.add(key)
                old = self.indexer.get_by_key(key)
                if old is not None and _same_version(old, raw):
                    continue
                obj = self._decode(raw)
                if obj is None:
                    continue
                self.indexer.update(obj)
                seq = self._next_seq()
                for r in regs:
                    if old is None:
                        r._push(_ADD, obj, initial, seq)
                    else:
                        r._push(_UPDATE, old, obj, seq)
            for key in self.indexer.list_keys():
                if key not in seen:
                    old = self.indexer.delete_key(key)
                    tomb = DeletedFinalStateUnknown(key, old)
                    seq = self._next_seq()
                    for r in regs:
                        r._push(_DELETE, tomb, None, seq)
            if initial:
                self._synced.set()
                for r in regs:
                    r._push(_SYNCED)

    def apply(self, event_type: str, raw: dict[str, Any]) -> None:
        """One watch event."""
        with self._lock:
            try:
                key = meta_namespace_key(raw)
            except KeyError:
                log.error("%s: %s event for an object without a name ignored", self.name,
                          event_type)
                return
            old = self.indexer.get_by_key(key)
            if event_type == "DELETED":
                if old is not None:
                    self.indexer.delete_key(key)
                obj = self._decode(raw)
                last = obj if obj is not None else old
                if last is None:
                    return
                seq = self._next_seq()
                for r in self._registrations:
                    r._push(_DELETE, last, None, seq)
                return
            obj = self._decode(raw)
            if obj is None:
                return
            self.indexer.update(obj)
            seq = self._next_seq()
            for r in self._registrations:
                if old is None:
                    r._push(_ADD, obj, False, seq)
                else:
                    r._push(_UPDATE, old, obj, seq)

    def _next_seq(self) -> int:
        self._seq += 1  # under self._lock
        return self._seq

    # -- resync ---------------------------------------------------------------------------

    def _resync_loop(self) -> None:
        step = max(0.05, min(1.0, self.resync_period / 4))
        while not self.clock.sleep(step, self._stop):
            if not self._synced.is_set():
                continue
            now = self.clock.monotonic()
            with self._lock:
                due = [r for r in self._registrations
                       if r.resync_period > 0 and now >= r.next_resync]
                if not due:
                    continue
                objs = self.indexer.list()
                for r in due:
                    r.next_resync = now + r.resync_period
                    for obj in objs:
                        r._push(_UPDATE, obj, obj)


def _same_version(cached: Any, raw: dict[str, Any]) -> bool:
    """Whether a listed object is the one cached (same resourceVersion and uid: a restarted
    server with fresh storage may reuse resourceVersions for other objects)."""
    md = raw.get("metadata") or {}
    cmd = metadata(cached)
    return cmd.get("resourceVersion") == md.get("resourceVersion") and \
        cmd.get("uid") == md.get("uid")


def wait_for_cache_sync(*synced: SharedInformer | Registration, timeout: float | None = None,
                        stop: threading.Event | None = None) -> bool:
    """True once every informer or handler registration has synced; False on timeout or
    stop (client-go ``cache.WaitForCacheSync``)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        if all(s.has_synced() for s in synced):
            return True
        if stop is not None and stop.is_set():
            return False
        if deadline is not None and time.monotonic() >= deadline:
            return False
        time.sleep(0.01)


__all__ = ["Registration", "SharedInformer", "Transform", "wait_for_cache_sync"]
