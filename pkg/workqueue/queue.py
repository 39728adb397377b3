"""Work queues: de-duplicating, delaying and rate-limited.

Corresponds to client-go ``util/workqueue`` (``queue.go``, ``delaying_queue.go``,
``rate_limiting_queue.go``). The guarantees controllers rely on:

* an item is queued at most once however often it is added (``dirty`` set);
* an item is never processed by two workers at once: one re-added while being processed is
  queued again when its worker calls ``done`` (so no change is lost);
* items come out in the order they were first added;
* ``add_after`` delays an add (an item already waiting keeps the earlier time);
* ``add_rate_limited`` delays by the rate limiter's ``when``; ``forget`` resets its backoff;
* after ``shut_down`` adds are ignored and ``get`` returns ``(None, True)`` once the queue is
  empty; ``shut_down_with_drain`` also waits for items being processed to be ``done``.

Time comes from an injectable clock, so delays are tested by stepping a ``FakeClock``.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections import deque
from collections.abc import Hashable
from typing import Any

from pkg.util.clock import REAL_CLOCK, Clock
from pkg.workqueue.metrics import WorkqueueMetrics, default_metrics
from pkg.workqueue.rate_limiters import RateLimiter, default_controller_rate_limiter


class Queue:
    """A de-duplicating FIFO with delayed adds (client-go's ``Type`` plus ``delayingType``)."""

    def __init__(self, name: str = "", clock: Clock = REAL_CLOCK,
                 metrics: WorkqueueMetrics | None = None) -> None:
        self.name = name
        self.clock = clock
        self._cond = threading.Condition()
        self._queue: deque[Hashable] = deque()
        self._dirty: set[Hashable] = set()
        self._processing: set[Hashable] = set()
        self._shutting_down = False
        self._drain = False
        # Delayed adds: heap of (ready_at, seq, item); _waiting[item] = ready_at.
        self._heap: list[tuple[float, int, Hashable]] = []
        self._waiting: dict[Hashable, float] = {}
        self._seq = itertools.count()
        self._metrics = (metrics or default_metrics()) if name else None
        self._added_at: dict[Hashable, float] = {}
        self._started_at: dict[Hashable, float] = {}

    # -- adding ---------------------------------------------------------------------------

    def add(self, item: Hashable) -> None:
        with self._cond:
            self._add_locked(item)

    def _add_locked(self, item: Hashable) -> None:
        if self._shutting_down or item in self._dirty:
            return
        if self._metrics is not None:
            self._metrics.adds.labels(self.name).inc()
            self._added_at.setdefault(item, self.clock.monotonic())
        self._dirty.add(item)
        if item in self._processing:
            return
        self._queue.append(item)
        self._set_depth()
        self._cond.notify()

    def add_after(self, item: Hashable, delay: float) -> None:
        """Add ``item`` once ``delay`` seconds have passed (at once when ``delay <= 0``)."""
        with self._cond:
            if self._shutting_down:
                return
            if delay <= 0:
                self._add_locked(item)
                return
            ready = self.clock.monotonic() + delay
            cur = self._waiting.get(item)
            if cur is not None and cur <= ready:
                return
            self._waiting[item] = ready
            heapq.heappush(self._heap, (ready, next(self._seq), item))
            # Wake a getter so it re-arms its wait for the new, possibly earlier, deadline.
            self._cond.notify_all()

    def _promote_ready(self) -> float | None:
        """Move due delayed items into the queue; returns seconds until the next one."""
        if not self._heap:
            return None
        now = self.clock.monotonic()
        while self._heap:
            ready, _, item = self._heap[0]
            if self._waiting.get(item) != ready:  # superseded by an earlier add_after
                heapq.heappop(self._heap)
                continue
            if ready > now:
                return ready - now
            heapq.heappop(self._heap)
            del self._waiting[item]
            self._add_locked(item)
        return None

    # -- processing -----------------------------------------------------------------------

    def get(self, timeout: float | None = None) -> tuple[Any, bool]:
        """The next item, blocking until there is one: ``(item, False)``; ``(None, True)``
        once shut down and empty. With ``timeout``, ``(None, False)`` when it passes."""
        deadline = None if timeout is None else self.clock.monotonic() + timeout
        with self._cond:
            while True:
                next_delay = self._promote_ready()
                if self._queue:
                    break
                if self._shutting_down:
                    return None, True
                wait = next_delay
                if deadline is not None:
                    left = deadline - self.clock.monotonic()
                    if left <= 0:
                        return None, False
                    wait = left if wait is None else min(wait, left)
                self.clock.wait(self._cond, wait)
            item = self._queue.popleft()
            self._processing.add(item)
            self._dirty.discard(item)
            if self._metrics is not None:
                now = self.clock.monotonic()
                added = self._added_at.pop(item, None)
                if added is not None:
                    self._metrics.queue_duration.labels(self.name).observe(now - added)
                self._started_at[item] = now
                self._set_depth()
            return item, False

    def done(self, item: Hashable) -> None:
        """Processing of ``item`` finished; if it was re-added meanwhile, queue it again."""
        with self._cond:
            self._processing.discard(item)
            if self._metrics is not None:
                started = self._started_at.pop(item, None)
                if started is not None:
                    self._metrics.work_duration.labels(self.name).observe(
                        self.clock.monotonic() - started)
            if item in self._dirty:
                self._queue.append(item)
                self._set_depth()
                self._cond.notify()
            elif not self._processing:
                self._cond.notify_all()  # a drain may be waiting

    def _set_depth(self) -> None:
        if self._metrics is not None:
            self._metrics.depth.labels(self.name).set(len(self._queue))

    # -- state and shutdown ---------------------------------------------------------------

    def __len__(self) -> int:
        with self._cond:
            self._promote_ready()
            return len(self._queue)

    def waiting(self) -> int:
        """Items whose delayed add has not come due."""
        with self._cond:
            self._promote_ready()
            return len(self._waiting)

    def processing(self) -> int:
        with self._cond:
            return len(self._processing)

    def shut_down(self) -> None:
        """Stop accepting items; getters return ``(None, True)`` once the queue is empty.
        Delayed adds not yet due are dropped."""
        with self._cond:
            self._shutting_down = True
            self._heap.clear()
            self._waiting.clear()
            self._cond.notify_all()

    def shut_down_with_drain(self, timeout: float | None = None) -> bool:
        """Shut down, then wait until every item being processed is ``done`` (True) or
        ``timeout`` passes (False). Items still queued are handed out as usual."""
        with self._cond:
            self._shutting_down = True
            self._heap.clear()
            self._waiting.clear()
            self._cond.notify_all()
            return self._cond.wait_for(lambda: not self._processing and not self._queue,
                                       timeout)

    @property
    def shutting_down(self) -> bool:
        with self._cond:
            return self._shutting_down


DelayingQueue = Queue


class RateLimitingQueue(Queue):
    """A queue whose retries wait as its rate limiter says (client-go
    ``RateLimitingInterface``); the default limiter is ``default_controller_rate_limiter``."""

    def __init__(self, rate_limiter: RateLimiter | None = None, name: str = "",
                 clock: Clock = REAL_CLOCK, metrics: WorkqueueMetrics | None = None) -> None:
        super().__init__(name, clock, metrics)
        self.rate_limiter = rate_limiter or default_controller_rate_limiter(clock)

    def add_rate_limited(self, item: Hashable) -> None:
        if self._metrics is not None:
            self._metrics.retries.labels(self.name).inc()
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: Hashable) -> None:
        self.rate_limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return self.rate_limiter.num_requeues(item)


__all__ = ["DelayingQueue", "Queue", "RateLimitingQueue"]
