"""SharedInformer on a fake source: initial list, ordered events, watch resume, 410 relist,
reconnect relist with tombstones, bookmarks, resync, transforms, late handlers."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from pkg.client.errors import ApiError, ConnectionFailure
from pkg.client.informers.fake import FakeListerWatcher, Recorder, gone
from pkg.client.informers.handlers import EventHandlerFuncs
from pkg.client.informers.informer import SharedInformer, wait_for_cache_sync
from pkg.client.informers.store import NAMESPACE_INDEX, namespace_index
from pkg.util.clock import FakeClock
from pkg.util.flowcontrol import Backoff


def obj(name: str, ns: str = "ns", **data: str) -> dict:
    return {"metadata": {"name": name, "namespace": ns}, "data": data}


def fast_backoff() -> Backoff:
    return Backoff(initial=0.01, cap=0.05, jitter=0.0)


@pytest.fixture
def src() -> FakeListerWatcher:
    s = FakeListerWatcher()
    s.add(obj("a"))
    s.add(obj("b"))
    return s


@pytest.fixture
def running(src: FakeListerWatcher) -> Iterator[tuple[SharedInformer, Recorder]]:
    inf = SharedInformer(src, indexers={NAMESPACE_INDEX: namespace_index},
                         backoff=fast_backoff())
    rec = Recorder()
    reg = inf.add_event_handler(rec)
    inf.start()
    assert wait_for_cache_sync(inf, reg, timeout=5)
    yield inf, rec
    inf.stop()


def wait_watching(src: FakeListerWatcher, n: int = 1) -> None:
    rec = Recorder()
    assert rec.wait(lambda _: src.open_watches() >= n, 5), "no watch opened"


def test_initial_list_then_ordered_watch_events(src: FakeListerWatcher, running) -> None:
    inf, rec = running
    assert rec.kinds() == [("add", "ns/a"), ("add", "ns/b")] and all(rec.initial)
    wait_watching(src)
    assert src.watch_calls == ["2"]
    src.modify(obj("a", v="1"))
    src.add(obj("c"))
    src.delete("ns/b")
    src.modify(obj("a", v="2"))
    assert rec.wait_count(6)
    assert rec.kinds()[2:] == [("update", "ns/a"), ("add", "ns/c"), ("delete", "ns/b"),
                               ("update", "ns/a")]
    assert inf.lister.get("a", "ns")["data"] == {"v": "2"}
    assert inf.lister.get("b", "ns") is None
    assert [o["metadata"]["name"] for o in inf.indexer.by_index(NAMESPACE_INDEX, "ns")] == \
        ["a", "c"]
    assert inf.last_sync_resource_version == "6"


def test_watch_closed_by_server_resumes_without_relist(src: FakeListerWatcher,
                                                       running) -> None:
    inf, rec = running
    wait_watching(src)
    with src.held():
        src.add(obj("c"))  # happens while no watch is open
    wait_watching(src)
    src.modify(obj("c", v="1"))
    assert rec.wait_count(4)
    assert rec.kinds()[2:] == [("add", "ns/c"), ("update", "ns/c")]
    assert src.list_calls == 1 and src.watch_calls[:2] == ["2", "2"]


def test_broken_watch_resumes_from_last_event(src: FakeListerWatcher, running) -> None:
    inf, rec = running
    wait_watching(src)
    src.modify(obj("a", v="1"))
    assert rec.wait_count(3)
    src.break_watches()
    wait_watching(src)
    assert src.list_calls == 1 and src.watch_calls[-1] == "3"


def test_bookmark_moves_the_resume_point(src: FakeListerWatcher, running) -> None:
    inf, rec = running
    wait_watching(src)
    other = src.rv
    src.rv += 5  # writes to objects this watch does not select
    src.bookmark()
    assert Recorder().wait(lambda _: inf.last_sync_resource_version == str(other + 5), 5)
    src.close_watches()
    wait_watching(src)
    assert src.watch_calls[-1] == str(other + 5)


def test_expired_resource_version_relists_with_tombstones(src: FakeListerWatcher,
                                                          running) -> None:
    inf, rec = running
    wait_watching(src)
    # While nothing watches: a new object, a change, a deletion; then history is compacted.
    with src.held():
        src.add(obj("c"))
        src.modify(obj("a", v="9"))
        src.delete("ns/b")
        src.compact()
    assert rec.wait_count(5)
    assert sorted(rec.kinds()[2:]) == [("add", "ns/c"), ("tombstone", "ns/b"),
                                       ("update", "ns/a")]
    assert src.list_calls == 2 and inf.reflector.stats.expired >= 1
    assert sorted(rec.state()) == ["ns/a", "ns/c"]
    tomb = next(e for e in rec.events if e[0] == "tombstone")
    assert tomb[3]["metadata"]["name"] == "b"  # the last state known


def test_unreachable_server_then_relist(src: FakeListerWatcher, running) -> None:
    inf, rec = running
    wait_watching(src)
    with src.held():
        src.fail_next(ConnectionFailure("refused"), ConnectionFailure("refused"))
        src.delete("ns/a")
        src.add(obj("z"))
    assert rec.wait_count(4)
    assert sorted(rec.kinds()[2:]) == [("add", "ns/z"), ("tombstone", "ns/a")]
    assert sorted(inf.indexer.list_keys()) == ["ns/b", "ns/z"]
    assert src.list_calls == 2 and inf.reflector.stats.errors == 2


def test_gone_on_watch_request_relists(src: FakeListerWatcher, running) -> None:
    inf, rec = running
    wait_watching(src)
    src.fail_next(gone())
    src.close_watches()
    assert Recorder().wait(lambda _: src.list_calls == 2, 5)


def test_per_object_order_under_many_changes(src: FakeListerWatcher, running) -> None:
    inf, rec = running
    wait_watching(src)
    for i in range(200):
        src.modify(obj("a", v=str(i)))
        if i % 50 == 0:
            src.close_watches()
    assert rec.wait(lambda r: r.state().get("ns/a", {}).get("data") == {"v": "199"}, 10)
    rvs = [int(rv) for kind, key, rv, _ in rec.events if key == "ns/a"]
    assert rvs == sorted(rvs) and len(rvs) == 201


def test_transform_failure_keeps_last_good_state(src: FakeListerWatcher) -> None:
    def transform(o: dict) -> dict:
        if o["data"].get("bad"):
            raise ValueError("bad data")
        return {**o, "decoded": True}

    inf = SharedInformer(src, transform=transform, backoff=fast_backoff())
    rec = Recorder()
    inf.add_event_handler(rec)
    inf.start()
    try:
        assert inf.wait_for_sync(5)
        wait_watching(src)
        src.modify(obj("a", bad="1"))
        src.modify(obj("b", v="2"))
        assert rec.wait_count(3)
        assert rec.kinds()[2] == ("update", "ns/b")
        a = inf.lister.get("a", "ns")
        assert a is not None and a["decoded"] and "bad" not in a["data"]
    finally:
        inf.stop()


def test_late_handler_gets_the_cache_and_slow_handler_blocks_nobody(
        src: FakeListerWatcher, running) -> None:
    inf, rec = running
    gate = threading.Event()
    slow_seen: list[str] = []

    def slow(o: dict) -> None:
        gate.wait(5)
        slow_seen.append(o["metadata"]["name"])

    late = Recorder()
    slow_reg = inf.add_event_handler(EventHandlerFuncs(add=slow))
    reg = inf.add_event_handler(late)
    assert reg.wait_for_sync(5) and sorted(late.kinds()) == [("add", "ns/a"), ("add", "ns/b")]
    wait_watching(src)
    src.add(obj("c"))
    assert late.wait_count(3) and rec.wait_count(3)
    assert not slow_reg.has_synced() and slow_seen == []
    gate.set()
    assert slow_reg.wait_for_sync(5)
    assert Recorder().wait(lambda _: len(slow_seen) == 3, 5)



def test_handler_after_existing_sees_a_change_once_the_earlier_handlers_have(
        src: FakeListerWatcher, running) -> None:
    """A scheduler's requeue handler must not run before the plugin cache it relies on."""
    inf, rec = running
    gate = threading.Event()
    cache: set[str] = set()

    def fill_cache(o: dict) -> None:
        gate.wait(5)
        cache.add(o["metadata"]["name"])

    seen: list[tuple[str, bool]] = []
    inf.add_event_handler(EventHandlerFuncs(add=fill_cache))
    after = inf.add_event_handler(
        EventHandlerFuncs(add=lambda o: seen.append((o["metadata"]["name"],
                                                     o["metadata"]["name"] in cache))),
        after_existing=True)
    # Its replay of the store does not wait: those objects are not news to anyone.
    assert after.wait_for_sync(5) and sorted(seen) == [("a", False), ("b", False)]
    wait_watching(src)
    src.add(obj("c"))
    assert rec.wait_count(3)  # a handler without ``after_existing`` already has it
    assert ("c", False) not in seen and len(seen) == 2
    gate.set()
    assert Recorder().wait(lambda _: len(seen) == 3, 5)
    assert seen[-1] == ("c", True)

def test_resync_delivers_updates_for_every_object() -> None:
    src = FakeListerWatcher()
    src.add(obj("a"))
    clock = FakeClock()
    inf = SharedInformer(src, resync_period=30.0, clock=clock, backoff=fast_backoff())
    rec = Recorder()
    inf.add_event_handler(rec)
    no_resync = Recorder()
    inf.add_event_handler(no_resync, resync_period=0)
    inf.start()
    try:
        assert inf.wait_for_sync(5)
        assert clock.wait_for_waiters(1)
        clock.step(29.0)
        clock.step(0.5)
        assert not rec.wait_count(2, timeout=0.2)
        clock.step(1.0)
        assert rec.wait_count(2)
        assert rec.kinds() == [("add", "ns/a"), ("update", "ns/a")]
        assert no_resync.kinds() == [("add", "ns/a")]
    finally:
        inf.stop()


def test_too_large_resource_version_relists(src: FakeListerWatcher, running) -> None:
    """A server whose storage was replaced (restored backup, new server) has not reached our
    resourceVersion; kube-apiserver answers 504 ResourceVersionTooLarge and we relist."""
    inf, rec = running
    wait_watching(src)
    too_large = ApiError(504, "Timeout", "Too large resource version: 99, current: 3",
                         {"kind": "Status", "code": 504, "reason": "Timeout",
                          "details": {"causes": [{"reason": "ResourceVersionTooLarge"}]}})
    with src.held():
        src.fail_next(too_large)
    assert Recorder().wait(lambda _: src.list_calls == 2, 5)
    assert inf.reflector.stats.expired == 1
