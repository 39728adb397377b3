"""Rate limiters: client-go's default controller limiter and its parts."""

from __future__ import annotations

import pytest

from pkg.util.clock import FakeClock
from pkg.workqueue.rate_limiters import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    default_controller_rate_limiter,
)


def test_exponential_per_item_from_5ms_to_1000s() -> None:
    rl = ItemExponentialFailureRateLimiter()
    assert [rl.when("a") for _ in range(4)] == [0.005, 0.01, 0.02, 0.04]
    assert rl.when("b") == 0.005 and rl.num_requeues("a") == 4
    for _ in range(30):
        last = rl.when("a")
    assert last == 1000.0
    rl.forget("a")
    assert rl.num_requeues("a") == 0 and rl.when("a") == 0.005
    for _ in range(200):  # no overflow after very many failures
        assert rl.when("c") <= 1000.0


def test_bucket_is_shared_by_all_items() -> None:
    clock = FakeClock()
    rl = BucketRateLimiter(qps=10, burst=2, clock=clock)
    assert rl.when("a") == 0 and rl.when("b") == 0
    assert rl.when("c") == pytest.approx(0.1)
    assert rl.when("a") == pytest.approx(0.2)
    clock.step(1.0)
    assert rl.when("d") == 0


def test_default_is_max_of_backoff_and_10qps_burst_100() -> None:
    clock = FakeClock()
    rl = default_controller_rate_limiter(clock)
    assert rl.when("x") == 0.005
    # 100 retries of distinct items drain the burst; the 101st waits for the bucket.
    for i in range(99):
        assert rl.when(i) == 0.005
    assert rl.when("y") == pytest.approx(0.1)
    assert rl.num_requeues("x") == 1
    rl.forget("x")
    assert rl.num_requeues("x") == 0


def test_fast_slow_and_max_of() -> None:
    fs = ItemFastSlowRateLimiter(0.1, 5.0, 2)
    assert [fs.when("a") for _ in range(4)] == [0.1, 0.1, 5.0, 5.0]
    m = MaxOfRateLimiter(ItemFastSlowRateLimiter(1.0, 9.0, 1),
                         ItemExponentialFailureRateLimiter(0.5, 100))
    assert [m.when("a") for _ in range(4)] == [1.0, 9.0, 9.0, 9.0]
    assert m.num_requeues("a") == 4
