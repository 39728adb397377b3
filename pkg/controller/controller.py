"""The controller runner: worker threads draining a rate-limited queue into ``reconcile``.

Corresponds to controller-runtime's ``internal/controller`` (and the classic client-go
controller loop ``processNextWorkItem``). Controllers are level-triggered: informer handlers
enqueue keys (``namespace/name``), and ``reconcile(key)`` reads the current state from listers
and acts on it. Per key:

* ``reconcile`` returns ``None`` or ``Result()``: success, the key's backoff is forgotten;
* ``Result(requeue_after=s)``: success, reconcile again in ``s`` seconds;
* ``Result(requeue=True)``: reconcile again after the key's backoff;
* it raises: the error is logged and counted, and the key is retried after its backoff
  (5 ms doubling to 1000 s, within 10 qps overall by default).

A key is never reconciled by two workers at once, and a key enqueued while being reconciled is
reconciled again afterwards. ``stop()`` stops taking new keys, lets running reconciles finish
(up to a timeout) and joins the workers.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram

from pkg.client.informers.handlers import deleted_object
from pkg.client.informers.informer import wait_for_cache_sync
from pkg.client.informers.store import meta_namespace_key
from pkg.util.clock import REAL_CLOCK, Clock
from pkg.workqueue.queue import RateLimitingQueue
from pkg.workqueue.rate_limiters import RateLimiter

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Result:
    """What a reconcile asks for next (controller-runtime ``reconcile.Result``)."""

    requeue: bool = False
    requeue_after: float = 0.0


Reconciler = Callable[[Any], Result | None]


class ControllerMetrics:
    """controller-runtime's reconcile metrics, labelled with the controller name."""

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self.total = Counter("controller_runtime_reconcile_total",
                             "Total number of reconciliations per controller",
                             ["controller", "result"], registry=registry)
        self.errors = Counter("controller_runtime_reconcile_errors_total",
                              "Total number of reconciliation errors per controller",
                              ["controller"], registry=registry)
        self.duration = Histogram("controller_runtime_reconcile_time_seconds",
                                  "Length of time per reconciliation per controller",
                                  ["controller"], registry=registry)


_default_metrics: ControllerMetrics | None = None
_metrics_lock = threading.Lock()


def default_metrics() -> ControllerMetrics:
    global _default_metrics
    with _metrics_lock:
        if _default_metrics is None:
            _default_metrics = ControllerMetrics()
        return _default_metrics


class Controller:
    """``workers`` threads reconciling keys from a rate-limited queue."""

    def __init__(self, name: str, reconcile: Reconciler, *, workers: int = 1,
                 rate_limiter: RateLimiter | None = None, clock: Clock = REAL_CLOCK,
                 metrics: ControllerMetrics | None = None,
                 queue: RateLimitingQueue | None = None) -> None:
        if workers < 1:
            raise ValueError("a controller needs at least one worker")
        self.name = name
        self.reconcile = reconcile
        self.workers = workers
        self.clock = clock
        self.queue = queue or RateLimitingQueue(rate_limiter, name=name, clock=clock)
        self.metrics = metrics or default_metrics()
        self._threads: list[threading.Thread] = []
        self._started = False
        self._lock = threading.Lock()

    # -- feeding --------------------------------------------------------------------------

    def enqueue(self, key: Hashable) -> None:
        self.queue.add(key)

    def enqueue_after(self, key: Hashable, delay: float) -> None:
        self.queue.add_after(key, delay)

    def enqueue_object(self, obj: Any) -> None:
        """Enqueue an object's ``namespace/name`` key (tombstones included)."""
        try:
            self.queue.add(meta_namespace_key(obj))
        except (KeyError, TypeError) as e:
            log.error("%s: cannot enqueue object without a key: %s", self.name, e)

    def event_handler(self, key_func: Callable[[Any], Hashable | None] | None = None
                      ) -> EnqueueHandler:
        """An informer handler that enqueues the key of every added, updated or deleted
        object (``key_func`` maps an object to a key, or None to skip it)."""
        return EnqueueHandler(self, key_func)

    # -- running --------------------------------------------------------------------------

    def start(self, wait_for: Iterable[Any] = (), sync_timeout: float | None = None) -> bool:
        """Wait for the given informers/registrations to sync, then start the workers.
        False (and no workers) when the caches did not sync in ``sync_timeout``."""
        synced = list(wait_for)
        if synced and not wait_for_cache_sync(*synced, timeout=sync_timeout):
            log.error("%s: caches did not sync; not starting workers", self.name)
            return False
        with self._lock:
            if self._started:
                return True
            self._started = True
            for i in range(self.workers):
                t = threading.Thread(target=self._worker, name=f"{self.name}-worker-{i}",
                                     daemon=True)
                t.start()
                self._threads.append(t)
        log.info("%s: started %d workers", self.name, self.workers)
        return True

    def stop(self, timeout: float | None = 30.0) -> bool:
        """Graceful stop: no new keys; running reconciles finish (True when all finished
        within ``timeout``)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        drained = self.queue.shut_down_with_drain(timeout)
        for t in self._threads:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            t.join(left)
        return drained and not any(t.is_alive() for t in self._threads)

    def _worker(self) -> None:
        while self.process_next():
            pass

    def process_next(self) -> bool:
        """Take one key and reconcile it; False once the queue is shut down."""
        key, shutdown = self.queue.get()
        if shutdown:
            return False
        start = time.monotonic()
        try:
            result = self.reconcile(key)
        except Exception:  # noqa: BLE001 - reconcile errors are retried, never fatal
            log.exception("%s: reconcile %s failed; retrying", self.name, key)
            self.metrics.errors.labels(self.name).inc()
            self.metrics.total.labels(self.name, "error").inc()
            self.queue.add_rate_limited(key)
        else:
            if result is not None and result.requeue_after > 0:
                self.queue.forget(key)
                self.queue.add_after(key, result.requeue_after)
                self.metrics.total.labels(self.name, "requeue_after").inc()
            elif result is not None and result.requeue:
                self.queue.add_rate_limited(key)
                self.metrics.total.labels(self.name, "requeue").inc()
            else:
                self.queue.forget(key)
                self.metrics.total.labels(self.name, "success").inc()
        finally:
            self.metrics.duration.labels(self.name).observe(time.monotonic() - start)
            self.queue.done(key)
        return True


class EnqueueHandler:
    """Informer handler enqueueing object keys into a controller."""

    def __init__(self, controller: Controller,
                 key_func: Callable[[Any], Hashable | None] | None = None) -> None:
        self.controller = controller
        self.key_func = key_func

    def _enqueue(self, obj: Any) -> None:
        if self.key_func is None:
            self.controller.enqueue_object(obj)
            return
        key = self.key_func(deleted_object(obj))
        if key is not None:
            self.controller.enqueue(key)

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._enqueue(obj)

    def on_update(self, old: Any, new: Any) -> None:
        self._enqueue(new)

    def on_delete(self, obj: Any) -> None:
        self._enqueue(obj)


__all__ = ["Controller", "ControllerMetrics", "EnqueueHandler", "Reconciler", "Result"]
