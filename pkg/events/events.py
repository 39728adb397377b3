"""Recording ``events.k8s.io/v1`` Events with series, as kube-scheduler does.

Corresponds to client-go ``tools/events`` (``EventBroadcaster``, ``EventRecorder``,
``event_broadcaster.go``'s ``recordToSink``, ``refreshExistingEventSeries`` and
``finishSeries``); kube-scheduler records through it, with one recorder per profile whose
``reportingController`` is the profile's ``schedulerName``. (Components that use
``tools/record`` upstream, koord-manager and koordlet, keep ``pkg.events.recorder``.)

    broadcaster = EventBroadcaster(client)
    recorder = broadcaster.new_recorder("koord-scheduler")
    recorder.eventf(pod, None, NORMAL, "Scheduled", "Binding", "Successfully assigned %s to %s",
                    key, node)

An Event has ``regarding`` and ``related`` (ObjectReferences), ``reason``, ``action``,
``note``, ``type``, ``reportingController``, ``reportingInstance`` (controller + "-" +
hostname) and ``eventTime`` (MicroTime); it is named ``<regarding name>.<hex nanoseconds>`` in
the regarding object's namespace (``default`` for cluster-scoped objects). An *isomorphic*
event (same type, action, reason, reporting controller and instance, regarding and related:
the note is not part of the key) recorded again while the first is cached turns it into a
``series``: the second occurrence patches ``series: {count: 2, lastObservedTime}``; later ones
only count in memory, and the series is written every 30 minutes (refresh) and once more when
it has been quiet for 6 minutes (finish), which also forgets it; a single event is forgotten 6
minutes after its ``eventTime``. Writes are retried as ``pkg.events.sink`` describes.

Unlike ``tools/record`` there is no spam filter or message aggregation, and upstream never
drops an event at the recorder (each waits in its own goroutine): here a queue of
``QUEUE_LENGTH`` holds a burst while ``WRITERS`` threads write concurrently (see there).
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pkg.client.errors import ApiError
from pkg.client.resources import EVENTS_V1
from pkg.client.rest import Client
from pkg.events.recorder import NORMAL, WARNING, object_reference
from pkg.events.sink import (
    MAX_TRIES,
    RETRY_INTERVAL,
    EventSink,
    QueuedBroadcaster,
    is_retryable,
    write_with_retries,
)
from pkg.leaderelection.resourcelock import format_micro_time
from pkg.util.clock import REAL_CLOCK, Clock

log = logging.getLogger(__name__)

FINISH_TIME = 6 * 60.0
REFRESH_TIME = 30 * 60.0
# Each binding records one Scheduled event, a new Event (different pods never share a
# series), so a burst needs as many creates a second as the scheduler binds pods. Measured by
# scheduler/events_burst_test.py (2,020 pods, API server in its own process, two loaded
# cores): the scheduler bound 118 pods/s and four writers created 105 Events/s, all written
# 2 s after the last binding; one writer with the old 1,000-entry queue dropped 865 of them.
# The queue holds what piles up while the API server is slower than the scheduler: 10,000
# events is over a minute of a full-speed burst with no write at all, at ~1 KiB an event
# ~10 MiB at most. (Upstream's limit is the goroutines it can start.)
QUEUE_LENGTH = 10_000
WRITERS = 4
# The API server rejects a longer note (events.k8s.io validation's NoteLengthLimit, bytes).
NOTE_LENGTH_LIMIT = 1024

Obj = dict[str, Any]
_Ref = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class EventKey:
    """What makes two events isomorphic (upstream ``eventKey``)."""

    type: str
    action: str
    reason: str
    reporting_controller: str
    reporting_instance: str
    regarding: _Ref
    related: _Ref

    @classmethod
    def of(cls, event: Obj) -> EventKey:
        return cls(event["type"], event["action"], event["reason"],
                   event["reportingController"], event["reportingInstance"],
                   _ref_key(event["regarding"]), _ref_key(event.get("related") or {}))


def _ref_key(ref: Mapping[str, Any]) -> _Ref:
    return tuple(sorted((k, str(v)) for k, v in ref.items()))


class EventBroadcaster(QueuedBroadcaster):
    """Receives events from recorders, folds isomorphic ones into series and writes them to
    an events.k8s.io/v1 sink on ``writers`` threads; a further thread refreshes and finishes
    series."""

    def __init__(self, sink: EventSink | Client, *, clock: Clock = REAL_CLOCK,
                 retry_interval: float = RETRY_INTERVAL, max_tries: int = MAX_TRIES,
                 queue_length: int = QUEUE_LENGTH, writers: int = WRITERS) -> None:
        self.retry_interval = retry_interval
        self.max_tries = max_tries
        self._cache: dict[EventKey, Obj] = {}
        self._lock = threading.Lock()
        super().__init__(sink, EVENTS_V1, clock=clock, queue_length=queue_length,
                         writers=writers, name="events-broadcaster")
        self._series_thread = threading.Thread(target=self._run_series, daemon=True,
                                               name="events-series")
        self._series_thread.start()

    def new_recorder(self, reporting_controller: str,
                     reporting_instance: str | None = None) -> EventRecorder:
        """A recorder for ``reporting_controller``; its instance defaults to the controller
        and the host name, as upstream."""
        return EventRecorder(self, reporting_controller, reporting_instance
                             or f"{reporting_controller}-{socket.gethostname()}")

    def shutdown(self, timeout: float | None = 10.0) -> None:
        super().shutdown(timeout)
        self._series_thread.join(timeout)

    # -- recording (upstream recordToSink) ----------------------------------------------

    def _record(self, event: Obj) -> None:
        key = EventKey.of(event)
        with self._lock:
            cached = self._cache.get(key)
            if cached is None:
                self._cache[key] = event
                to_write = _copy(event)
            else:
                now = format_micro_time(self.clock.now())
                series = cached.get("series")
                if series is not None:
                    # Counted here; written by the next refresh or finish.
                    series["count"] += 1
                    series["lastObservedTime"] = now
                    return
                cached["series"] = {"count": 2, "lastObservedTime": now}
                to_write = _copy(cached)
        self._attempt(to_write)

    def _attempt(self, event: Obj) -> Obj | None:
        series = "series" in event
        return write_with_retries(
            lambda: self._write_once(event), _describe(event), clock=self.clock,
            stop=self._stop, max_tries=self.max_tries, retry_interval=self.retry_interval,
            # Creating a series whose Event was gone can meet the Event created meanwhile
            # by the same recorder: patching it on the next attempt is right.
            retry=lambda e: is_retryable(e) or (series and _already_exists(e)))

    def _write_once(self, event: Obj) -> Obj | None:
        md = event["metadata"]
        if "series" in event:
            try:
                return self.sink.patch(md["namespace"], md["name"],
                                       {"series": dict(event["series"])})
            except ApiError as e:
                if e.status != 404:
                    raise
                # Gone (expired or deleted): create it again, series and all.
        md.pop("resourceVersion", None)
        try:
            return self.sink.create(event)
        except ApiError as e:
            if _already_exists(e) and "series" not in event:
                log.debug("event %s already exists", md["name"])
                return None
            raise

    # -- series (upstream refreshExistingEventSeries and finishSeries) ------------------

    def _run_series(self) -> None:
        since_refresh = 0.0
        while not self.clock.sleep(FINISH_TIME, self._stop):
            since_refresh += FINISH_TIME
            self.finish_series()
            if since_refresh >= REFRESH_TIME:
                since_refresh = 0.0
                self.refresh_series()

    def refresh_series(self) -> None:
        """Write every open series' count, so that a long series shows progress."""
        with self._lock:
            todo = [(k, _copy(e)) for k, e in self._cache.items() if "series" in e]
        for _, event in todo:
            self._write_one_try(event)

    def finish_series(self) -> None:
        """Write the final count of series quiet for ``FINISH_TIME`` and forget them; forget
        single events older than that."""
        cutoff = format_micro_time(self.clock.now() - FINISH_TIME)
        finished = []
        with self._lock:
            for key, event in list(self._cache.items()):
                series = event.get("series")
                if series is None:
                    if event["eventTime"] < cutoff:
                        del self._cache[key]
                elif series["lastObservedTime"] < cutoff:
                    finished.append((key, _copy(event)))
        for key, event in finished:
            if self._write_one_try(event):
                with self._lock:
                    # Unless it was observed again meanwhile.
                    current = self._cache.get(key)
                    if current is not None and current["series"] == event["series"]:
                        del self._cache[key]

    def _write_one_try(self, event: Obj) -> bool:
        """One write; False when it should be tried again at the next tick."""
        try:
            self._write_once(event)
        except ApiError as e:
            if is_retryable(e) or _already_exists(e):
                log.warning("unable to write event %s (will retry): %s", _describe(event), e)
                return False
            log.error("server rejected event %s (will not retry): %s", _describe(event), e)
        return True


class EventRecorder:
    """Records events for one reporting controller (``EventRecorder.Eventf`` upstream)."""

    def __init__(self, broadcaster: EventBroadcaster, reporting_controller: str,
                 reporting_instance: str) -> None:
        self.broadcaster = broadcaster
        self.reporting_controller = reporting_controller
        self.reporting_instance = reporting_instance

    def eventf(self, regarding: Any, related: Any, type_: str, reason: str, action: str,
               note: str, *args: Any) -> None:
        """Record an event about ``regarding`` (a dict, an ``api`` model or an
        ObjectReference), optionally ``related`` to another object; ``note % args``."""
        if args:
            try:
                note = note % args
            except (TypeError, ValueError) as e:
                log.error("bad event note format %r with %r: %s", note, args, e)
                note = f"{note} {args!r}"
        try:
            ref = object_reference(regarding)
        except TypeError as e:
            log.error("could not construct reference to %r, will not report event %s %s: %s",
                      regarding, type_, reason, e)
            return
        rel: Obj | None = None
        if related is not None:
            try:
                rel = object_reference(related)
            except TypeError as e:
                log.debug("could not construct reference to %r: %s", related, e)
        if type_ not in (NORMAL, WARNING):
            log.error("unsupported event type: %r (reason %s)", type_, reason)
            return
        now = self.broadcaster.clock.now()
        event: Obj = {
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": f"{ref.get('name') or 'unknown'}."
                                 f"{self.broadcaster._unique_nanos(now):x}",
                         "namespace": ref.get("namespace") or "default"},
            "eventTime": format_micro_time(now),
            "reportingController": self.reporting_controller,
            "reportingInstance": self.reporting_instance,
            "action": action, "reason": reason, "regarding": ref, "note": note, "type": type_,
        }
        if rel is not None:
            event["related"] = rel
        log.debug("Event occurred: object=%s/%s kind=%s type=%s reason=%s action=%s note=%r",
                  ref.get("namespace", ""), ref.get("name", ""), ref.get("kind", ""), type_,
                  reason, action, note)
        self.broadcaster._submit(event)


def _copy(event: Obj) -> Obj:
    """Deep enough: writes change the metadata, series updates the series."""
    out = dict(event)
    out["metadata"] = dict(event["metadata"])
    if "series" in event:
        out["series"] = dict(event["series"])
    return out


def _already_exists(e: ApiError) -> bool:
    return e.status == 409 and e.reason == "AlreadyExists"


def _describe(event: Obj) -> str:
    ref = event["regarding"]
    return (f"{event['type']} {event['reason']} on {ref.get('kind', '')} "
            f"{ref.get('namespace', '')}/{ref.get('name', '')}")


__all__ = ["FINISH_TIME", "NORMAL", "NOTE_LENGTH_LIMIT", "QUEUE_LENGTH", "REFRESH_TIME",
           "WARNING", "WRITERS", "EventBroadcaster", "EventKey", "EventRecorder"]
