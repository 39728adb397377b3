"""events.k8s.io recorder: Event shape, series of isomorphic events (client-go's
TestEventSeriesf, TestFinishSeries, TestRefreshExistingEventSeries), retries, and real Events
on the embedded API server that kubectl shows in ``describe pod`` and ``get events``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pkg.client.errors import ApiError, ConnectionFailure
from pkg.client.resources import EVENTS, EVENTS_V1, NAMESPACES, PODS
from pkg.client.rest import Client
from pkg.events.events import FINISH_TIME, REFRESH_TIME, EventBroadcaster
from pkg.events.recorder import NORMAL, WARNING
from pkg.events.testing import FakeSink, only
from pkg.util.clock import FakeClock
from test.apiserver import start
from test.apiserver.testing import Kubectl, kubectl_binary
from test.e2e.cluster import wait_for

POD: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": "web-0", "namespace": "shop", "uid": "u-1",
                                    "resourceVersion": "7"}}
NODE: dict[str, Any] = {"apiVersion": "v1", "kind": "Node",
                        "metadata": {"name": "n1", "uid": "n-1"}}


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
    b.shutdown(timeout=5)


def test_event_shape(sink: FakeSink, broadcaster: EventBroadcaster, clock: FakeClock) -> None:
    rec = broadcaster.new_recorder("koord-scheduler")
    rec.eventf(POD, NODE, NORMAL, "Scheduled", "Binding", "Successfully assigned %s to %s",
               "shop/web-0", "n1")
    assert broadcaster.flush()
    ev = only(sink)
    assert ev["apiVersion"] == "events.k8s.io/v1" and ev["kind"] == "Event"
    assert ev["metadata"]["namespace"] == "shop"
    assert ev["metadata"]["name"] == f"web-0.{int(clock.now() * 1e9):x}"
    assert ev["regarding"] == {"apiVersion": "v1", "kind": "Pod", "name": "web-0",
                               "namespace": "shop", "uid": "u-1", "resourceVersion": "7"}
    assert ev["related"]["name"] == "n1" and ev["related"]["kind"] == "Node"
    assert (ev["type"], ev["reason"], ev["action"]) == (NORMAL, "Scheduled", "Binding")
    assert ev["note"] == "Successfully assigned shop/web-0 to n1"
    assert ev["reportingController"] == "koord-scheduler"
    assert ev["reportingInstance"].startswith("koord-scheduler-")
    assert ev["eventTime"].endswith("Z") and len(ev["eventTime"]) == 27  # MicroTime
    assert "series" not in ev


def test_cluster_scoped_objects_go_to_default(sink: FakeSink,
                                               broadcaster: EventBroadcaster) -> None:
    broadcaster.new_recorder("koord-scheduler").eventf(NODE, None, WARNING, "Bad", "Check",
                                                       "no")
    assert broadcaster.flush()
    assert only(sink)["metadata"]["namespace"] == "default"


def test_isomorphic_events_become_a_series(sink: FakeSink, broadcaster: EventBroadcaster,
                                           clock: FakeClock) -> None:
    rec = broadcaster.new_recorder("koord-scheduler", "koord-scheduler-h")
    rec.eventf(POD, None, WARNING, "FailedScheduling", "Scheduling", "0/3 nodes available")
    assert broadcaster.flush()
    clock.step(1)
    # The note is not part of the key: a different message still continues the series.
    rec.eventf(POD, None, WARNING, "FailedScheduling", "Scheduling", "0/4 nodes available")
    assert broadcaster.flush()
    ev = only(sink)
    assert ev["series"]["count"] == 2
    assert ev["note"] == "0/3 nodes available"
    assert sink.calls[-1][0] == "patch" and set(sink.calls[-1][1]) == {"series"}
    # Later occurrences are counted in memory, not written one by one.
    calls = len(sink.calls)
    for _ in range(5):
        rec.eventf(POD, None, WARNING, "FailedScheduling", "Scheduling", "0/3 nodes available")
    assert broadcaster.flush()
    assert len(sink.calls) == calls and ev["series"]["count"] == 2
    # The refresh writes the count so far.
    broadcaster.refresh_series()
    assert ev["series"]["count"] == 7


@pytest.mark.parametrize("change", [
    {"type": NORMAL}, {"action": "Binding"}, {"reason": "Preempted"},
    {"regarding": dict(POD, metadata=dict(POD["metadata"], uid="u-2"))},
    {"related": NODE}, {"controller": "other-scheduler"},
])
def test_events_differing_in_the_key_are_not_a_series(
        sink: FakeSink, broadcaster: EventBroadcaster, change: dict[str, Any]) -> None:
    base: dict[str, Any] = {"regarding": POD, "related": None, "type": WARNING,
                            "action": "Scheduling", "reason": "FailedScheduling",
                            "controller": "koord-scheduler"}
    for args in (base, dict(base, **change)):
        rec = broadcaster.new_recorder(args["controller"], "i")
        rec.eventf(args["regarding"], args["related"], args["type"], args["reason"],
                   args["action"], "note")
        assert broadcaster.flush()
    assert len(sink.events) == 2
    assert all("series" not in e for e in sink.events.values())


def test_finish_series_writes_the_final_count_and_forgets(
        sink: FakeSink, broadcaster: EventBroadcaster, clock: FakeClock) -> None:
    rec = broadcaster.new_recorder("koord-scheduler", "i")
    for _ in range(3):
        rec.eventf(POD, None, WARNING, "FailedScheduling", "Scheduling", "no")
    rec.eventf(NODE, None, NORMAL, "Once", "Check", "single")
    assert broadcaster.flush()
    ev = sink.events[("shop", next(n for ns, n in sink.events if ns == "shop"))]
    assert ev["series"]["count"] == 2
    broadcaster.finish_series()  # not quiet long enough yet
    assert ev["series"]["count"] == 2
    clock.step(FINISH_TIME + 1)
    broadcaster.finish_series()
    assert ev["series"]["count"] == 3
    # Both forgotten: the same events start afresh as new Events.
    rec.eventf(POD, None, WARNING, "FailedScheduling", "Scheduling", "no")
    rec.eventf(NODE, None, NORMAL, "Once", "Check", "single")
    assert broadcaster.flush()
    assert len(sink.events) == 4


def test_the_series_thread_finishes_and_refreshes_on_the_clock(
        sink: FakeSink, broadcaster: EventBroadcaster, clock: FakeClock) -> None:
    rec = broadcaster.new_recorder("koord-scheduler", "i")
    for _ in range(4):
        rec.eventf(POD, None, WARNING, "FailedScheduling", "Scheduling", "no")
    assert broadcaster.flush()
    ev = only(sink)

    def ticked() -> bool:
        """The series thread sleeps towards its next tick (so the last one has run)."""
        deadlines = clock.deadlines()
        return bool(deadlines) and deadlines[0] > clock.monotonic()

    ticks = 0
    while ticks * FINISH_TIME < REFRESH_TIME:
        wait_for(ticked, timeout=30, what="the series thread's next sleep")
        # Keep the series alive: only the 30-minute refresh may write it.
        rec.eventf(POD, None, WARNING, "FailedScheduling", "Scheduling", "no")
        assert broadcaster.flush()
        assert ev["series"]["count"] == 2
        clock.step(FINISH_TIME)
        ticks += 1
    wait_for(lambda: ev["series"]["count"] == 4 + ticks, timeout=30, what="the refresh")


def test_a_series_whose_event_is_gone_is_created_again(
        sink: FakeSink, broadcaster: EventBroadcaster) -> None:
    rec = broadcaster.new_recorder("koord-scheduler", "i")
    rec.eventf(POD, None, WARNING, "FailedScheduling", "Scheduling", "no")
    assert broadcaster.flush()
    sink.events.clear()  # expired on the server (events have a TTL)
    rec.eventf(POD, None, WARNING, "FailedScheduling", "Scheduling", "no")
    assert broadcaster.flush()
    assert only(sink)["series"]["count"] == 2


def test_retries_unreachable_server_and_drops_rejections(
        sink: FakeSink, broadcaster: EventBroadcaster) -> None:
    rec = broadcaster.new_recorder("koord-scheduler", "i")
    sink.fail = [ConnectionFailure("refused"), ApiError(503, "ServiceUnavailable", "busy")]
    rec.eventf(POD, None, NORMAL, "Scheduled", "Binding", "a")
    assert broadcaster.flush()
    assert len(sink.events) == 1 and [c[0] for c in sink.calls] == ["create"] * 3
    # A namespace being deleted (or any other rejection) would be rejected again: dropped.
    sink.fail = [ApiError(403, "Forbidden", "namespace shop is being terminated")]
    rec.eventf(dict(POD, metadata=dict(POD["metadata"], name="web-1")), None, NORMAL,
               "Scheduled", "Binding", "b")
    assert broadcaster.flush()
    assert len(sink.events) == 1 and len(sink.calls) == 4


def test_unsupported_type_and_unreferenceable_objects_are_dropped(
        sink: FakeSink, broadcaster: EventBroadcaster) -> None:
    rec = broadcaster.new_recorder("koord-scheduler", "i")
    rec.eventf(POD, None, "Info", "Scheduled", "Binding", "x")
    rec.eventf(42, None, NORMAL, "Scheduled", "Binding", "x")
    assert broadcaster.flush() and not sink.calls


@pytest.mark.skipif(kubectl_binary() is None, reason="kubectl is not installed")
def test_kubectl_shows_the_events() -> None:
    with start() as srv:
        client = Client.from_kubeconfig(srv.kubeconfig, qps=-1)
        client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                   "metadata": {"name": "shop"}})
        pod = client.create(PODS, {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0"},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}, "shop")
        b = EventBroadcaster(client)
        rec = b.new_recorder("koord-scheduler")
        for _ in range(3):
            rec.eventf(pod, None, WARNING, "FailedScheduling", "Scheduling",
                       "0/3 nodes are available")
        rec.eventf(pod, None, NORMAL, "Scheduled", "Binding", "Successfully assigned %s to %s",
                   "shop/web-0", "n1")
        assert b.flush(timeout=30)
        b.refresh_series()
        b.shutdown()
        v1 = {e["reason"]: e for e in client.list(EVENTS_V1, "shop")["items"]}
        assert v1["FailedScheduling"]["series"]["count"] == 3
        core = {e["reason"]: e for e in client.list(EVENTS, "shop")["items"]}
        assert core["Scheduled"]["involvedObject"]["uid"] == pod["metadata"]["uid"]
        assert core["Scheduled"]["message"] == "Successfully assigned shop/web-0 to n1"
        kubectl = Kubectl(srv)
        try:
            described = kubectl.run("describe", "pod", "-n", "shop", "web-0").stdout
            assert "Successfully assigned shop/web-0 to n1" in described
            assert "FailedScheduling" in described and "koord-scheduler" in described
            listed = kubectl.run("get", "events", "-n", "shop").stdout
            assert "Scheduled" in listed and "pod/web-0" in listed
        finally:
            kubectl.close()
