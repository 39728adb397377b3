"""Rate limiting and backoff: a token bucket and an exponential backoff with jitter.

Corresponds to client-go ``util/flowcontrol`` (``NewTokenBucketRateLimiter``, the limiter every
REST client applies to its requests) and ``golang.org/x/time/rate`` (the bucket behind
workqueue's ``BucketRateLimiter``), plus apimachinery ``wait.Backoff`` /
``ExponentialBackoffManager`` (the reflector's backoff between failed list/watch attempts).
Both take an injectable clock (``pkg.util.clock``).
"""

from __future__ import annotations

import math
import random
import threading

from pkg.util.clock import REAL_CLOCK, Clock


class TokenBucket:
    """``qps`` tokens per second, at most ``burst`` saved up; starts full.

    ``qps <= 0`` means unlimited (every request passes at once).
    """

    def __init__(self, qps: float, burst: int, clock: Clock = REAL_CLOCK) -> None:
        self.qps = float(qps)
        self.burst = max(1, int(burst))
        self.clock = clock
        self._lock = threading.Lock()
        self._tokens = float(self.burst)
        self._last = clock.monotonic()

    @property
    def unlimited(self) -> bool:
        return self.qps <= 0 or math.isinf(self.qps)

    def _refill(self, now: float) -> None:
        if now > self._last:
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now

    def try_accept(self) -> bool:
        """Take a token if one is available now."""
        if self.unlimited:
            return True
        with self._lock:
            self._refill(self.clock.monotonic())
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return True
            return False

    def reserve(self) -> float:
        """Take a token, possibly borrowed from the future; returns how many seconds the caller
        must wait before acting on it (``rate.Limiter.Reserve().Delay()``)."""
        if self.unlimited:
            return 0.0
        with self._lock:
            now = self.clock.monotonic()
            self._refill(now)
            self._tokens -= 1.0
            if self._tokens >= 0:
                return 0.0
            return -self._tokens / self.qps

    def accept(self, stop: threading.Event | None = None) -> bool:
        """Block until a token is ours (``Accept``/``Wait``). False when ``stop`` was set
        first; the token stays taken then, as a cancelled Go ``Wait`` returns it only
        approximately either way."""
        delay = self.reserve()
        if delay <= 0:
            return not (stop is not None and stop.is_set())
        return not self.clock.sleep(delay, stop)

    def tokens(self) -> float:
        """Tokens available now (negative while requests are queued)."""
        with self._lock:
            self._refill(self.clock.monotonic())
            return self._tokens


class Backoff:
    """Exponential backoff: ``initial`` seconds, times ``factor`` per failure, capped at ``cap``;
    each delay gets up to ``jitter`` × delay of random extra. After ``reset_after`` seconds
    without a failure the next delay starts from ``initial`` again.

    The reflector uses client-go's values: 800 ms initial, 30 s cap, factor 2, jitter 1, reset
    after 2 minutes.
    """

    def __init__(self, initial: float = 0.8, cap: float = 30.0, factor: float = 2.0,
                 jitter: float = 1.0, reset_after: float = 120.0, clock: Clock = REAL_CLOCK,
                 rng: random.Random | None = None) -> None:
        self.initial = initial
        self.cap = cap
        self.factor = factor
        self.jitter = jitter
        self.reset_after = reset_after
        self.clock = clock
        self._rng = rng or random.Random()
        self._next = initial
        self._last_failure: float | None = None

    def next(self) -> float:
        """The delay to wait after one more failure."""
        now = self.clock.monotonic()
        if self._last_failure is not None and now - self._last_failure >= self.reset_after:
            self._next = self.initial
        self._last_failure = now
        delay = self._next
        self._next = min(self.cap, self._next * self.factor)
        if self.jitter > 0:
            delay += self._rng.random() * self.jitter * delay
        return delay

    def reset(self) -> None:
        self._next = self.initial
        self._last_failure = None


__all__ = ["Backoff", "TokenBucket"]
