"""Leader election logic on an in-memory lock: acquisition, expiry measured on the local clock,
optimistic concurrency, release, renew-deadline loss, health check, flags; the standby loop
(waking exactly at the observed expiry, on a watched release, polling without a watch)."""

from __future__ import annotations

import argparse
import queue
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace

import pytest

from api.meta import parse_timestamp
from pkg.client.errors import ApiError, ConnectionFailure
from pkg.leaderelection.config import (
    LeaderElectionConfiguration,
    add_leader_election_flags,
    config_from_args,
)
from pkg.leaderelection.leaderelection import LeaderCallbacks, LeaderElector
from pkg.leaderelection.resourcelock import LeaderElectionRecord, format_micro_time
from pkg.util.clock import FakeClock


class Store:
    """One Lease: a record and a version, shared by every candidate's lock."""

    def __init__(self) -> None:
        self.record: LeaderElectionRecord | None = None
        self.version = 0
        self.fail = False
        self.lock = threading.Lock()
        self.watchers: list[FakeWatch] = []

    def held(self) -> LeaderElectionRecord:
        """The record, which a test expects to exist by now."""
        assert self.record is not None, "no leader election record yet"
        return self.record

    def changed(self) -> None:
        """Called with ``lock`` held after every write: tell the watchers."""
        for w in self.watchers:
            w.events.put(self.record)


class FakeWatch:
    """A watch on the store: the current record, then every change, until stopped."""

    def __init__(self, store: Store) -> None:
        self.store = store
        # Records (None: the lock was deleted), then the watch itself when stopped.
        self.events: queue.Queue[LeaderElectionRecord | FakeWatch | None] = queue.Queue()
        self.stopped = threading.Event()
        with store.lock:
            if store.record is not None:
                self.events.put(store.record)
            store.watchers.append(self)

    def __iter__(self) -> Iterator[LeaderElectionRecord | None]:
        try:
            while True:
                ev = self.events.get()
                if isinstance(ev, FakeWatch):
                    return
                yield ev
        finally:
            with self.store.lock:
                self.store.watchers.remove(self)

    def stop(self) -> None:
        self.stopped.set()
        self.events.put(self)


class FakeLock:
    def __init__(self, store: Store, identity: str) -> None:
        self.store = store
        self.identity = identity
        self.seen_version = -1
        self.gets = 0

    def describe(self) -> str:
        return "ns/lock"

    def get(self) -> LeaderElectionRecord | None:
        with self.store.lock:
            self.gets += 1
            if self.store.fail:
                raise ConnectionFailure("down")
            self.seen_version = self.store.version
            return self.store.record

    def create(self, record: LeaderElectionRecord) -> None:
        with self.store.lock:
            if self.store.record is not None:
                raise ApiError(409, "AlreadyExists", "exists")
            self.store.record = record
            self.store.version += 1
            self.seen_version = self.store.version
            self.store.changed()

    def update(self, record: LeaderElectionRecord) -> None:
        with self.store.lock:
            if self.store.fail:
                raise ConnectionFailure("down")
            if self.seen_version != self.store.version:
                raise ApiError(409, "Conflict", "the object has been modified")
            self.store.record = record
            self.store.version += 1
            self.seen_version = self.store.version
            self.store.changed()


class WatchableLock(FakeLock):
    """A lock with ``watch()``, like ``LeaseLock``; ``watch_fails`` makes opening it fail."""

    def __init__(self, store: Store, identity: str, watch_fails: bool = False) -> None:
        super().__init__(store, identity)
        self.watch_fails = watch_fails
        self.opened: list[FakeWatch] = []
        self.watch_attempts = 0

    def watch(self) -> FakeWatch:
        self.watch_attempts += 1
        if self.watch_fails:
            raise ApiError(403, "Forbidden", "cannot watch leases")
        w = FakeWatch(self.store)
        self.opened.append(w)
        return w


class ZeroJitter(random.Random):
    def random(self) -> float:
        return 0.0


def until(cond: Callable[[], bool], timeout: float = 30.0) -> bool:
    """Wait in real time for something another thread does (the timeout only bounds a
    failure: on a busy machine a thread may take seconds to get there)."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


def callbacks() -> LeaderCallbacks:
    return LeaderCallbacks(lambda stop: None, lambda: None)


def elector(store: Store, identity: str, clock: FakeClock) -> LeaderElector:
    return LeaderElector(FakeLock(store, identity), callbacks(), lease_duration=15,
                         renew_deadline=10, retry_period=2, clock=clock)


def test_expiry_is_measured_from_when_we_observed_the_record() -> None:
    clock = FakeClock()
    store = Store()
    a, b = elector(store, "a", clock), elector(store, "b", clock)
    assert a._try_acquire_or_renew() and store.held().holder_identity == "a"
    assert not b._try_acquire_or_renew()
    clock.step(14.9)
    assert not b._try_acquire_or_renew(), "still within the lease as b observed it"
    assert a._try_acquire_or_renew()  # a renews: the record changes
    clock.step(0.5)
    assert not b._try_acquire_or_renew(), "b sees the renewal: its wait starts over"
    clock.step(14.9)
    assert not b._try_acquire_or_renew()
    clock.step(0.2)
    assert b._try_acquire_or_renew()
    assert store.held().holder_identity == "b" and store.held().leader_transitions == 1
    assert not a._try_acquire_or_renew(), "a now sees a fresh holder"
    assert b.get_leader() == "b"


def test_wall_clock_skew_of_the_holder_does_not_matter() -> None:
    clock = FakeClock()
    store = Store()
    a = elector(store, "a", clock)
    # A holder whose clock is far ahead wrote a renewTime in the future: irrelevant.
    store.record = LeaderElectionRecord("other", 15, clock.now() + 3600, clock.now() + 3600)
    store.version = 1
    assert not a._try_acquire_or_renew()
    clock.step(15.1)
    assert a._try_acquire_or_renew()


def test_racing_candidates_only_one_wins() -> None:
    clock = FakeClock()
    store = Store()
    store.record = LeaderElectionRecord("", 1, clock.now(), clock.now())
    a_lock, b_lock = FakeLock(store, "a"), FakeLock(store, "b")
    a_lock.get()
    b_lock.get()
    a_lock.update(LeaderElectionRecord("a", 15))
    with pytest.raises(ApiError) as e:
        b_lock.update(LeaderElectionRecord("b", 15))
    assert e.value.status == 409


def test_renewal_keeps_acquire_time_and_release_frees_the_lease() -> None:
    clock = FakeClock()
    store = Store()
    a, b = elector(store, "a", clock), elector(store, "b", clock)
    assert a._try_acquire_or_renew()
    acquired = store.held().acquire_time
    clock.step(2)
    assert a._try_acquire_or_renew()
    assert store.held().acquire_time == acquired and store.held().renew_time == clock.now()
    assert not b._try_acquire_or_renew()
    assert a.release()
    assert store.held().holder_identity == "" and store.held().lease_duration_seconds == 1
    assert b._try_acquire_or_renew(), "a released lease is free at once"


def test_health_check_fails_when_renewals_stop() -> None:
    clock = FakeClock()
    store = Store()
    a = elector(store, "a", clock)
    assert a._try_acquire_or_renew()
    a._leading = True
    assert a.check(5) is None
    clock.step(20.1)
    assert "failed election to renew leadership" in (a.check(5) or "")


def test_durations_are_validated() -> None:
    store = Store()
    with pytest.raises(ValueError, match="greater than renewDeadline"):
        LeaderElector(FakeLock(store, "a"), callbacks(), lease_duration=5, renew_deadline=5)
    with pytest.raises(ValueError, match="JitterFactor"):
        LeaderElector(FakeLock(store, "a"), callbacks(), lease_duration=15, renew_deadline=2,
                      retry_period=2)


def test_run_leads_until_renewals_fail_for_the_renew_deadline() -> None:
    """On a fake clock, stepped one retry period at a time once the elector waits again: it
    gives up the lead when its renewals have failed for the renew deadline, not before."""
    clock = FakeClock()
    store = Store()
    started, leading_ended, stopped = threading.Event(), threading.Event(), threading.Event()
    leaders: list[str] = []

    def lead(leading_stop: threading.Event) -> None:
        started.set()
        leading_stop.wait()
        leading_ended.set()

    e = LeaderElector(FakeLock(store, "a"),
                      LeaderCallbacks(lead, stopped.set, leaders.append),
                      lease_duration=0.6, renew_deadline=0.4, retry_period=0.05, clock=clock)
    stop = threading.Event()
    t = threading.Thread(target=e.run, args=(stop,))
    t.start()

    def waiting_or_done() -> bool:
        return not t.is_alive() or any(d > clock.monotonic() for d in clock.deadlines())

    try:
        assert started.wait(30) and e.is_leader() and leaders == ["a"]
        assert until(waiting_or_done)  # renewed; sleeping a retry period
        failed_at = clock.monotonic()
        store.fail = True
        while t.is_alive() and clock.monotonic() - failed_at < 2:
            clock.step(0.05)
            assert until(waiting_or_done)
        lost_after = clock.monotonic() - failed_at
        t.join(30)
        assert stopped.is_set() and leading_ended.wait(30) and not e.is_leader()
        # The first failed try, a retry period after the last renewal, starts the renew
        # deadline (0.05 + 0.4); the elector gives up at its end, or one period earlier where
        # the next try would land on it (the float sums of the steps decide which).
        assert 0.4 - 1e-9 <= lost_after <= 0.45 + 1e-9, lost_after
        assert store.held().holder_identity == "a", "a lost lease cannot be released"
    finally:
        stop.set()
        t.join(30)


def test_run_releases_on_stop() -> None:
    store = Store()
    started, stopped = threading.Event(), threading.Event()
    e = LeaderElector(FakeLock(store, "a"),
                      LeaderCallbacks(lambda s: started.set(), stopped.set),
                      lease_duration=3, renew_deadline=2, retry_period=0.05)
    stop = threading.Event()
    t = threading.Thread(target=e.run, args=(stop,))
    t.start()
    assert started.wait(30)
    stop.set()
    t.join(30)
    assert stopped.is_set() and store.held().holder_identity == ""


class Standby:
    """``elector._acquire`` on a thread, as ``run`` calls it."""

    def __init__(self, e: LeaderElector) -> None:
        self.elector = e
        self.stop = threading.Event()
        self.acquired = threading.Event()
        self.result: bool | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.result = self.elector._acquire(self.stop)
        if self.result:
            self.acquired.set()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(30)


def test_standby_wakes_exactly_when_the_observed_lease_expires() -> None:
    clock = FakeClock()
    store = Store()
    a = elector(store, "a", clock)
    lock = WatchableLock(store, "b")
    b = LeaderElector(lock, callbacks(), lease_duration=15, renew_deadline=10, retry_period=2,
                      clock=clock)
    assert a._try_acquire_or_renew()
    sb = Standby(b)
    try:
        assert clock.wait_for_waiters(1) and until(lambda: b._watching)
        assert lock.gets == 1 and b.get_leader() == "a"
        clock.step(14.9)
        assert a._try_acquire_or_renew(), "a renews; b sees it on the watch at 14.9"
        assert until(lambda: b._observed == store.record)
        clock.step(14.9)
        assert not sb.acquired.wait(0.05), "b's lease clock restarted at the renewal"
        assert lock.gets == 1, "no polling while the watch is open"
        clock.step(0.1)  # 14.9 + 15 = 29.9: b's own clock says the renewal has expired
        assert sb.acquired.wait(30), "b did not wake at the expiry"
        assert lock.gets == 2 and clock.monotonic() == pytest.approx(29.9)
        assert store.held().holder_identity == "b" and store.held().leader_transitions == 1
        assert until(lambda: all(w.stopped.is_set() for w in lock.opened))
    finally:
        sb.close()


def test_standby_takes_a_released_lease_at_once() -> None:
    clock = FakeClock()
    store = Store()
    a = elector(store, "a", clock)
    lock = WatchableLock(store, "b")
    b = LeaderElector(lock, callbacks(), lease_duration=15, renew_deadline=10, retry_period=2,
                      clock=clock)
    assert a._try_acquire_or_renew()
    sb = Standby(b)
    try:
        assert clock.wait_for_waiters(1) and until(lambda: b._watching)
        assert a.release()
        assert sb.acquired.wait(30), "the watched release did not wake the standby"
        assert clock.monotonic() == 0 and store.held().holder_identity == "b"
    finally:
        sb.close()


def test_standby_that_cannot_watch_polls_and_still_wakes_at_the_expiry() -> None:
    clock = FakeClock()
    store = Store()
    a = elector(store, "a", clock)
    lock = WatchableLock(store, "b", watch_fails=True)
    b = LeaderElector(lock, callbacks(), lease_duration=15, renew_deadline=10, retry_period=2,
                      clock=clock, rng=ZeroJitter())
    assert a._try_acquire_or_renew()
    sb = Standby(b)
    try:
        # The watch was refused (403): never tried again, only the loop waits on the clock.
        assert until(lambda: not any(th.name.startswith("leader-watch-")
                                     for th in threading.enumerate()))
        assert clock.wait_for_waiters(1) and lock.gets == 1
        clock.step(2)
        assert until(lambda: lock.gets == 2), "no poll after a retry period"
        assert clock.wait_for_waiters(1)
        clock.step(12.9)  # 14.9: one more poll, which finds the lease still held
        assert until(lambda: lock.gets == 3) and clock.wait_for_waiters(1)
        assert not sb.acquired.is_set()
        clock.step(0.1)  # 15: the expiry comes before the next poll (16.9)
        assert sb.acquired.wait(30) and lock.gets == 4
        assert store.held().holder_identity == "b"
        assert lock.watch_attempts == 1
    finally:
        sb.close()


def test_standby_stops_promptly_and_closes_its_watch() -> None:
    clock = FakeClock()
    store = Store()
    a = elector(store, "a", clock)
    lock = WatchableLock(store, "b")
    b = LeaderElector(lock, callbacks(), lease_duration=15, renew_deadline=10, retry_period=2,
                      clock=clock)
    assert a._try_acquire_or_renew()
    sb = Standby(b)
    assert clock.wait_for_waiters(1) and until(lambda: b._watching)
    # The clock never moves: only the stop can end the standby's wait.
    sb.close()
    assert not sb.thread.is_alive() and sb.result is False
    assert until(lambda: all(w.stopped.is_set() for w in lock.opened))
    assert until(lambda: not store.watchers)


def test_run_takes_over_an_abandoned_lease_with_a_watch_that_keeps_ending() -> None:
    store = Store()
    store.record = LeaderElectionRecord("gone", 1)
    store.version = 1

    class EndingLock(WatchableLock):
        def watch(self) -> FakeWatch:
            w = super().watch()
            w.stop()  # the server closes every watch at once: b must still take over
            return w

    clock = FakeClock()
    started = threading.Event()
    e = LeaderElector(EndingLock(store, "b"), LeaderCallbacks(lambda s: started.set(),
                                                               lambda: None),
                      lease_duration=0.6, renew_deadline=0.4, retry_period=0.05, clock=clock)
    stop = threading.Event()
    t = threading.Thread(target=e.run, args=(stop,))

    def settled() -> bool:
        """Led, or both the standby loop and the watch thread's backoff wait on the clock."""
        return started.is_set() or sum(d > clock.monotonic() for d in clock.deadlines()) >= 2

    t.start()
    try:
        # The first attempt, at 0, sees "gone" holding the lease: it expires at 0.6. Step the
        # clock 10 ms at a time, each once the threads wait again, until b leads.
        assert until(settled)
        while not started.is_set() and clock.monotonic() < 2:
            clock.step(0.01)
            assert until(settled)
        # At the expiry (0.6, or the next step, as the float sums fall), not before, and
        # not at some later poll.
        assert 0.6 - 1e-9 <= clock.monotonic() <= 0.61 + 1e-9, clock.monotonic()
        assert store.held().holder_identity == "b"
    finally:
        stop.set()
        t.join(30)


def test_micro_time_round_trip() -> None:
    t = 1_700_000_000.123456
    s = format_micro_time(t)
    assert s == "2023-11-14T22:13:20.123456Z"
    assert parse_timestamp(s) == pytest.approx(t)
    assert parse_timestamp("garbage") is None and parse_timestamp(None) is None


def test_flags_with_upstream_names_and_defaults() -> None:
    defaults = LeaderElectionConfiguration(resource_name="koord-scheduler",
                                           resource_namespace="koordinator-system")
    p = argparse.ArgumentParser()
    add_leader_election_flags(p, defaults)
    assert config_from_args(p.parse_args([]), defaults) == defaults
    assert defaults.leader_elect and defaults.lease_duration == 15
    assert (defaults.renew_deadline, defaults.retry_period) == (10, 2)
    assert defaults.resource_lock == "leases"
    args = p.parse_args(["--leader-elect=false", "--leader-elect-lease-duration=3s",
                         "--leader-elect-renew-deadline", "2s",
                         "--leader-elect-retry-period=500ms",
                         "--leader-elect-resource-namespace=ns"])
    got = config_from_args(args, defaults)
    assert got == replace(defaults, leader_elect=False, lease_duration=3, renew_deadline=2,
                          retry_period=0.5, resource_namespace="ns")
    assert config_from_args(p.parse_args(["--leader-elect"]), replace(
        defaults, leader_elect=False)).leader_elect is True
    # Flags not given keep the configuration file's values.
    from_file = replace(defaults, lease_duration=30, renew_deadline=20)
    assert config_from_args(p.parse_args(["--leader-elect-retry-period=1s"]), from_file) == \
        replace(from_file, retry_period=1)
    with pytest.raises(SystemExit):
        p.parse_args(["--leader-elect-lease-duration=15"])
    assert "only 'leases'" in " ".join(replace(defaults, resource_lock="endpoints").validate())
    assert replace(defaults, resource_name="").validate() == [
        "leaderElection.resourceName: Required value"]
    help_text = " ".join(p.format_help().split())
    assert "(default 15s)" in help_text and '(default "koordinator-' in help_text
