"""How long to wait before retrying an item: per-item backoff and overall rate limits.

Corresponds to client-go ``util/workqueue/default_rate_limiters.go``:

* ``ItemExponentialFailureRateLimiter``: ``base × 2^failures`` per item, capped;
* ``BucketRateLimiter``: a token bucket shared by all items (overall retry rate);
* ``ItemFastSlowRateLimiter``: a fast delay for the first attempts, then a slow one;
* ``MaxOfRateLimiter``: the longest delay of several limiters;
* ``default_controller_rate_limiter()``: 5 ms doubling to 1000 s per item, combined with
  10 qps / burst 100 overall, as client-go's ``DefaultControllerRateLimiter``.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Protocol

from pkg.util.clock import REAL_CLOCK, Clock
from pkg.util.flowcontrol import TokenBucket


class RateLimiter(Protocol):
    def when(self, item: Hashable) -> float:
        """Seconds to wait before processing ``item`` again (counts one more failure)."""
        ...

    def forget(self, item: Hashable) -> None:
        """The item succeeded: start its backoff over."""
        ...

    def num_requeues(self, item: Hashable) -> int: ...


class ItemExponentialFailureRateLimiter:
    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._failures: dict[Hashable, int] = {}
        self._lock = threading.Lock()

    def when(self, item: Hashable) -> float:
        with self._lock:
            n = self._failures.get(item, 0)
            self._failures[item] = n + 1
        if n >= 64:  # 2**64 × base overflows any sensible cap
            return self.max_delay
        return min(self.base_delay * (2 ** n), self.max_delay)

    def forget(self, item: Hashable) -> None:
        with self._lock:
            self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        with self._lock:
            return self._failures.get(item, 0)


class ItemFastSlowRateLimiter:
    def __init__(self, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        self.fast_delay = fast_delay
        self.slow_delay = slow_delay
        self.max_fast_attempts = max_fast_attempts
        self._failures: dict[Hashable, int] = {}
        self._lock = threading.Lock()

    def when(self, item: Hashable) -> float:
        with self._lock:
            n = self._failures.get(item, 0) + 1
            self._failures[item] = n
        return self.fast_delay if n <= self.max_fast_attempts else self.slow_delay

    def forget(self, item: Hashable) -> None:
        with self._lock:
            self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        with self._lock:
            return self._failures.get(item, 0)


class BucketRateLimiter:
    """Every retry takes a token; items wait for theirs (no per-item memory)."""

    def __init__(self, qps: float = 10.0, burst: int = 100, clock: Clock = REAL_CLOCK) -> None:
        self.bucket = TokenBucket(qps, burst, clock)

    def when(self, item: Hashable) -> float:
        return self.bucket.reserve()

    def forget(self, item: Hashable) -> None:
        pass

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    def __init__(self, *limiters: RateLimiter) -> None:
        self.limiters = limiters

    def when(self, item: Hashable) -> float:
        return max(limiter.when(item) for limiter in self.limiters)

    def forget(self, item: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_controller_rate_limiter(clock: Clock = REAL_CLOCK) -> MaxOfRateLimiter:
    """5 ms doubling to 1000 s per item, and 10 qps / burst 100 overall."""
    return MaxOfRateLimiter(ItemExponentialFailureRateLimiter(0.005, 1000.0),
                            BucketRateLimiter(10.0, 100, clock))


__all__ = [
    "BucketRateLimiter", "ItemExponentialFailureRateLimiter", "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter", "RateLimiter", "default_controller_rate_limiter",
]
