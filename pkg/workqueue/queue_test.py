"""Queue semantics: de-duplication, re-processing of items re-added while processed,
delayed adds on a fake clock, rate-limited requeues, shutdown and drain, metrics."""

from __future__ import annotations

import threading

from prometheus_client import CollectorRegistry

from pkg.util.clock import FakeClock
from pkg.workqueue.metrics import WorkqueueMetrics
from pkg.workqueue.queue import Queue, RateLimitingQueue
from pkg.workqueue.rate_limiters import ItemExponentialFailureRateLimiter


def test_dedup_and_fifo() -> None:
    q = Queue()
    for item in ("a", "b", "a", "c", "b"):
        q.add(item)
    assert len(q) == 3
    assert [q.get()[0] for _ in range(3)] == ["a", "b", "c"]


def test_item_readded_while_processing_is_processed_again_after_done() -> None:
    q = Queue()
    q.add("a")
    item, _ = q.get()
    q.add("a")  # a change arrives while a worker holds "a"
    assert len(q) == 0, "must not be handed to a second worker concurrently"
    assert q.get(timeout=0.01) == (None, False)
    q.done(item)
    assert len(q) == 1 and q.get()[0] == "a"
    q.done("a")
    assert len(q) == 0


def test_concurrent_workers_never_share_an_item() -> None:
    q = Queue()
    active: set[str] = set()
    lock = threading.Lock()
    clash: list[str] = []
    processed: list[str] = []

    def worker() -> None:
        while True:
            item, shutdown = q.get()
            if shutdown:
                return
            with lock:
                if item in active:
                    clash.append(item)
                active.add(item)
            threading.Event().wait(0.0005)
            with lock:
                active.discard(item)
                processed.append(item)
            q.done(item)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for i in range(2000):
        q.add(f"k{i % 20}")
    assert q.shut_down_with_drain(10)
    for t in threads:
        t.join(5)
    assert not clash and set(processed) == {f"k{i}" for i in range(20)}


def test_add_after_on_a_fake_clock() -> None:
    clock = FakeClock()
    q = Queue(clock=clock)
    q.add_after("late", 10.0)
    q.add_after("soon", 1.0)
    q.add_after("late", 20.0)  # a later time does not postpone
    q.add_after("now", 0)
    assert len(q) == 1 and q.waiting() == 2
    assert q.get()[0] == "now"
    clock.step(1.0)
    assert len(q) == 1 and q.get()[0] == "soon"
    clock.step(8.999)
    assert len(q) == 0
    clock.step(0.001)
    assert q.get()[0] == "late"
    q.add_after("x", 5.0)
    q.add_after("x", 1.0)  # an earlier time wins
    clock.step(1.0)
    assert q.get()[0] == "x" and q.waiting() == 0


def test_blocked_getter_wakes_when_a_delay_expires() -> None:
    clock = FakeClock()
    q = Queue(clock=clock)
    got: list[object] = []
    t = threading.Thread(target=lambda: got.append(q.get()[0]))
    t.start()
    assert clock.wait_for_waiters(0) and not got
    q.add_after("d", 3.0)
    assert clock.wait_for_waiters(1)
    clock.step(2.0)
    t.join(0.1)
    assert not got
    clock.step(1.0)
    t.join(5)
    assert got == ["d"]


def test_rate_limited_requeue_backs_off_and_forget_resets() -> None:
    clock = FakeClock()
    q = RateLimitingQueue(ItemExponentialFailureRateLimiter(1.0, 60.0), clock=clock)
    q.add_rate_limited("k")
    assert len(q) == 0
    clock.step(1.0)
    assert q.get()[0] == "k"
    q.done("k")
    q.add_rate_limited("k")
    clock.step(1.0)
    assert len(q) == 0
    clock.step(1.0)
    assert len(q) == 1 and q.num_requeues("k") == 2
    q.forget("k")
    assert q.num_requeues("k") == 0


def test_shutdown_ignores_adds_and_releases_getters() -> None:
    q = Queue()
    q.add("a")
    results: list[tuple[object, bool]] = []
    q.shut_down()
    q.add("b")
    q.add_after("c", 0.01)
    results.append(q.get())
    results.append(q.get())
    assert results == [("a", False), (None, True)]


def test_drain_waits_for_processing_items() -> None:
    q = Queue()
    q.add("a")
    item, _ = q.get()
    drained: list[bool] = []
    t = threading.Thread(target=lambda: drained.append(q.shut_down_with_drain(5)))
    t.start()
    t.join(0.1)
    assert not drained
    q.done(item)
    t.join(5)
    assert drained == [True]
    assert not q.shut_down_with_drain(0) or q.processing() == 0


def test_named_queue_metrics() -> None:
    reg = CollectorRegistry()
    q = RateLimitingQueue(name="nodeslo", metrics=WorkqueueMetrics(reg))
    q.add("a")
    q.add("b")
    assert reg.get_sample_value("workqueue_depth", {"name": "nodeslo"}) == 2
    item, _ = q.get()
    q.done(item)
    q.add_rate_limited("a")
    assert reg.get_sample_value("workqueue_adds_total", {"name": "nodeslo"}) == 2
    assert reg.get_sample_value("workqueue_retries_total", {"name": "nodeslo"}) == 1
    assert reg.get_sample_value("workqueue_work_duration_seconds_count",
                                {"name": "nodeslo"}) == 1
