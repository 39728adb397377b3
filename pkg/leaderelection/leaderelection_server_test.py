"""Leader election between real processes on the embedded API server: never two leaders; a
SIGKILLed leader is replaced within the lease duration (the standby watches the Lease and wakes
exactly when the last renewal it saw expires by its own clock), and not before; a SIGTERMed
leader releases the lease so the standby takes over at once. In process: the standby follows
the Lease on its watch (no polling) and closes the watch once it leads."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

import pkg.leaderelection.candidate as candidate
from api.meta import parse_timestamp
from pkg.client.resources import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    LEASES,
    SERVICE_ACCOUNTS,
)
from pkg.client.rest import Client
from pkg.leaderelection.leaderelection import LeaderCallbacks, LeaderElector
from pkg.leaderelection.resourcelock import LeaderElectionRecord, LeaseLock
from pkg.util.clock import FakeClock
from test.apiserver import ServerHandle, kubeconfig, start

REPO_ROOT = Path(candidate.__file__).absolute().parents[2]
LEASE, RENEW, RETRY = 3.0, 2.0, 0.5
# A renewal a sends just before the kill lands (the server applies it, and the standby sees
# it, a few ms after the kill): the last renewal recorded may be this much after the kill.
TAKEOVER_TOLERANCE = 0.3


class Candidate:
    def __init__(self, srv: ServerHandle, identity: str, lock: str) -> None:
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep +
                   os.environ.get("PYTHONPATH", ""))
        self.identity = identity
        self.events: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pkg.leaderelection.candidate",
             "--kubeconfig", srv.kubeconfig, "--identity", identity,
             f"--leader-elect-lease-duration={LEASE:g}s",
             f"--leader-elect-renew-deadline={RENEW:g}s",
             f"--leader-elect-retry-period={RETRY * 1000:g}ms",
             f"--leader-elect-resource-name={lock}",
             "--leader-elect-resource-namespace=default"],
            cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            ev = json.loads(line)
            with self._cond:
                self.events.append(ev)
                self._cond.notify_all()

    def wait_event(self, name: str, timeout: float = 20.0) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for ev in self.events:
                    if ev["event"] == name:
                        return ev
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)

    def has(self, name: str) -> bool:
        with self._cond:
            return any(ev["event"] == name for ev in self.events)

    def kill(self, sig: int) -> float:
        """Signal the process and wait for it to exit; the time the signal was sent."""
        t = time.time()
        self.proc.send_signal(sig)
        self.proc.wait(10)
        self.exited_at = time.time()
        return t

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture(scope="module")
def srv() -> Iterator[ServerHandle]:
    with start() as s:
        yield s


@pytest.fixture
def spawn(srv: ServerHandle) -> Iterator[Any]:
    made: list[Candidate] = []

    def make(identity: str, lock: str) -> Candidate:
        c = Candidate(srv, identity, lock)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


def holder(srv: ServerHandle, lock: str) -> dict[str, Any]:
    return Client.from_kubeconfig(srv.kubeconfig).get(LEASES, lock, "default")["spec"]


class LeaseRecorder:
    """Every version of a Lease (its spec) as the API server stored it, from a watch."""

    def __init__(self, srv: ServerHandle, lock: str) -> None:
        self.specs: list[dict[str, Any]] = []
        self._stream = Client.from_kubeconfig(srv.kubeconfig).watch(
            LEASES, "default", field_selector=f"metadata.name={lock}")
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for ev in self._stream:
            if ev["type"] in ("ADDED", "MODIFIED"):
                self.specs.append(ev["object"]["spec"])

    def close(self) -> None:
        self._stream.stop()
        self._thread.join(5)


def test_standby_takes_over_after_sigkill_and_never_overlaps(srv: ServerHandle,
                                                             spawn: Any) -> None:
    a = spawn("a", "kill-test")
    assert a.wait_event("started_leading"), "the first candidate never led"
    leases = LeaseRecorder(srv, "kill-test")
    b = spawn("b", "kill-test")
    assert b.wait_event("new_leader")
    time.sleep(LEASE + 1.0)  # longer than a lease: a keeps renewing, b must stay standby
    assert not b.has("started_leading"), "two leaders at once"
    assert holder(srv, "kill-test")["holderIdentity"] == "a"
    time.sleep(random.uniform(0, RETRY))  # kill at any point of a's renewal cycle
    killed_at = a.kill(signal.SIGKILL)
    took = b.wait_event("started_leading", timeout=30)
    assert took is not None, "the standby never took over"
    leases.close()
    delay = took["t"] - killed_at
    # Never two leaders: b started only after a was dead ...
    assert took["t"] > a.exited_at
    # ... and only once a full lease had passed since a's last renewal (renewTime is a's
    # clock, the same machine's): b did not cut a's lease short.
    a_renewals = [parse_timestamp(sp["renewTime"]) for sp in leases.specs
                  if sp.get("holderIdentity") == "a"]
    assert a_renewals, "no renewal of a recorded"
    last_renewal = max(t for t in a_renewals if t is not None)
    assert last_renewal < killed_at + TAKEOVER_TOLERANCE
    since_renewal = took["t"] - last_renewal
    print(f"\ntakeover {delay:.3f}s after SIGKILL, {since_renewal:.3f}s after a's last "
          f"renewal (lease {LEASE:g}s)")
    assert since_renewal >= LEASE - 0.01, f"took over {since_renewal:.3f}s after a renewal"
    # ... and at that expiry, not a lease later. (How exactly the standby wakes at the expiry,
    # which wall-clock latency on a busy machine would blur, is pinned on a fake clock:
    # leaderelection_test.test_standby_wakes_exactly_when_the_observed_lease_expires.)
    assert since_renewal < 2 * LEASE, f"took over {since_renewal:.3f}s after a renewal"
    spec = holder(srv, "kill-test")
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1
    assert spec["leaseDurationSeconds"] == 3


def test_graceful_stop_releases_the_lease(srv: ServerHandle, spawn: Any) -> None:
    a = spawn("a", "release-test")
    assert a.wait_event("started_leading")
    leases = LeaseRecorder(srv, "release-test")
    b = spawn("b", "release-test")
    assert b.wait_event("new_leader")
    stopped_at = a.kill(signal.SIGTERM)
    assert a.proc.returncode == 0 and a.has("stopped_leading")
    took = b.wait_event("started_leading", timeout=30)
    assert took is not None
    leases.close()
    # The standby sees the release on its watch and takes the lease at once: before a's
    # last renewal would have expired (~2.5 s after the stop, a renewing every 0.5 s), which
    # is when it would take it otherwise. A bound on what the standby did, not on how fast
    # a busy machine let it do it.
    a_renewals = [parse_timestamp(sp["renewTime"]) for sp in leases.specs
                  if sp.get("holderIdentity") == "a"]
    assert a_renewals, "no renewal of a recorded"
    last_renewal = max(t for t in a_renewals if t is not None)
    print(f"\ntakeover {took['t'] - stopped_at:.3f}s after SIGTERM, "
          f"{last_renewal + LEASE - took['t']:.3f}s before a's lease would have expired")
    assert took["t"] < last_renewal + LEASE, "the released lease was not taken at once"
    assert holder(srv, "release-test")["holderIdentity"] == "b"


class CountingLeaseLock(LeaseLock):
    """A LeaseLock that counts its reads (the watch, not polling, must bring the news)."""

    gets = 0

    def get(self) -> LeaderElectionRecord | None:
        self.gets += 1
        return super().get()


def _until(cond: Callable[[], bool], timeout: float = 30.0) -> bool:
    """Wait in real time for what another thread does; the timeout only bounds a failure."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_standby_in_process_watches_the_lease_until_it_leads(srv: ServerHandle) -> None:
    """LeaseLock.watch against the server: the standby sees renewals on it (no polling), takes
    a released lease at once, and closes its watch when it leads.

    Both electors run on a FakeClock that only the test moves, so the standby's own timers
    (its poll every retry period, the expiry of the lease it observed) fire only where the
    test steps the clock past them: a renewal or takeover with the clock standing still is
    the watch's doing, however slowly a busy machine runs the threads."""
    client = Client.from_kubeconfig(srv.kubeconfig, qps=-1)
    clock = FakeClock()
    kw: dict[str, Any] = {"lease_duration": LEASE, "renew_deadline": RENEW,
                          "retry_period": RETRY, "clock": clock}
    a = LeaderElector(LeaseLock(client, "default", "inproc-test", "a"),
                      LeaderCallbacks(lambda s: None, lambda: None), **kw)
    lock_b = CountingLeaseLock(client, "default", "inproc-test", "b")
    started = threading.Event()
    b = LeaderElector(lock_b, LeaderCallbacks(lambda s: started.set(), lambda: None), **kw)
    assert a._try_acquire_or_renew()

    def seen(renewal: LeaderElectionRecord) -> bool:
        got = b._observed
        return (got is not None and got.holder_identity == "a"
                and got.renew_time is not None and renewal.renew_time is not None
                # (the Lease keeps microseconds)
                and abs(got.renew_time - renewal.renew_time) <= 2e-6)

    def waits_for(expiry: float) -> bool:
        return clock.deadlines() == [pytest.approx(expiry)]

    stop = threading.Event()
    t = threading.Thread(target=b.run, args=(stop,), daemon=True)
    t.start()
    try:
        # The watch can open before the standby's first attempt has read the lease; once it
        # is open the standby waits for the expiry alone (no poll before it).
        assert _until(lambda: b._watching and b.get_leader() == "a"
                      and waits_for(LEASE)), clock.deadlines()
        for i in range(1, 4):
            clock.step(RETRY)  # short of the expiry: the standby's clock has no reason to act
            assert a._try_acquire_or_renew()
            wrote = a._observed
            assert wrote is not None
            assert _until(partial(seen, wrote)), "the renewal was not seen on the watch"
            # Seen the moment it arrived: the expiry moves to a full lease after it.
            assert _until(partial(waits_for, i * RETRY + LEASE)), clock.deadlines()
        assert lock_b.gets == 1 and not started.is_set()
        assert a.release()
        # The clock stands still: only the release seen on the watch can wake the standby.
        assert started.wait(30), "the released lease was not taken at once"
        assert holder(srv, "inproc-test")["holderIdentity"] == "b"
        assert _until(lambda: not any(
            th.name.startswith(("leader-watch-", "leader-stop-"))
            for th in threading.enumerate())), [th.name for th in threading.enumerate()]
    finally:
        stop.set()
        t.join(30)
        client.close()


def test_lease_lock_watches_only_where_rbac_grants_it(tmp_path: Path) -> None:
    """Under a role like upstream's scheduler role (leases get/create/update, no watch) the
    lock declines to watch without a denied request, and the elector polls; the admin may."""
    with start(random_token=True) as srv:
        admin = Client.from_kubeconfig(srv.kubeconfig)
        admin.create(SERVICE_ACCOUNTS, {"metadata": {"name": "sched"}}, "default")
        admin.create(CLUSTER_ROLES, {"metadata": {"name": "lease-rw"}, "rules": [{
            "apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
            "verbs": ["create", "get", "update"]}]})
        admin.create(CLUSTER_ROLE_BINDINGS, {
            "metadata": {"name": "lease-rw"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "lease-rw"},
            "subjects": [{"kind": "ServiceAccount", "name": "sched", "namespace": "default"}]})
        sa = Client.from_kubeconfig(kubeconfig.for_service_account(
            srv.kubeconfig, "default", "sched", str(tmp_path / "sched.kubeconfig")))
        try:
            lock = LeaseLock(sa, "default", "rbac-test", "a")
            assert not lock.may_watch()
            with pytest.raises(PermissionError, match="RBAC grants no watch on lease "
                                                      "default/rbac-test"):
                lock.watch()
            assert LeaseLock(admin, "default", "rbac-test", "b").may_watch()
            assert not [s for m in srv.server.handlers.authorizer.denied.collect()
                        for s in m.samples]  # nothing was denied
        finally:
            sa.close()
            admin.close()
