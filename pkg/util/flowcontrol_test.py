"""Token bucket and exponential backoff, on a fake clock."""

from __future__ import annotations

import random
import threading

import pytest

from pkg.util.clock import FakeClock
from pkg.util.flowcontrol import Backoff, TokenBucket


def test_bucket_starts_full_then_refills_at_qps() -> None:
    c = FakeClock()
    b = TokenBucket(qps=10, burst=3, clock=c)
    assert [b.try_accept() for _ in range(4)] == [True, True, True, False]
    c.step(0.1)
    assert b.try_accept() and not b.try_accept()
    c.step(10)  # refills to burst, no more
    assert sum(b.try_accept() for _ in range(10)) == 3


def test_reserve_returns_the_wait_for_borrowed_tokens() -> None:
    c = FakeClock()
    b = TokenBucket(qps=10, burst=1, clock=c)
    assert b.reserve() == 0.0
    assert b.reserve() == pytest.approx(0.1)
    assert b.reserve() == pytest.approx(0.2)


def test_accept_blocks_until_a_token_arrives() -> None:
    c = FakeClock()
    b = TokenBucket(qps=2, burst=1, clock=c)
    assert b.accept()
    done = threading.Event()

    def run() -> None:
        b.accept()
        done.set()

    t = threading.Thread(target=run)
    t.start()
    assert c.wait_for_waiters(1)
    assert not done.is_set()
    c.step(0.5)
    assert done.wait(2)
    t.join(2)


def test_accept_returns_false_when_stopped() -> None:
    c = FakeClock()
    b = TokenBucket(qps=1, burst=1, clock=c)
    b.accept()
    stop = threading.Event()
    out: list[bool] = []
    t = threading.Thread(target=lambda: out.append(b.accept(stop)))
    t.start()
    assert c.wait_for_waiters(1)
    stop.set()
    t.join(2)
    assert out == [False]


def test_non_positive_qps_is_unlimited() -> None:
    b = TokenBucket(qps=-1, burst=1, clock=FakeClock())
    assert all(b.try_accept() for _ in range(1000))
    assert b.reserve() == 0.0


def test_backoff_doubles_to_the_cap_and_resets_after_quiet_period() -> None:
    c = FakeClock()
    b = Backoff(initial=1.0, cap=8.0, factor=2.0, jitter=0.0, reset_after=60.0, clock=c)
    assert [b.next() for _ in range(6)] == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    c.step(61)
    assert b.next() == 1.0
    b.reset()
    assert b.next() == 1.0


def test_backoff_jitter_adds_at_most_the_factor() -> None:
    b = Backoff(initial=1.0, cap=100.0, jitter=1.0, clock=FakeClock(), rng=random.Random(7))
    delays = [b.next() for _ in range(5)]
    for i, d in enumerate(delays):
        assert 2.0 ** i <= d <= 2.0 ** (i + 1)
