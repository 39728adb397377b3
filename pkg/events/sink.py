"""Where recorders write Events: the queue, writer threads and retry loop both event APIs share.

Corresponds to client-go ``tools/record`` and ``tools/events``' ``EventSinkImpl``, the
``watch.Broadcaster`` queue between recorders and the sink, and the ``recordEvent``/
``attemptRecording`` retry loops. Recording never blocks the caller: an event goes into a
bounded queue (a full queue drops it, logged once per 10 s) that writer threads drain.

An Event write that failed because the API
server could not be reached, was overloaded (429) or failed (5xx) is retried, up to 12 attempts
about 10 s apart (jittered by 25 % so that components do not retry in step after an outage);
anything else the server rejected (a namespace gone or terminating, an invalid Event) is logged
once and dropped, since the same request would be rejected again.
"""

from __future__ import annotations

import logging
import queue
import random
import threading
from collections.abc import Callable
from typing import Any, Protocol

from pkg.client.errors import ApiError, ConnectionFailure
from pkg.client.resources import EVENTS, Resource
from pkg.client.rest import Client
from pkg.util.clock import Clock

log = logging.getLogger(__name__)

MAX_TRIES = 12
RETRY_INTERVAL = 10.0
DROP_LOG_INTERVAL = 10.0

Obj = dict[str, Any]


class EventSink(Protocol):
    def create(self, event: Obj) -> Obj: ...

    def patch(self, namespace: str, name: str, patch: Obj) -> Obj: ...


class ClientSink:
    """Writes Events through the JSON client: core/v1 (``EVENTS``) or events.k8s.io/v1
    (``EVENTS_V1``)."""

    def __init__(self, client: Client, resource: Resource = EVENTS) -> None:
        self.client = client
        self.resource = resource

    def create(self, event: Obj) -> Obj:
        return self.client.create(self.resource, event, event["metadata"]["namespace"])

    def patch(self, namespace: str, name: str, patch: Obj) -> Obj:
        return self.client.patch(self.resource, name, patch, namespace,
                                 patch_type="strategic")


def is_retryable(e: ApiError) -> bool:
    """The server was unreachable or failing, not rejecting this Event."""
    return isinstance(e, ConnectionFailure) or e.status >= 500 or e.status == 429


def write_with_retries(once: Callable[[], Obj | None], what: str, *, clock: Clock,
                       stop: threading.Event, max_tries: int = MAX_TRIES,
                       retry_interval: float = RETRY_INTERVAL,
                       retry: Callable[[ApiError], bool] = is_retryable) -> Obj | None:
    """Run ``once`` (one write attempt) until it returns, is rejected for good, runs out of
    attempts or ``stop`` is set; ``what`` names the Event in log lines."""
    for attempt in range(max_tries):
        try:
            return once()
        except ApiError as e:
            if not retry(e):
                log.error("server rejected event %s (will not retry): %s", what, e)
                return None
            if attempt + 1 < max_tries:
                log.warning("unable to write event %s (may retry after sleeping): %s", what, e)
                if clock.sleep(retry_interval * (1 + random.random() * 0.25), stop):
                    return None
    log.error("unable to write event %s (retry limit of %d exceeded)", what, max_tries)
    return None


class QueuedBroadcaster:
    """The queue and writer threads of a broadcaster; subclasses say how one event is
    recorded (``_record``, called on a writer thread, never raising into it)."""

    def __init__(self, sink: EventSink | Client, resource: Resource, *, clock: Clock,
                 queue_length: int, writers: int, name: str) -> None:
        self.sink: EventSink = ClientSink(sink, resource) if isinstance(sink, Client) else sink
        self.clock = clock
        self._queue: queue.Queue[Obj | None] = queue.Queue(queue_length)
        self._stop = threading.Event()
        self._pending = 0
        self._last_nanos = 0
        self._idle = threading.Condition()
        self.dropped = 0
        self._last_drop_log = float("-inf")
        self._threads = [threading.Thread(target=self._run, name=f"{name}-{i}", daemon=True)
                         for i in range(writers)]
        for t in self._threads:
            t.start()

    def _record(self, event: Obj) -> None:
        raise NotImplementedError

    def _unique_nanos(self, now: float) -> int:
        """Nanoseconds for an Event name, strictly increasing (a coarse or fake clock must
        not give two events one name)."""
        with self._idle:
            ns = max(int(now * 1e9), self._last_nanos + 1)
            self._last_nanos = ns
            return ns

    def _submit(self, event: Obj) -> None:
        if self._stop.is_set():
            return
        with self._idle:
            self._pending += 1
        try:
            self._queue.put_nowait(event)
        except queue.Full:
            with self._idle:
                self._pending -= 1
                self._idle.notify_all()
            self.dropped += 1
            # One line per burst, not per event: a full queue means the API server is slow,
            # and a log line per dropped event would only add to the load.
            now = self.clock.monotonic()
            if now - self._last_drop_log >= DROP_LOG_INTERVAL:
                log.error("event queue full; dropping events (%d dropped so far; latest: %s "
                          "%s)", self.dropped, event.get("reason"),
                          event.get("message", event.get("note")))
                self._last_drop_log = now

    def flush(self, timeout: float | None = 10.0) -> bool:
        """Wait until every event handed in so far has been written (or given up)."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    def shutdown(self, timeout: float | None = 10.0) -> None:
        self.flush(timeout)
        self._stop.set()
        for _ in self._threads:
            try:
                self._queue.put_nowait(None)
            except queue.Full:
                pass
        for t in self._threads:
            t.join(timeout)

    def _run(self) -> None:
        while True:
            event = self._queue.get()
            if event is None:
                return
            try:
                self._record(event)
            except Exception:  # noqa: BLE001 - events are best effort
                log.exception("failed to record event")
            finally:
                with self._idle:
                    self._pending -= 1
                    self._idle.notify_all()


__all__ = ["MAX_TRIES", "RETRY_INTERVAL", "ClientSink", "EventSink", "QueuedBroadcaster",
           "is_retryable", "write_with_retries"]
