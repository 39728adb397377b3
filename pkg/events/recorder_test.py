"""Event recorder: Event shape, count aggregation of repeats, combining similar events,
the spam filter, invalid types, retries; and real Events on the embedded API server."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from api.meta import ObjectMeta
from api.slo.v1alpha1 import NodeMetric
from pkg.client.errors import ApiError, ConnectionFailure
from pkg.client.resources import EVENTS
from pkg.client.rest import Client
from pkg.events.recorder import NORMAL, WARNING, EventBroadcaster
from pkg.events.testing import FakeSink, only
from pkg.util.clock import FakeClock
from test.apiserver import start

POD: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "web-0", "namespace": "shop", "uid": "u-1",
                    "resourceVersion": "7"}}


@pytest.fixture
def sink() -> FakeSink:
    return FakeSink()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def broadcaster(sink: FakeSink, clock: FakeClock) -> Iterator[EventBroadcaster]:
    b = EventBroadcaster(sink, clock=clock, retry_interval=0.0)
    yield b
    b.shutdown()


def test_event_shape(sink: FakeSink, broadcaster: EventBroadcaster, clock: FakeClock) -> None:
    rec = broadcaster.new_recorder("koord-descheduler", "host-1")
    rec.eventf(POD, WARNING, "Evicting", "evicting %s: %s", "web-0", "node overloaded")
    assert broadcaster.flush()
    ev = only(sink)
    assert ev["metadata"]["namespace"] == "shop"
    assert ev["metadata"]["name"].startswith("web-0.")
    assert ev["involvedObject"] == {"kind": "Pod", "namespace": "shop", "name": "web-0",
                                    "uid": "u-1", "apiVersion": "v1", "resourceVersion": "7"}
    assert (ev["type"], ev["reason"], ev["message"], ev["count"]) == \
        (WARNING, "Evicting", "evicting web-0: node overloaded", 1)
    assert ev["source"] == {"component": "koord-descheduler", "host": "host-1"}
    assert ev["firstTimestamp"] == ev["lastTimestamp"] == "2023-11-14T22:13:20Z"


def test_repeats_patch_the_count(sink: FakeSink, broadcaster: EventBroadcaster,
                                 clock: FakeClock) -> None:
    rec = broadcaster.new_recorder("koord-manager")
    for _ in range(3):
        rec.event(POD, NORMAL, "Synced", "all good")
        clock.step(60)
    assert broadcaster.flush()
    ev = only(sink)
    assert ev["count"] == 3 and ev["lastTimestamp"] == "2023-11-14T22:15:20Z"
    assert ev["firstTimestamp"] == "2023-11-14T22:13:20Z"
    assert [c[0] for c in sink.calls] == ["create", "patch", "patch"]
    rec.event(POD, NORMAL, "Other", "all good")
    assert broadcaster.flush() and len(sink.events) == 2


def test_similar_events_are_combined(sink: FakeSink, broadcaster: EventBroadcaster) -> None:
    rec = broadcaster.new_recorder("koord-manager")
    for i in range(12):
        rec.event(POD, WARNING, "Failed", f"attempt {i} failed")
    assert broadcaster.flush()
    combined = [e for e in sink.events.values() if e["message"].startswith("(combined")]
    assert len(sink.events) == 10 and len(combined) == 1
    assert combined[0]["message"] == "(combined from similar events): attempt 11 failed"
    assert combined[0]["count"] == 3


def test_spam_filter_per_object(sink: FakeSink, broadcaster: EventBroadcaster,
                                clock: FakeClock) -> None:
    rec = broadcaster.new_recorder("koordlet")
    other = {**POD, "metadata": {**POD["metadata"], "name": "web-1", "uid": "u-2"}}
    for i in range(30):
        rec.event(POD, NORMAL, f"R{i}", "m")
    rec.event(other, NORMAL, "R", "m")
    assert broadcaster.flush()
    assert len([c for c in sink.calls if c[0] == "create"]) == 26  # 25 + the other pod's
    clock.step(300)
    rec.event(POD, NORMAL, "Later", "m")
    rec.event(POD, NORMAL, "Later2", "m")
    assert broadcaster.flush()
    assert len([c for c in sink.calls if c[0] == "create"]) == 27


def test_invalid_type_and_unreferenceable_objects_are_dropped(
        sink: FakeSink, broadcaster: EventBroadcaster) -> None:
    rec = broadcaster.new_recorder("c")
    rec.event(POD, "Error", "R", "m")
    rec.event(42, NORMAL, "R", "m")
    assert broadcaster.flush() and not sink.calls


def test_cluster_scoped_models_and_references(sink: FakeSink,
                                              broadcaster: EventBroadcaster) -> None:
    rec = broadcaster.new_recorder("koord-manager")
    rec.event(NodeMetric(metadata=ObjectMeta(name="node-1", uid="n-1")), NORMAL, "Reported", "ok")
    rec.event({"kind": "Node", "name": "node-2", "apiVersion": "v1"}, NORMAL, "R", "ok")
    assert broadcaster.flush()
    refs = {e["involvedObject"]["name"]: e for e in sink.events.values()}
    assert refs["node-1"]["metadata"]["namespace"] == "default"
    assert refs["node-1"]["involvedObject"]["kind"] == "NodeMetric"
    assert refs["node-1"]["involvedObject"]["apiVersion"] == "slo.koordinator.sh/v1alpha1"
    assert refs["node-2"]["involvedObject"] == {"kind": "Node", "name": "node-2",
                                                "apiVersion": "v1"}


def test_retries_and_recreate_after_expiry(sink: FakeSink,
                                           broadcaster: EventBroadcaster) -> None:
    rec = broadcaster.new_recorder("c")
    sink.fail = [ConnectionFailure("down"), ApiError(500, "InternalError", "x")]
    rec.event(POD, NORMAL, "R", "m")
    assert broadcaster.flush()
    assert [c[0] for c in sink.calls] == ["create"] * 3 and len(sink.events) == 1
    sink.events.clear()  # the Event expired on the server
    rec.event(POD, NORMAL, "R", "m")
    assert broadcaster.flush()
    assert [c[0] for c in sink.calls[3:]] == ["patch", "create"]
    assert only(sink)["count"] == 2
    sink.fail = [ApiError(422, "Invalid", "bad")]
    rec.event(POD, NORMAL, "Bad", "m")
    assert broadcaster.flush() and sink.calls[-1][0] == "create"  # not retried


def test_events_on_the_api_server() -> None:
    with start() as srv:
        client = Client.from_kubeconfig(srv.kubeconfig, qps=-1)
        b = EventBroadcaster(client)
        rec = b.new_recorder("koord-scheduler")
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "p", "namespace": "default", "uid": "abc"}}
        for _ in range(3):
            rec.event(pod, WARNING, "FailedScheduling", "0/3 nodes are available")
        rec.event(pod, NORMAL, "Scheduled", "Successfully assigned default/p to n1")
        assert b.flush()
        b.shutdown()
        items = client.list(EVENTS, "default")["items"]
        by_reason = {e["reason"]: e for e in items}
        assert by_reason["FailedScheduling"]["count"] == 3
        assert by_reason["Scheduled"]["count"] == 1
        assert by_reason["FailedScheduling"]["involvedObject"]["uid"] == "abc"
        assert by_reason["FailedScheduling"]["source"]["component"] == "koord-scheduler"


class StuckSink(FakeSink):
    """A stuck API server: each create waits until the test releases it (not recorded)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def create(self, event: dict[str, Any]) -> dict[str, Any]:
        self.release.wait(60)
        return event


def test_a_full_queue_drops_events_with_one_log_line_per_interval(
        clock: FakeClock, caplog: pytest.LogCaptureFixture) -> None:
    sink = StuckSink()
    b = EventBroadcaster(sink, clock=clock, queue_length=2)
    rec = b.new_recorder("koord-scheduler")
    try:
        with caplog.at_level("ERROR"):
            for i in range(50):
                rec.event(dict(POD, metadata=dict(POD["metadata"], name=f"web-{i}")), NORMAL,
                          "Scheduled", f"pod {i}")
        # Two queued and at most one being written: every other event was dropped.
        assert b.dropped >= 47
        assert len([r for r in caplog.records if "queue full" in r.getMessage()]) == 1
    finally:
        sink.release.set()
        b.shutdown(timeout=0)
