"""An in-memory list/watch source for testing informers and controllers without a server.

Corresponds to client-go ``tools/cache/testing.FakeControllerSource``: objects live in a dict
with a resourceVersion counter; every change is kept in a history so a watch can resume from
any resourceVersion still in it. Tests can close all watches (like a server-side timeout),
compact the history (so resuming answers 410 Gone) and make the next requests fail (like an
unreachable server).

    src = FakeListerWatcher()
    src.add({"metadata": {"name": "a", "namespace": "ns"}})
    inf = SharedInformer(src)
"""

from __future__ import annotations

import contextlib
import copy
import enum
import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

from pkg.client.errors import ApiError, ConnectionFailure
from pkg.client.informers.store import (
    DeletedFinalStateUnknown,
    meta_namespace_key,
    resource_version_of,
)

Obj = dict[str, Any]


class _End(enum.Enum):
    END = enum.auto()  # what ``FakeWatch.end`` queues: the stream is over


class FakeWatch:
    def __init__(self, source: FakeListerWatcher) -> None:
        self._source = source
        self._q: queue.Queue[Obj | BaseException | _End] = queue.Queue()
        self.stopped = False

    def push(self, event: Obj | BaseException) -> None:
        """Queue an event, or an error that iterating the watch then raises."""
        self._q.put(event)

    def end(self) -> None:
        self._q.put(_End.END)

    def __iter__(self) -> Iterator[Obj]:
        while True:
            item = self._q.get()
            if item is _End.END or self.stopped:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def stop(self) -> None:
        self.stopped = True
        self._q.put(_End.END)
        self._source._forget(self)


class FakeListerWatcher:
    """A thread-safe fake of a resource's list and watch endpoints."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.rv = 0
        self.objects: dict[str, Obj] = {}
        self.history: list[tuple[int, Obj]] = []  # (rv, event), oldest first
        self.compacted_rv = 0  # watches from below this answer 410
        self.watches: list[FakeWatch] = []
        self.list_calls = 0
        self.watch_calls: list[str] = []  # the resourceVersion each watch asked for
        self._fail: list[BaseException] = []
        self._gate = threading.Condition()
        self._held = False

    # -- changes --------------------------------------------------------------------------

    def _record(self, etype: str, obj: Obj) -> Obj:
        self.rv += 1
        obj = copy.deepcopy(obj)
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
        event = {"type": etype, "object": obj}
        self.history.append((self.rv, event))
        for w in self.watches:
            w.push(copy.deepcopy(event))
        return obj

    def add(self, obj: Obj) -> Obj:
        with self._lock:
            stored = self._record("ADDED", obj)
            self.objects[meta_namespace_key(stored)] = stored
            return stored

    def modify(self, obj: Obj) -> Obj:
        with self._lock:
            stored = self._record("MODIFIED", obj)
            self.objects[meta_namespace_key(stored)] = stored
            return stored

    def delete(self, obj: Obj | str) -> None:
        with self._lock:
            key = obj if isinstance(obj, str) else meta_namespace_key(obj)
            old = self.objects.pop(key)
            self._record("DELETED", old)

    def bookmark(self) -> None:
        with self._lock:
            for w in self.watches:
                w.push({"type": "BOOKMARK", "object": {"metadata": {
                    "resourceVersion": str(self.rv)}}})

    # -- faults ---------------------------------------------------------------------------

    def close_watches(self) -> None:
        """End every open watch, as a server's watch timeout does."""
        with self._lock:
            ws, self.watches = self.watches, []
        for w in ws:
            w.end()

    def break_watches(self, message: str = "connection reset") -> None:
        """Break every open watch mid-stream."""
        with self._lock:
            ws, self.watches = self.watches, []
        for w in ws:
            w.push(ConnectionFailure(message))

    def compact(self) -> None:
        """Forget the history: watches from an older resourceVersion get 410 Gone."""
        with self._lock:
            self.history.clear()
            self.compacted_rv = self.rv

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Inside this block list and watch requests wait (the test changes things while no
        watch is open); open watches are closed on entry."""
        with self._gate:
            self._held = True
        self.close_watches()
        try:
            yield
        finally:
            with self._gate:
                self._held = False
                self._gate.notify_all()

    def _wait_released(self) -> None:
        with self._gate:
            while self._held:
                self._gate.wait()

    def fail_next(self, *errors: BaseException) -> None:
        """The next list/watch calls raise these, in order."""
        with self._lock:
            self._fail.extend(errors)

    def _forget(self, w: FakeWatch) -> None:
        with self._lock:
            if w in self.watches:
                self.watches.remove(w)

    def _maybe_fail(self) -> None:
        if self._fail:
            raise self._fail.pop(0)

    # -- the ListerWatcher protocol -------------------------------------------------------

    def list(self) -> tuple[list[Obj], str]:
        self._wait_released()
        with self._lock:
            self._maybe_fail()
            self.list_calls += 1
            return [copy.deepcopy(o) for o in self.objects.values()], str(self.rv)

    def watch(self, resource_version: str, timeout_seconds: int) -> FakeWatch:
        self._wait_released()
        with self._lock:
            self._maybe_fail()
            self.watch_calls.append(resource_version)
            w = FakeWatch(self)
            start = int(resource_version or 0)
            if start < self.compacted_rv:
                w.push({"type": "ERROR", "object": {
                    "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410,
                    "reason": "Expired",
                    "message": f"too old resource version: {start} ({self.compacted_rv})"}})
                w.end()
                return w
            for rv, ev in self.history:
                if rv > start:
                    w.push(copy.deepcopy(ev))
            self.watches.append(w)
            return w

    def open_watches(self) -> int:
        with self._lock:
            return len(self.watches)


def gone() -> ApiError:
    return ApiError(410, "Expired", "too old resource version")





class Recorder:
    """An event handler that records every notification, for tests.

    ``events`` holds ``(kind, key, resourceVersion, obj)`` tuples with kind ``add``, ``update``,
    ``delete`` or ``tombstone`` (a delete carrying ``DeletedFinalStateUnknown``). ``state()``
    replays them into the ``key → object`` map a handler would have built.
    """

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, Any]] = []
        self.initial: list[bool] = []
        self._cond = threading.Condition()

    def _rec(self, kind: str, obj: Any) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            entry = ("tombstone", obj.key, resource_version_of(obj.obj), obj.obj)
        else:
            entry = (kind, meta_namespace_key(obj), resource_version_of(obj), obj)
        with self._cond:
            self.events.append(entry)
            self._cond.notify_all()

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.initial.append(is_in_initial_list)
        self._rec("add", obj)

    def on_update(self, old: Any, new: Any) -> None:
        self._rec("update", new)

    def on_delete(self, obj: Any) -> None:
        self._rec("delete", obj)

    def kinds(self) -> list[tuple[str, str]]:
        with self._cond:
            return [(k, key) for k, key, _, _ in self.events]

    def state(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        with self._cond:
            for kind, key, _, obj in self.events:
                if kind in ("add", "update"):
                    out[key] = obj
                else:
                    out.pop(key, None)
        return out

    def wait(self, predicate: Any, timeout: float = 10.0) -> bool:
        """Wait until ``predicate(self)`` holds."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.05))
            return True

    def wait_count(self, n: int, timeout: float = 10.0) -> bool:
        return self.wait(lambda r: len(r.events) >= n, timeout)

__all__ = ["FakeListerWatcher", "FakeWatch", "Recorder", "gone"]
