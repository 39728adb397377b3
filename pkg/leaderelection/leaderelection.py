"""Leader election: at most one replica of a component does the work at a time.

Corresponds to client-go ``tools/leaderelection`` (``LeaderElector``, ``tryAcquireOrRenew``,
``ReleaseOnCancel``, ``HealthzAdaptor``). The algorithm, per candidate:

* **observe**: whenever the lock's record changes, note the local time (``observed_time``).
  The lease is free when it has no holder, or when ``lease_duration`` has passed on *our*
  clock since we last saw the record change: the holder's ``renewTime`` is never trusted, so
  clock skew between machines cannot make two leaders.
* **acquire** (standby): read the lock once, then keep a watch open on it (when the lock
  offers ``watch()``, as ``LeaseLock`` does), so each renewal is observed within milliseconds
  of being written. Sleep on the injected clock until ``observed_time + lease_duration`` or
  the next watched change, whichever comes first; a release or deletion wakes us at once.
  An attempt re-reads the lock and takes it by writing our identity, conditional on the
  resourceVersion just read: of two racing candidates only one wins, and a renewal that came
  in at the last moment just restarts our wait. A standby therefore replaces a dead leader
  within ``lease_duration`` of its last renewal (upstream polls, so up to about two jittered
  retry periods later). Without a watch (the lock has none; RBAC does not allow ``watch`` on
  the lease, as upstream's chart for koord-scheduler: asked before opening one, or told by a
  403, after which it is never tried again; or it ended and is being reopened with a backoff)
  the standby also polls every ``retry_period`` (jittered by up to 1.2×), as upstream does; it
  retries the same way after a failed attempt on a lease that looked free (a rival won, an API
  error).
* **renew**: while leading, rewrite ``renewTime`` every ``retry_period``. If no renewal
  succeeds for ``renew_deadline``, leadership is lost: ``on_stopped_leading`` runs and the
  component is expected to exit (as kube-scheduler does). The leader does not watch.
* **release** (``release_on_cancel``): on a graceful stop the leader clears the holder, so a
  standby sees it on its watch and takes over at once (at its next poll without a watch)
  instead of waiting for the lease to expire.

``lease_duration > renew_deadline > 1.2 × retry_period`` is required, as upstream.
``on_started_leading`` runs on its own thread with an ``Event`` that is set when leadership
ends; ``on_new_leader`` is told every time the observed holder changes. Everything waits on
the injected ``Clock``, so tests drive a standby with a ``FakeClock``.
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
from pkg.leaderelection.resourcelock import LeaderElectionRecord, LockWatch, ResourceLock
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
        self._changes = 0  # how many times it changed
        self._reported_leader = ""
        self._leading = False
        self._state = threading.Lock()
        # Standby machinery: the watch thread notes changes and wakes the acquire loop.
        self._standby = False   # in _acquire: watched records may be applied
        self._watching = False  # a watch on the lock is open
        self._attempt = threading.Lock()  # held across an acquire attempt
        self._wake = threading.Condition()
        self._kicked = False
        self._watch_mu = threading.Lock()
        self._watch: LockWatch | None = None

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
        """Wait as a standby until we hold the lease (True) or ``stop`` is set (False).

        An attempt (``_try_acquire_or_renew``: a fresh GET, then the conditional write) is
        made at the start; when the observed holder's lease expires by our clock
        (``observed_time + lease_duration``); at once when the lock is seen released or
        deleted; and otherwise every jittered ``retry_period`` while the lock is not being
        watched, or after a failed attempt on a lease that looked free."""
        log.info("attempting to acquire leader lease %s...", self.name)
        done = threading.Event()
        with self._state:
            self._standby = True
        helpers = [threading.Thread(target=self._relay_stop, args=(stop, done),
                                    name=f"leader-stop-{self.name}", daemon=True)]
        open_watch: Callable[[], LockWatch] | None = getattr(self.lock, "watch", None)
        if callable(open_watch):
            helpers.append(threading.Thread(target=self._watch_lock, args=(done, open_watch),
                                            name=f"leader-watch-{self.name}", daemon=True))
        for t in helpers:
            t.start()
        attempted_at = next_poll = float("-inf")
        tried: int | None = None  # self._changes as our last attempt left it
        try:
            while not stop.is_set():
                if tried is None or self.clock.monotonic() >= \
                        self._next_attempt(attempted_at, next_poll, tried):
                    attempted_at = self.clock.monotonic()
                    next_poll = attempted_at + self._jittered_retry()
                    with self._attempt:
                        ok = self._try_acquire_or_renew()
                        with self._state:
                            tried = self._changes
                            if ok:
                                self._standby = False
                    self._report_leader()
                    if ok:
                        log.info("successfully acquired lease %s", self.name)
                        return True
                    continue
                self._report_leader()
                self._wait_until(self._next_attempt(attempted_at, next_poll, tried), stop)
            return False
        finally:
            with self._state:
                self._standby = False
            done.set()
            self._kick()
            with self._watch_mu:
                watch = self._watch
            if watch is not None:
                watch.stop()

    def _next_attempt(self, attempted_at: float, next_poll: float, tried: int) -> float:
        """When (``clock.monotonic()``) the standby should next try to acquire, given when
        it last tried, its next poll, and the change count its last attempt left."""
        with self._state:
            observed, seen, watching = self._observed, self._observed_time, self._watching
            changed = self._changes != tried
        holder = observed.holder_identity if observed is not None else ""
        if holder and holder != self.identity:
            expiry = seen + self.lease_duration
            if not changed and expiry <= attempted_at:
                # Tried since it expired and failed (a rival won, or an error): retry later;
                # a rival's write seen on the watch moves the expiry ahead.
                return next_poll
            # The watch tells us of any renewal before the expiry; without it, poll as well.
            return expiry if watching else min(expiry, next_poll)
        # No holder (released), no lock (deleted), or our own identity (we restarted): try
        # at once if that changed since our last attempt, else at the next poll.
        return seen if changed else next_poll

    def _wait_until(self, when: float, stop: threading.Event) -> None:
        """Sleep on our clock until ``when``, a watched change or ``stop``."""
        with self._wake:
            while not self._kicked and not stop.is_set():
                left = when - self.clock.monotonic()
                if left <= 0:
                    break
                self.clock.wait(self._wake, left)
            self._kicked = False

    def _kick(self) -> None:
        with self._wake:
            self._kicked = True
            self._wake.notify_all()

    def _relay_stop(self, stop: threading.Event, done: threading.Event) -> None:
        """Wakes the standby loop when ``stop`` is set (an Event cannot share its condition);
        exits within a second once the standby phase is over."""
        while not done.is_set():
            if stop.wait(1.0):
                self._kick()
                return

    def _watch_lock(self, done: threading.Event, open_watch: Callable[[], LockWatch]) -> None:
        """While standing by, keep a watch open on the lock and note each change the moment
        it arrives. A watch that ends is reopened (at once after a long-lived one); one that
        cannot be opened or fails quickly is retried with a backoff from ``retry_period`` up
        to ``lease_duration``, polling meanwhile. One that RBAC does not allow is given up:
        the standby polls, as upstream's always does."""
        failures = 0
        while not done.is_set():
            opened = self.clock.monotonic()
            healthy = False
            try:
                watch = open_watch()
            except Exception as e:  # noqa: BLE001 - any failure: poll, retry later
                # LeaseLock's PermissionError: RBAC grants no watch (asked first); a 403.
                if isinstance(e, PermissionError) or (isinstance(e, ApiError)
                                                      and e.status == 403):
                    log.info("cannot watch lock %s, polling it: %s", self.name, e)
                    return
                (log.info if failures == 0 else log.debug)(
                    "cannot watch lock %s, polling it: %s", self.name, e)
            else:
                with self._watch_mu:
                    self._watch = watch
                if done.is_set():
                    watch.stop()
                self._set_watching(True)
                try:
                    for record in watch:
                        if done.is_set():
                            break
                        self._observe_watched(record)
                    healthy = self.clock.monotonic() - opened >= self.lease_duration
                except Exception as e:  # noqa: BLE001 - ApiError, or a broken stream
                    log.debug("watch of lock %s ended: %s", self.name, e)
                finally:
                    self._set_watching(False)
                    with self._watch_mu:
                        self._watch = None
            if done.is_set():
                return
            if healthy:
                failures = 0
                continue
            failures += 1
            backoff = min(self.retry_period * 2 ** min(failures - 1, 16), self.lease_duration)
            self.clock.sleep(backoff * (1.0 + self._rng.random() * JITTER_FACTOR), done)

    def _set_watching(self, watching: bool) -> None:
        with self._state:
            self._watching = watching
        self._kick()

    def _observe_watched(self, record: LeaderElectionRecord | None) -> None:
        mono = self.clock.monotonic()
        # Not during an attempt, nor once it succeeded: a late event must not overwrite the
        # record we just wrote. (A stale record between attempts is harmless: it only moves
        # observed_time later, and every attempt re-reads the lock first.)
        with self._attempt:
            with self._state:
                if not self._standby or self._observed == record:
                    return
                self._observed = record
                self._observed_time = mono
                self._changes += 1
        self._kick()

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

        # When we saw it: after the read, so never before the record was written.
        seen = self.clock.monotonic()
        with self._state:
            if self._observed != current:
                self._observed = current
                self._observed_time = seen
                self._changes += 1
            observed_time = self._observed_time
        holder = current.holder_identity
        if holder and holder != self.identity and \
                observed_time + self.lease_duration > seen:
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
            self._changes += 1

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
