"""Leader election between real processes on the embedded API server: never two leaders; a
SIGKILLed leader is replaced within the lease duration (plus one jittered retry); a SIGTERMed
leader releases the lease so the standby takes over at once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pkg.leaderelection.candidate as candidate
from pkg.client.resources import LEASES
from pkg.client.rest import Client
from pkg.leaderelection.leaderelection import JITTER_FACTOR
from test.apiserver import ServerHandle, start

REPO_ROOT = Path(candidate.__file__).absolute().parents[2]
LEASE, RENEW, RETRY = 3.0, 2.0, 0.5
# The standby's lease clock starts when it sees the leader's last renewal, at its next poll
# (up to RETRY × (1 + 1.2 jitter) after the renewal), and it notices the expiry at the poll
# after that: so the takeover comes at most LEASE + 2 × 2.2 × RETRY after the kill.
TAKEOVER_BOUND = LEASE + 2 * RETRY * (1 + JITTER_FACTOR) + 0.5


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
        t = time.time()
        self.proc.send_signal(sig)
        self.proc.wait(10)
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


def test_standby_takes_over_after_sigkill_and_never_overlaps(srv: ServerHandle,
                                                             spawn: Any) -> None:
    a = spawn("a", "kill-test")
    assert a.wait_event("started_leading"), "the first candidate never led"
    b = spawn("b", "kill-test")
    assert b.wait_event("new_leader")
    time.sleep(LEASE + 1.0)  # longer than a lease: a keeps renewing, b must stay standby
    assert not b.has("started_leading"), "two leaders at once"
    assert holder(srv, "kill-test")["holderIdentity"] == "a"
    killed_at = a.kill(signal.SIGKILL)
    took = b.wait_event("started_leading", timeout=TAKEOVER_BOUND + 5)
    assert took is not None, "the standby never took over"
    delay = took["t"] - killed_at
    assert 0 < delay <= TAKEOVER_BOUND, f"takeover after {delay:.2f}s"
    # b only took over once a's last renewal had expired.
    last_a = max(ev["t"] for ev in a.events if ev["event"] in ("started_leading", "leading"))
    assert took["t"] >= last_a + LEASE - 2 * RETRY
    spec = holder(srv, "kill-test")
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1
    assert spec["leaseDurationSeconds"] == 3


def test_graceful_stop_releases_the_lease(srv: ServerHandle, spawn: Any) -> None:
    a = spawn("a", "release-test")
    assert a.wait_event("started_leading")
    b = spawn("b", "release-test")
    assert b.wait_event("new_leader")
    stopped_at = a.kill(signal.SIGTERM)
    assert a.proc.returncode == 0 and a.has("stopped_leading")
    took = b.wait_event("started_leading", timeout=LEASE + 5)
    assert took is not None
    assert took["t"] - stopped_at < LEASE - 0.5, "the released lease was not taken at once"
    assert holder(srv, "release-test")["holderIdentity"] == "b"
