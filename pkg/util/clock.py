"""Injectable clocks: the real one and a fake that tests step by hand.

Corresponds to ``k8s.io/utils/clock`` (``Clock``, ``RealClock``) and its ``testing.FakeClock``.
Everything in ``pkg`` that waits or measures time (workqueue backoffs and delayed adds, token
buckets, reflector backoff and resync, leader-election leases, event aggregation) takes a
``Clock``, so tests advance time with ``FakeClock.step`` instead of sleeping.

A clock offers:

* ``now()``: wall-clock seconds since the epoch (timestamps written to objects);
* ``monotonic()``: seconds on a clock that never goes back (deadlines and durations);
* ``sleep(seconds, stop=None)``: wait, returning early (``True``) when ``stop`` is set;
* ``wait(cond, timeout)``: with ``cond`` held, wait until it is notified or ``timeout``
  seconds of this clock have passed (callers loop and re-check their predicate, as with any
  condition variable).

With a ``FakeClock``, time moves only through ``step``/``set``; a waiter whose deadline has
passed is woken at once. ``has_waiters()`` tells a test that a thread is parked on the clock,
so the test can step it deterministically. A ``NoWaitClock`` keeps real time but never sleeps.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    def now(self) -> float: ...

    def monotonic(self) -> float: ...

    def sleep(self, seconds: float, stop: threading.Event | None = None) -> bool: ...

    def wait(self, cond: threading.Condition, timeout: float | None) -> None: ...


class RealClock:
    """The system clocks: ``time.time``, ``time.monotonic``, real waits."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float, stop: threading.Event | None = None) -> bool:
        """Sleep ``seconds``; True when ``stop`` was (or became) set."""
        if stop is None:
            if seconds > 0:
                time.sleep(seconds)
            return False
        return stop.wait(max(0.0, seconds))

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        cond.wait(None if timeout is None else max(0.0, timeout))


REAL_CLOCK = RealClock()


class NoWaitClock(RealClock):
    """Real time, but ``sleep`` returns at once: for tests against an API server where the
    client's back-off is not what is tested (it retries a 429 ten times, a second apart)."""

    def sleep(self, seconds: float, stop: threading.Event | None = None) -> bool:
        return stop is not None and stop.is_set()


class _Waiter:
    __slots__ = ("deadline", "cond")

    def __init__(self, deadline: float, cond: threading.Condition) -> None:
        self.deadline = deadline
        self.cond = cond


class FakeClock:
    """A clock that only moves when told to.

    ``now()`` and ``monotonic()`` advance together. Waits with a timeout register a deadline
    and are woken when ``step``/``set`` reaches it; waits without a timeout behave as on a
    real condition. ``sleep(..., stop)`` also notices ``stop`` (checked every few real
    milliseconds, since an ``Event`` cannot share a condition with the clock).
    """

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._lock = threading.Lock()
        # Monotonic time counts from 0 so that small steps keep full float precision;
        # wall time is ``start`` plus the same offset.
        self._wall_start = float(start)
        self._t = 0.0
        self._waiters: list[_Waiter] = []

    def now(self) -> float:
        with self._lock:
            return self._wall_start + self._t

    def monotonic(self) -> float:
        with self._lock:
            return self._t

    def step(self, seconds: float) -> None:
        """Advance the clock and wake every waiter whose deadline has come."""
        with self._lock:
            self._t += seconds
        self._wake()

    def set(self, t: float) -> None:
        """Set the wall time (monotonic time moves by the same amount; it may go back)."""
        with self._lock:
            self._t = float(t) - self._wall_start
        self._wake()

    def has_waiters(self) -> bool:
        with self._lock:
            return bool(self._waiters)

    def waiters(self) -> int:
        with self._lock:
            return len(self._waiters)

    def deadlines(self) -> list[float]:
        """The ``monotonic()`` times the waiting threads wait for, soonest first."""
        with self._lock:
            return sorted(w.deadline for w in self._waiters)

    def wait_for_waiters(self, n: int = 1, timeout: float = 30.0) -> bool:
        """Block (in real time) until at least ``n`` threads wait on this clock (the timeout
        only bounds a failure: a thread on a busy machine may take seconds to get there)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.waiters() >= n:
                return True
            time.sleep(0.001)
        return False

    def _wake(self) -> None:
        with self._lock:
            due = [w for w in self._waiters if w.deadline <= self._t]
        for w in due:
            with w.cond:
                w.cond.notify_all()

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        if timeout is None:
            cond.wait()
            return
        with self._lock:
            deadline = self._t + max(0.0, timeout)
            if deadline <= self._t:
                return
            w = _Waiter(deadline, cond)
            self._waiters.append(w)
        try:
            # The clock notifies ``cond`` (taking it, so no wakeup is lost between the
            # registration above and this wait releasing it).
            cond.wait()
        finally:
            with self._lock:
                self._waiters.remove(w)

    def sleep(self, seconds: float, stop: threading.Event | None = None) -> bool:
        cond = threading.Condition()
        with self._lock:
            deadline = self._t + max(0.0, seconds)
        with cond:
            while True:
                if stop is not None and stop.is_set():
                    return True
                with self._lock:
                    left = deadline - self._t
                if left <= 0:
                    return False
                if stop is None:
                    self.wait(cond, left)
                else:
                    self._wait_polling(cond, left, stop)

    def _wait_polling(self, cond: threading.Condition, left: float,
                      stop: threading.Event) -> None:
        with self._lock:
            w = _Waiter(self._t + left, cond)
            self._waiters.append(w)
        try:
            while not stop.is_set():
                if cond.wait(0.005):
                    return
                with self._lock:
                    if self._t >= w.deadline:
                        return
        finally:
            with self._lock:
                self._waiters.remove(w)


__all__ = ["REAL_CLOCK", "Clock", "FakeClock", "NoWaitClock", "RealClock"]
