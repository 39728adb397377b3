"""Recording ``core/v1`` Events about objects, aggregated and rate limited like upstream.

Corresponds to client-go ``tools/record`` (``EventBroadcaster``, ``EventRecorder``,
``EventCorrelator`` with its aggregator, logger and spam filter). A recorder never blocks the
caller and never raises: events go through a bounded queue to a writer thread, which

* drops events whose type is not ``Normal`` or ``Warning`` (logged);
* **deduplicates**: an event identical to an earlier one (same source, object, type, reason,
  message) patches the existing Event's ``count``, ``lastTimestamp`` and ``message`` instead of
  creating a new one (and creates it again if it has been garbage-collected meanwhile);
* **aggregates**: more than 10 events with the same source, object, type and reason but
  different messages within 10 minutes become one Event with the message
  ``(combined from similar events): <latest message>``, counted as above;
* **rate limits** per source and object: a burst of 25, then one every 5 minutes;
* retries failed writes (up to 12 attempts, about 10 s apart; ``pkg.events.sink``), as
  upstream.

Events are named ``<object name>.<hex nanoseconds>`` in the object's namespace (``default`` for
cluster-scoped objects).
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from api.meta import KubeObject
from pkg.client.errors import ApiError
from pkg.client.resources import EVENTS
from pkg.client.rest import Client
from pkg.events.sink import (
    MAX_TRIES,
    RETRY_INTERVAL,
    ClientSink,
    EventSink,
    QueuedBroadcaster,
    write_with_retries,
)
from pkg.util.clock import REAL_CLOCK, Clock
from pkg.util.flowcontrol import TokenBucket

log = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"

MAX_LRU_CACHE_ENTRIES = 4096
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_INTERVAL = 600.0
SPAM_BURST = 25
SPAM_QPS = 1.0 / 300.0
QUEUE_LENGTH = 1000

Obj = dict[str, Any]


def object_reference(obj: Any) -> Obj:
    """The ``involvedObject`` of an object (dict or ``api`` model) or of an ObjectReference."""
    if isinstance(obj, KubeObject):
        obj = obj.to_dict()
    if not isinstance(obj, Mapping):
        raise TypeError(f"cannot reference a {type(obj).__name__}")
    if "metadata" not in obj and "name" in obj:  # already a reference
        return {k: v for k, v in obj.items() if v not in (None, "")}
    md = obj.get("metadata") or {}
    ref = {"kind": obj.get("kind"), "namespace": md.get("namespace"), "name": md.get("name"),
           "uid": md.get("uid"), "apiVersion": obj.get("apiVersion"),
           "resourceVersion": md.get("resourceVersion")}
    return {k: v for k, v in ref.items() if v not in (None, "")}


def _rfc3339(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


@dataclass
class _Seen:
    name: str
    namespace: str
    count: int
    first_timestamp: str


@dataclass
class _Similar:
    messages: set[str] = field(default_factory=set)
    last: float = 0.0


class EventBroadcaster(QueuedBroadcaster):
    """Receives events from recorders and writes them to a sink on one background thread
    (one, so that the correlator sees events in the order they were recorded)."""

    def __init__(self, sink: EventSink | Client, *, clock: Clock = REAL_CLOCK,
                 spam_burst: int = SPAM_BURST, spam_qps: float = SPAM_QPS,
                 retry_interval: float = RETRY_INTERVAL, max_tries: int = MAX_TRIES,
                 queue_length: int = QUEUE_LENGTH) -> None:
        self.spam_burst = spam_burst
        self.spam_qps = spam_qps
        self.retry_interval = retry_interval
        self.max_tries = max_tries
        self._seen: OrderedDict[str, _Seen] = OrderedDict()
        self._similar: OrderedDict[str, _Similar] = OrderedDict()
        self._spam: OrderedDict[str, TokenBucket] = OrderedDict()
        super().__init__(sink, EVENTS, clock=clock, queue_length=queue_length, writers=1,
                         name="event-broadcaster")

    def new_recorder(self, component: str, host: str = "") -> EventRecorder:
        return EventRecorder(self, component, host)

    # -- correlation ----------------------------------------------------------------------

    @staticmethod
    def _cache_put(cache: OrderedDict[str, Any], key: str, value: Any) -> None:
        cache[key] = value
        cache.move_to_end(key)
        while len(cache) > MAX_LRU_CACHE_ENTRIES:
            cache.popitem(last=False)

    def _record(self, event: Obj) -> None:
        ref = event["involvedObject"]
        src = event["source"]
        base = "\x00".join(str(x) for x in (
            src.get("component", ""), src.get("host", ""), ref.get("kind", ""),
            ref.get("namespace", ""), ref.get("name", ""), ref.get("fieldPath", ""),
            ref.get("uid", ""), ref.get("apiVersion", "")))
        now = self.clock.now()

        # Spam filter: per source + object.
        bucket = self._spam.get(base)
        if bucket is None:
            bucket = TokenBucket(self.spam_qps, self.spam_burst, self.clock)
        self._cache_put(self._spam, base, bucket)
        if not bucket.try_accept():
            log.debug("event %s on %s/%s dropped by the spam filter", event["reason"],
                      ref.get("namespace"), ref.get("name"))
            return

        # Aggregation: similar events with different messages.
        agg_key = base + "\x00" + event["type"] + "\x00" + event["reason"]
        sim = self._similar.get(agg_key)
        if sim is None or now - sim.last > AGGREGATE_INTERVAL:
            sim = _Similar()
        sim.messages.add(event["message"])
        sim.last = now
        self._cache_put(self._similar, agg_key, sim)
        if len(sim.messages) >= AGGREGATE_MAX_EVENTS:
            event["message"] = f"(combined from similar events): {event['message']}"
            key = agg_key  # every later similar event updates the one aggregate
        else:
            key = agg_key + "\x00" + event["message"]

        # Deduplication: a repeat patches the existing Event.
        seen = self._seen.get(key)
        stamp = event["lastTimestamp"]
        if seen is not None:
            seen.count += 1
            event["count"] = seen.count
            event["firstTimestamp"] = seen.first_timestamp
            event["metadata"]["name"] = seen.name
            event["metadata"]["namespace"] = seen.namespace
            patch = {"count": seen.count, "lastTimestamp": stamp, "message": event["message"]}
            self._write(event, patch)
        else:
            written = self._write(event, None)
            name = (written or event)["metadata"]["name"]
            self._cache_put(self._seen, key, _Seen(name, event["metadata"]["namespace"], 1,
                                                   event["firstTimestamp"]))

    def _write(self, event: Obj, patch: Obj | None) -> Obj | None:
        def once() -> Obj | None:
            nonlocal patch
            if patch is not None:
                try:
                    return self.sink.patch(event["metadata"]["namespace"],
                                           event["metadata"]["name"], patch)
                except ApiError as e:
                    if e.status != 404:
                        raise
                    patch = None  # gone meanwhile: create it again
            event.get("metadata", {}).pop("resourceVersion", None)
            try:
                return self.sink.create(event)
            except ApiError as e:
                if e.status == 409 and e.reason == "AlreadyExists":
                    return None
                raise

        return write_with_retries(
            once, f"{event['type']} {event['reason']} on {event['involvedObject'].get('name')}",
            clock=self.clock, stop=self._stop, max_tries=self.max_tries,
            retry_interval=self.retry_interval)


class EventRecorder:
    """Records events for one component (the Event's ``source``)."""

    def __init__(self, broadcaster: EventBroadcaster, component: str, host: str = "") -> None:
        self.broadcaster = broadcaster
        self.component = component
        self.host = host

    def event(self, obj: Any, type_: str, reason: str, message: str,
              annotations: Mapping[str, str] | None = None) -> None:
        """Record an event about ``obj`` (a dict, an ``api`` model or an ObjectReference)."""
        if type_ not in (NORMAL, WARNING):
            log.error("unsupported event type: %r (reason %s)", type_, reason)
            return
        try:
            ref = object_reference(obj)
        except TypeError as e:
            log.error("could not construct reference to %r: %s", obj, e)
            return
        now = self.broadcaster.clock.now()
        ts = _rfc3339(now)
        name = ref.get("name") or "unknown"
        md: Obj = {"name": f"{name}.{self.broadcaster._unique_nanos(now):x}",
                   "namespace": ref.get("namespace") or "default"}
        if annotations:
            md["annotations"] = dict(annotations)
        event: Obj = {
            "apiVersion": "v1", "kind": "Event", "metadata": md, "involvedObject": ref,
            "reason": reason, "message": message, "type": type_,
            "source": {k: v for k, v in (("component", self.component), ("host", self.host))
                       if v},
            "firstTimestamp": ts, "lastTimestamp": ts, "count": 1,
            "reportingComponent": self.component, "reportingInstance": self.host,
        }
        log.info("Event(%s): type: %r reason: %r %s", _ref_str(ref), type_, reason, message)
        self.broadcaster._submit(event)

    def eventf(self, obj: Any, type_: str, reason: str, fmt: str, *args: Any) -> None:
        """``event`` with a %-format message (``Eventf``)."""
        self.event(obj, type_, reason, fmt % args if args else fmt)

    def annotated_eventf(self, obj: Any, annotations: Mapping[str, str], type_: str,
                         reason: str, fmt: str, *args: Any) -> None:
        self.event(obj, type_, reason, fmt % args if args else fmt, annotations)


def _ref_str(ref: Obj) -> str:
    return (f"v1.ObjectReference{{Kind:{ref.get('kind', '')!r}, "
            f"Namespace:{ref.get('namespace', '')!r}, Name:{ref.get('name', '')!r}}}")


__all__ = [
    "NORMAL", "WARNING", "ClientSink", "EventBroadcaster", "EventRecorder", "EventSink",
    "object_reference",
]
