"""Leader election: at most one replica of a component does the work at a time.

Corresponds to client-go ``tools/leaderelection`` (``LeaderElector``, ``tryAcquireOrRenew``,
``ReleaseOnCancel``, ``HealthzAdaptor``). The algorithm, per candidate:

* **acquire**: every ``retry_period`` (jittered by up to 1.2×), read the lock. Whenever its
  record changes, note the local time (``observed_time``). The lease is free when it has no
  holder, or when ``lease_duration`` has passed on *our* clock since we last saw the record
  change — so clock skew between machines does not matter. Take it by writing our identity,
  conditional on the resourceVersion we read: of two racing candidates only one wins.
* **renew**: while leading, rewrite ``renewTime`` every ``retry_period``. If no renewal
  succeeds for ``renew_deadline``, leadership is lost: ``on_stopped_leading`` runs and the
  component is expected to exit (as kube-scheduler does).
* **release** (``release_on_cancel``): on a graceful stop the leader clears the holder, so a
  standby takes over at its next retry instead of waiting for the lease to expire.

``lease_duration > renew_deadline > 1.2 × retry_period`` is required, as upstream.
``on_started_leading`` runs on its own thread with an ``Event`` that is set when leadership
ends; ``on_new_leader`` is told every time the observed holder changes.
"""

from __future__ import annotations

import logging
import random
import socket
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace

from prometheus_client import REGISTRY, CollectorRegistry, Gauge

from pkg.client.errors import ApiError, ConnectionFailure
from pkg.leaderelection.resourcelock import LeaderElectionRecord, ResourceLock
from pkg.util.clock import REAL_CLOCK, Clock

log = logging.getLogger(__name__)

JITTER_FACTOR = 1.2


def default_identity() -> str:
    """``<hostname>_<uuid>``, as upstream components build it."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass
class LeaderCallbacks:
    on_started_leading: Callable[[threading.Event], None]
    on_stopped_leading: Callable[[], None]
    on_new_leader: Callable[[str], None] | None = None


_status_gauge: Gauge | None = None
_gauge_lock = threading.Lock()


def _master_status(registry: CollectorRegistry = REGISTRY) -> Gauge:
    global _status_gauge
    with _gauge_lock:
        if _status_gauge is None:
            _status_gauge = Gauge("leader_election_master_status",
                                  "Gauge of if the reporting system is master of the relevant "
                                  "lease, 0 indicates backup, 1 indicates master. 'name' is the "
                                  "string used to identify the lease.", ["name"],
                                  registry=registry)
        return _status_gauge


class LeaderElector:
    """Runs the election for one lock and calls back on leadership changes."""

    def __init__(self, lock: ResourceLock, callbacks: LeaderCallbacks, *,
                 lease_duration: float = 15.0, renew_deadline: float = 10.0,
                 retry_period: float = 2.0, release_on_cancel: bool = True,
                 name: str = "", clock: Clock = REAL_CLOCK,
                 rng: random.Random | None = None) -> None:
        if lease_duration <= renew_deadline:
            raise ValueError("leaseDuration must be greater than renewDeadline")
        if renew_deadline <= JITTER_FACTOR * retry_period:
            raise ValueError("renewDeadline must be greater than retryPeriod*JitterFactor")
        if retry_period <= 0:
            raise ValueError("retryPeriod must be greater than zero")
        self.lock = lock
        self.callbacks = callbacks
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.release_on_cancel = release_on_cancel
        self.name = name or lock.describe()
        self.clock = clock
        self._rng = rng or random.Random()
        self._observed: LeaderElectionRecord | None = None
        self._observed_time = 0.0  # clock.monotonic() when the record last changed
        self._reported_leader = ""
        self._leading = False
        self._state = threading.Lock()

    # -- state ----------------------------------------------------------------------------

    @property
    def identity(self) -> str:
        return self.lock.identity

    def is_leader(self) -> bool:
        with self._state:
            return self._observed is not None and \
                self._observed.holder_identity == self.identity and self._leading

    def get_leader(self) -> str:
        with self._state:
            return self._observed.holder_identity if self._observed else ""

    def check(self, max_tolerable_expired_lease: float = 0.0) -> str | None:
        """Health check (client-go ``HealthzAdaptor``): an error message when we lead but
        have not renewed for longer than the lease plus the tolerance, else None."""
        with self._state:
            if not self._leading:
                return None
            late = self.clock.monotonic() - self._observed_time
        if late > self.lease_duration + max_tolerable_expired_lease:
            return f"failed election to renew leadership on lease {self.name}"
        return None

    # -- the election ---------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Acquire, lead until stopped or the lease is lost, then release (when configured).
        Blocks; returns when ``stop`` is set or leadership was lost."""
        if not self._acquire(stop):
            return
        leading_stop = threading.Event()
        with self._state:
            self._leading = True
        _master_status().labels(self.name).set(1)
        worker = threading.Thread(target=self.callbacks.on_started_leading,
                                  args=(leading_stop,), name=f"leader-{self.name}",
                                  daemon=True)
        worker.start()
        try:
            self._renew(stop)
        finally:
            with self._state:
                self._leading = False
            _master_status().labels(self.name).set(0)
            leading_stop.set()
            if stop.is_set() and self.release_on_cancel:
                self.release()
            self.callbacks.on_stopped_leading()

    def _sleep(self, seconds: float, stop: threading.Event) -> bool:
        return self.clock.sleep(seconds, stop)

    def _jittered_retry(self) -> float:
        return self.retry_period * (1.0 + self._rng.random() * JITTER_FACTOR)

    def _acquire(self, stop: threading.Event) -> bool:
        log.info("attempting to acquire leader lease %s...", self.name)
        while not stop.is_set():
            ok = self._try_acquire_or_renew()
            self._report_leader()
            if ok:
                log.info("successfully acquired lease %s", self.name)
                return True
            if self._sleep(self._jittered_retry(), stop):
                break
        return False

    def _renew(self, stop: threading.Event) -> None:
        while not stop.is_set():
            deadline = self.clock.monotonic() + self.renew_deadline
            renewed = False
            while not stop.is_set():
                if self._try_acquire_or_renew():
                    renewed = True
                    break
                if self.clock.monotonic() + self.retry_period >= deadline:
                    break
                if self._sleep(self.retry_period, stop):
                    break
            self._report_leader()
            if stop.is_set():
                return
            if not renewed:
                log.error("failed to renew lease %s: timed out waiting for the condition",
                          self.name)
                return
            if self._sleep(self.retry_period, stop):
                return

    def _try_acquire_or_renew(self) -> bool:
        now = self.clock.now()
        mono = self.clock.monotonic()
        mine = LeaderElectionRecord(
            holder_identity=self.identity,
            lease_duration_seconds=max(1, int(round(self.lease_duration))),
            acquire_time=now, renew_time=now)
        try:
            current = self.lock.get()
        except (ApiError, ConnectionFailure) as e:
            log.error("error retrieving resource lock %s: %s", self.name, e)
            return False
        if current is None:
            try:
                self.lock.create(mine)
            except (ApiError, ConnectionFailure) as e:
                log.error("error initially creating leader election record: %s", e)
                return False
            self._observe(mine, mono)
            return True

        with self._state:
            if self._observed != current:
                self._observed = current
                self._observed_time = mono
            observed_time = self._observed_time
        holder = current.holder_identity
        if holder and holder != self.identity and \
                observed_time + self.lease_duration > mono:
            log.debug("lock is held by %s and has not yet expired", holder)
            return False

        if holder == self.identity:
            mine = replace(mine, acquire_time=current.acquire_time,
                           leader_transitions=current.leader_transitions)
        else:
            mine = replace(mine, leader_transitions=current.leader_transitions + 1)
        try:
            self.lock.update(mine)
        except (ApiError, ConnectionFailure) as e:
            log.error("failed to update lock %s: %s", self.name, e)
            return False
        self._observe(mine, mono)
        return True

    def _observe(self, record: LeaderElectionRecord, mono: float) -> None:
        with self._state:
            self._observed = record
            self._observed_time = mono

    def _report_leader(self) -> None:
        leader = self.get_leader()
        if leader and leader != self._reported_leader:
            self._reported_leader = leader
            if leader == self.identity:
                log.info("%s: this candidate (%s) is the leader", self.name, leader)
            else:
                log.info("%s: new leader elected: %s", self.name, leader)
            if self.callbacks.on_new_leader is not None:
                try:
                    self.callbacks.on_new_leader(leader)
                except Exception:  # noqa: BLE001
                    log.exception("on_new_leader callback failed")

    def release(self) -> bool:
        """Give the lease up if we hold it (holder cleared, 1 s duration)."""
        with self._state:
            observed = self._observed
        if observed is None or observed.holder_identity != self.identity:
            return True
        now = self.clock.now()
        record = LeaderElectionRecord(holder_identity="", lease_duration_seconds=1,
                                      acquire_time=now, renew_time=now,
                                      leader_transitions=observed.leader_transitions)
        try:
            self.lock.update(record)
        except (ApiError, ConnectionFailure) as e:
            log.error("failed to release lock %s: %s", self.name, e)
            return False
        self._observe(record, self.clock.monotonic())
        log.info("released lease %s", self.name)
        return True


__all__ = ["JITTER_FACTOR", "LeaderCallbacks", "LeaderElector", "default_identity"]
