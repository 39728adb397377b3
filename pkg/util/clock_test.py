"""The fake clock wakes waiters exactly when stepped past their deadline."""

from __future__ import annotations

import threading

from pkg.util.clock import REAL_CLOCK, FakeClock


def test_fake_clock_moves_only_when_stepped() -> None:
    c = FakeClock(100.0)
    assert c.now() == 100.0 and c.monotonic() == 0.0
    c.step(2.5)
    assert c.now() == 102.5 and c.monotonic() == 2.5
    c.set(50.0)
    assert c.now() == 50.0


def test_sleep_returns_when_the_clock_reaches_the_deadline() -> None:
    c = FakeClock()
    done = threading.Event()

    def run() -> None:
        c.sleep(10.0)
        done.set()

    t = threading.Thread(target=run)
    t.start()
    assert c.wait_for_waiters(1)
    c.step(9.0)
    assert not done.wait(0.05)
    c.step(1.0)
    assert done.wait(2)
    t.join(2)
    assert not c.has_waiters()


def test_deadlines_lists_what_waiters_wait_for() -> None:
    c = FakeClock()
    c.step(1.0)
    threads = [threading.Thread(target=c.sleep, args=(s,)) for s in (5.0, 2.0)]
    for t in threads:
        t.start()
    assert c.wait_for_waiters(2)
    assert c.deadlines() == [3.0, 6.0]
    c.step(5.0)
    for t in threads:
        t.join(30)
    assert c.deadlines() == []


def test_sleep_with_stop_returns_true_when_stopped() -> None:
    c = FakeClock()
    stop = threading.Event()
    out: list[bool] = []
    t = threading.Thread(target=lambda: out.append(c.sleep(60.0, stop)))
    t.start()
    assert c.wait_for_waiters(1)
    stop.set()
    t.join(2)
    assert out == [True]


def test_condition_wait_times_out_on_fake_time() -> None:
    c = FakeClock()
    cond = threading.Condition()
    woke = threading.Event()

    def waiter() -> None:
        with cond:
            c.wait(cond, 5.0)
        woke.set()

    t = threading.Thread(target=waiter)
    t.start()
    assert c.wait_for_waiters(1)
    assert not woke.wait(0.05)
    c.step(5.0)
    assert woke.wait(2)
    t.join(2)


def test_real_clock_sleep_with_stop() -> None:
    stop = threading.Event()
    stop.set()
    assert REAL_CLOCK.sleep(10.0, stop) is True
    assert REAL_CLOCK.sleep(0.0) is False
