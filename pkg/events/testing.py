"""Helpers for tests of the event recorders (``pkg/events/recorder.py`` and ``events.py``): an
in-memory ``EventSink`` that can be told to fail, and ``only`` for the one Event it holds."""

from __future__ import annotations

import threading

from pkg.client.errors import ApiError
from pkg.events.sink import Obj


class FakeSink:
    """Events by (namespace, name), every call in order; the errors in ``fail`` are raised,
    one per call, before anything is written."""

    def __init__(self) -> None:
        self.events: dict[tuple[str, str], Obj] = {}
        self.calls: list[tuple[str, str | Obj]] = []
        self.fail: list[BaseException] = []
        self.lock = threading.Lock()

    def create(self, event: Obj) -> Obj:
        with self.lock:
            self.calls.append(("create", event["metadata"]["name"]))
            if self.fail:
                raise self.fail.pop(0)
            key = (event["metadata"]["namespace"], event["metadata"]["name"])
            self.events[key] = dict(event)
            return event

    def patch(self, namespace: str, name: str, patch: Obj) -> Obj:
        with self.lock:
            self.calls.append(("patch", patch))
            if self.fail:
                raise self.fail.pop(0)
            ev = self.events.get((namespace, name))
            if ev is None:
                raise ApiError(404, "NotFound", "gone")
            ev.update(patch)
            return ev


def only(sink: FakeSink) -> Obj:
    """The one Event the sink holds."""
    assert len(sink.events) == 1, sink.events
    return next(iter(sink.events.values()))
