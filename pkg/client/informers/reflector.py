"""The reflector: keeps a store in step with the API server by list, then watch.

Corresponds to client-go ``tools/cache/reflector.go`` (``ListAndWatch``) and
``listwatch.go``. The loop, on its own thread:

1. **list** every object (paginated, a consistent read) and hand the whole set to the sink
   (``replace``), which works out adds, updates and deletes against what it had;
2. **watch** from the list's resourceVersion, handing each event to the sink (``apply``) and
   remembering the resourceVersion of every event and bookmark;
3. when the watch ends (the server's ``timeoutSeconds``, a closed or broken connection),
   **resume** watching from the last resourceVersion seen: nothing is missed and nothing
   re-listed;
4. when the server says the resourceVersion is too old (410 Gone/Expired, as an ``ERROR``
   event or a response status) or too new (its storage was replaced), **relist**;
5. when the server cannot be reached at all, back off (800 ms doubling to 30 s, jittered) and
   **relist** once it answers again: a restarted server may have lost or changed objects, and
   the relist turns those into deletes and adds;
6. other errors (403, 500, ...) back off and relist.

The sink is the informer (``SharedInformer``), which owns the store and the notifications.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from pkg.client.errors import ApiError, ConnectionFailure, is_gone, is_too_large_resource_version
from pkg.client.resources import Resource
from pkg.client.rest import Client
from pkg.util.clock import REAL_CLOCK, Clock
from pkg.util.flowcontrol import Backoff

log = logging.getLogger(__name__)

Obj = dict[str, Any]


class Watch(Protocol):
    """An open watch: iterate for events, ``stop()`` from another thread."""

    def __iter__(self) -> Iterator[Obj]: ...

    def stop(self) -> None: ...


class ListerWatcher(Protocol):
    """Where a reflector gets its objects (client-go ``cache.ListerWatcher``)."""

    def list(self) -> tuple[list[Obj], str]:
        """Every object and the list's resourceVersion."""
        ...

    def watch(self, resource_version: str, timeout_seconds: int) -> Watch:
        """Events after ``resource_version``; ends after about ``timeout_seconds``."""
        ...


class ReflectorSink(Protocol):
    def replace(self, items: list[Obj], resource_version: str) -> None: ...

    def apply(self, event_type: str, obj: Obj) -> None: ...


class ResourceListerWatcher:
    """Lists and watches one resource through a ``Client``, optionally limited to a
    namespace and label/field selectors (client-go ``NewFilteredListWatchFromClient``)."""

    def __init__(self, client: Client, resource: Resource, namespace: str | None = None,
                 label_selector: str | None = None, field_selector: str | None = None,
                 page_size: int = 500) -> None:
        self.client = client
        self.resource = resource
        self.namespace = namespace if resource.namespaced else None
        self.label_selector = label_selector or None
        self.field_selector = field_selector or None
        self.page_size = page_size

    def list(self) -> tuple[list[Obj], str]:
        out = self.client.list_all(self.resource, self.namespace,
                                   label_selector=self.label_selector,
                                   field_selector=self.field_selector,
                                   page_size=self.page_size)
        api_version, kind = self.resource.api_version, self.resource.kind
        items = out.get("items") or []
        for it in items:  # list items of built-in kinds come without their type
            if "kind" not in it:
                it["kind"] = kind
            if "apiVersion" not in it:
                it["apiVersion"] = api_version
        return items, str((out.get("metadata") or {}).get("resourceVersion") or "")

    def watch(self, resource_version: str, timeout_seconds: int) -> Watch:
        return self.client.watch(self.resource, self.namespace,
                                 resource_version=resource_version,
                                 label_selector=self.label_selector,
                                 field_selector=self.field_selector,
                                 timeout_seconds=timeout_seconds, allow_bookmarks=True)


@dataclass
class ReflectorStats:
    """Counters a test (or a metric) can look at."""

    lists: int = 0
    watches: int = 0
    events: int = 0
    expired: int = 0  # 410s that forced a relist
    errors: int = 0  # failed lists and watches


class _Relist(Exception):
    """The watch cannot continue from its resourceVersion: list again."""


class Reflector:
    """Runs list-then-watch against a ``ListerWatcher`` into a sink, on a thread."""

    def __init__(self, lw: ListerWatcher, sink: ReflectorSink, *, name: str = "",
                 watch_timeout: float = 300.0, clock: Clock = REAL_CLOCK,
                 backoff: Backoff | None = None) -> None:
        self.lw = lw
        self.sink = sink
        self.name = name or type(lw).__name__
        self.watch_timeout = watch_timeout
        self.clock = clock
        self.backoff = backoff or Backoff(0.8, 30.0, 2.0, 1.0, 120.0, clock)
        self.stats = ReflectorStats()
        self._rv = ""
        self._stop = threading.Event()
        self._watch: Watch | None = None
        self._watch_lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def last_sync_resource_version(self) -> str:
        return self._rv

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self.run, name=f"reflector-{self.name}",
                                            daemon=True)
            self._thread.start()

    def stop(self, timeout: float | None = 10.0) -> None:
        self._stop.set()
        with self._watch_lock:
            w = self._watch
        if w is not None:
            w.stop()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout)

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def run(self) -> None:
        """The loop (see the module docstring) until ``stop()``."""
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list:
                    self._list()
                    need_list = False
                self._watch_once()
            except _Relist:
                need_list = True
            except ConnectionFailure as e:
                if self._stop.is_set():
                    break
                self.stats.errors += 1
                log.info("%s: API server unreachable (%s); relisting when it is back",
                         self.name, e)
                need_list = True
                self._sleep_backoff()
            except ApiError as e:
                if self._stop.is_set():
                    break
                self.stats.errors += 1
                if is_gone(e) or is_too_large_resource_version(e):
                    self.stats.expired += 1
                    log.info("%s: resourceVersion %s unusable (%s); relisting", self.name,
                             self._rv, e.reason)
                    need_list = True
                    continue
                log.warning("%s: list/watch failed: %s", self.name, e)
                need_list = True
                self._sleep_backoff()
            except Exception:  # noqa: BLE001 - the loop must survive anything
                if self._stop.is_set():
                    break
                self.stats.errors += 1
                log.exception("%s: unexpected error in list/watch", self.name)
                need_list = True
                self._sleep_backoff()

    def _sleep_backoff(self) -> None:
        self.clock.sleep(self.backoff.next(), self._stop)

    def _list(self) -> None:
        items, rv = self.lw.list()
        if self._stop.is_set():
            return
        self.stats.lists += 1
        self.sink.replace(items, rv)
        self._rv = rv

    def _timeout_seconds(self) -> int:
        return max(1, int(self.watch_timeout * (1.0 + random.random())))

    def _watch_once(self) -> None:
        """One watch from the last resourceVersion. Returns when it ends (to be resumed);
        raises _Relist/ApiError/ConnectionFailure as described in the module docstring."""
        if self._stop.is_set():
            return
        # Connecting failed: the caller relists (the server may have restarted).
        w = self.lw.watch(self._rv, self._timeout_seconds())
        with self._watch_lock:
            if self._stop.is_set():
                w.stop()
                return
            self._watch = w
        self.stats.watches += 1
        started = time.monotonic()
        count = 0
        try:
            count = self._consume(w)
        except ConnectionFailure as e:
            # Broken mid-stream: resume from the last resourceVersion right away; if the
            # server is gone, that attempt fails to connect and we relist later.
            if not self._stop.is_set():
                log.debug("%s: watch broken (%s); resuming from %s", self.name, e, self._rv)
            return
        finally:
            with self._watch_lock:
                self._watch = None
            w.stop()
        if count == 0 and time.monotonic() - started < 0.5 and not self._stop.is_set():
            # A server that closes watches at once: do not spin.
            self._sleep_backoff()

    def _consume(self, events: Iterable[Obj]) -> int:
        count = 0
        for ev in events:
            if self._stop.is_set():
                break
            etype = ev.get("type")
            obj = ev.get("object")
            if not isinstance(obj, dict):
                log.warning("%s: watch event without object: %.200r", self.name, ev)
                continue
            if etype == "ERROR":
                err = ApiError.from_status(int(obj.get("code") or 500), obj)
                if is_gone(err) or is_too_large_resource_version(err):
                    self.stats.expired += 1
                    log.info("%s: watch from %s expired (%s); relisting", self.name, self._rv,
                             err.message)
                    raise _Relist()
                raise err
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            if etype == "BOOKMARK":
                if rv:
                    self._rv = rv
                continue
            if etype not in ("ADDED", "MODIFIED", "DELETED"):
                log.warning("%s: unknown watch event type %r", self.name, etype)
                continue
            self.sink.apply(etype, obj)
            count += 1
            self.stats.events += 1
            if rv:
                self._rv = rv
        return count


__all__ = [
    "ListerWatcher", "Reflector", "ReflectorSink", "ReflectorStats", "ResourceListerWatcher",
    "Watch",
]
