"""Controller runner: retries with backoff on error (fake clock), forget on success,
requeue_after, re-reconcile of keys enqueued mid-reconcile, parallel workers, graceful stop,
informer wiring."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from pkg.client.informers.fake import FakeListerWatcher
from pkg.client.informers.informer import SharedInformer
from pkg.controller.controller import Controller, ControllerMetrics, Result
from pkg.util.clock import FakeClock
from pkg.workqueue.rate_limiters import ItemExponentialFailureRateLimiter


def until(pred: Any, timeout: float = 30.0) -> bool:
    """Polls ``pred`` until true; the timeout only bounds a failure."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.002)
    return False


REG = CollectorRegistry()
METRICS = ControllerMetrics(REG)


@pytest.fixture
def metrics() -> ControllerMetrics:
    return METRICS


def test_error_retries_with_backoff_then_success_forgets(metrics: ControllerMetrics) -> None:
    clock = FakeClock()
    calls: list[float] = []

    def reconcile(key: str) -> None:
        calls.append(clock.monotonic())
        if len(calls) < 3:
            raise RuntimeError("not yet")

    c = Controller("retry", reconcile, clock=clock, metrics=metrics,
                   rate_limiter=ItemExponentialFailureRateLimiter(1.0, 100.0))
    c.start()
    try:
        c.enqueue("ns/a")
        assert until(lambda: len(calls) == 1)
        assert until(lambda: c.queue.waiting() == 1)
        clock.step(0.999)
        assert not until(lambda: len(calls) == 2, 0.05)
        clock.step(0.001)
        assert until(lambda: len(calls) == 2)
        assert until(lambda: c.queue.waiting() == 1)
        clock.step(2.0)  # second failure waits twice as long
        assert until(lambda: len(calls) == 3)
        assert calls == [0.0, 1.0, 3.0]
        assert until(lambda: c.queue.num_requeues("ns/a") == 0)
        assert REG.get_sample_value("controller_runtime_reconcile_errors_total",
                                    {"controller": "retry"}) == 2
        assert REG.get_sample_value("controller_runtime_reconcile_total",
                                    {"controller": "retry", "result": "success"}) == 1
    finally:
        assert c.stop(5)


def test_requeue_after_and_requeue(metrics: ControllerMetrics) -> None:
    clock = FakeClock()
    calls: list[str] = []

    def reconcile(key: str) -> Result:
        calls.append(key)
        if key == "after" and calls.count(key) == 1:
            return Result(requeue_after=30)
        if key == "again" and calls.count(key) == 1:
            return Result(requeue=True)
        return Result()

    c = Controller("t", reconcile, clock=clock, metrics=metrics,
                   rate_limiter=ItemExponentialFailureRateLimiter(1.0, 100.0))
    c.start()
    try:
        c.enqueue("after")
        c.enqueue("again")
        assert until(lambda: len(calls) == 2 and c.queue.waiting() == 2)
        clock.step(1.0)
        assert until(lambda: calls.count("again") == 2)
        assert calls.count("after") == 1
        clock.step(29.0)
        assert until(lambda: calls.count("after") == 2)
    finally:
        c.stop(5)


def test_key_enqueued_during_reconcile_is_reconciled_again(metrics: ControllerMetrics) -> None:
    entered, release = threading.Event(), threading.Event()
    seen: list[int] = []
    version = [0]

    def reconcile(key: str) -> None:
        seen.append(version[0])
        if len(seen) == 1:
            entered.set()
            release.wait(30)

    c = Controller("t", reconcile, workers=4, metrics=metrics)
    c.start()
    try:
        c.enqueue("k")
        assert entered.wait(30)
        version[0] = 1
        c.enqueue("k")  # the object changed while its reconcile runs
        time.sleep(0.05)
        assert seen == [0], "the same key ran on two workers at once"
        release.set()
        assert until(lambda: seen == [0, 1])
    finally:
        c.stop(5)


def test_workers_run_in_parallel_and_stop_is_graceful(metrics: ControllerMetrics) -> None:
    barrier = threading.Barrier(3, timeout=30)
    finished: list[str] = []

    def reconcile(key: str) -> None:
        barrier.wait()  # only passes if three keys reconcile at the same time
        time.sleep(0.1)
        finished.append(key)

    c = Controller("t", reconcile, workers=3, metrics=metrics)
    c.start()
    for k in ("a", "b", "c"):
        c.enqueue(k)
    assert until(lambda: barrier.n_waiting == 0 and c.queue.processing() == 3)
    assert c.stop(5)  # waits for the running reconciles
    assert sorted(finished) == ["a", "b", "c"]
    c.enqueue("d")
    time.sleep(0.05)
    assert "d" not in finished


def test_informer_events_become_reconciles(metrics: ControllerMetrics) -> None:
    src = FakeListerWatcher()
    src.add({"metadata": {"name": "a", "namespace": "ns"}})
    inf = SharedInformer(src)
    keys: list[str] = []
    c = Controller("t", lambda k: keys.append(k), metrics=metrics)
    inf.add_event_handler(c.event_handler())
    inf.start()
    try:
        assert c.start(wait_for=[inf], sync_timeout=5)
        assert until(lambda: keys == ["ns/a"])
        src.add({"metadata": {"name": "b", "namespace": "ns"}})
        src.delete("ns/a")
        assert until(lambda: keys == ["ns/a", "ns/b", "ns/a"])
    finally:
        inf.stop()
        c.stop(5)


def test_start_gives_up_when_caches_do_not_sync(metrics: ControllerMetrics) -> None:
    never = SharedInformer(FakeListerWatcher())  # never started
    c = Controller("t", lambda k: None, metrics=metrics)
    assert not c.start(wait_for=[never], sync_timeout=0.05)
    assert not c._threads
