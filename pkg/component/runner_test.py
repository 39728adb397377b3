"""The component runner: start in registration order and stop in reverse within the grace
period, tasks on named threads, readiness after the informers synced, build and start failures,
and exit statuses."""

from __future__ import annotations

import argparse
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest

from pkg.client.informers.factory import InformerKey
from pkg.component.runner import Hooks, Runner
from pkg.component.testing import Running, wait_until
from pkg.leaderelection.config import LeaderElectionConfiguration
from pkg.server.server import Server


@dataclass
class Recorder:
    """What happened, in order, across runnables and tasks."""

    events: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, event: str) -> None:
        with self.lock:
            self.events.append(event)

    def runnable(self, name: str) -> Hooks:
        return Hooks(lambda: self.note(f"start {name}"), lambda: self.note(f"stop {name}"))

    def task(self, name: str) -> Callable[[threading.Event], None]:
        def loop(stop: threading.Event) -> None:
            self.note(f"run {threading.current_thread().name}")
            stop.wait()
            self.note(f"end {name}")
        return loop


def test_starts_in_registration_order_and_stops_in_reverse() -> None:
    rec = Recorder()

    def build(_: argparse.Namespace, r: Runner) -> None:
        r.add("a", rec.runnable("a"))
        r.add("leader", rec.runnable("leader"), leader=True)  # no election: after the rest
        r.task("loop", rec.task("loop"))
        r.add("b", rec.runnable("b"))

    running = Running(build)
    wait_until(lambda: "start leader" in rec.events)
    running.stop.set()
    assert running.join() == 0
    assert rec.events == ["start a", "run loop", "start b", "start leader",
                          "stop leader", "stop b", "end loop", "stop a"]


def test_a_stop_past_the_grace_period_is_named_and_the_rest_still_stop(
        capsys: pytest.CaptureFixture[str]) -> None:
    rec = Recorder()
    stuck = threading.Event()

    def stop_stuck() -> None:
        stuck.wait()

    def build(_: argparse.Namespace, r: Runner) -> None:
        r.add("first", rec.runnable("first"))
        r.add("stuck", Hooks(on_stop=stop_stuck))

    running = Running(build, grace_period=0.3)
    wait_until(lambda: "start first" in rec.events)
    stopped = time.monotonic()
    running.stop.set()
    # The stuck hook never returns: run() returns only because the grace period ended it
    # (well before the 5 s default, however slow the machine).
    assert running.join(timeout=30) == 1
    assert time.monotonic() - stopped < 5.0
    assert rec.events == ["start first", "stop first"]
    assert "stuck did not stop within the grace period of 0.3s" in capsys.readouterr().err
    stuck.set()


def test_a_failing_task_is_named_and_stops_the_component(
        capsys: pytest.CaptureFixture[str]) -> None:
    rec = Recorder()

    def broken(_stop: threading.Event) -> None:
        raise KeyError("no such node")

    def build(_: argparse.Namespace, r: Runner) -> None:
        r.add("a", rec.runnable("a"))
        r.task("collector", broken)

    running = Running(build)
    assert running.join() == 1
    assert rec.events == ["start a", "stop a"]
    err = capsys.readouterr().err
    assert "task collector failed: 'no such node'" in err
    assert "Traceback" in err


def test_a_failed_start_stops_what_started_and_starts_nothing_more(
        capsys: pytest.CaptureFixture[str]) -> None:
    rec = Recorder()

    def refuse() -> None:
        raise OSError("address already in use")

    def build(_: argparse.Namespace, r: Runner) -> None:
        r.add("a", rec.runnable("a"))
        r.add("webhook", Hooks(on_start=refuse))
        r.add("b", rec.runnable("b"))

    assert Running(build).join() == 1
    assert rec.events == ["start a", "stop a"]
    assert "failed to start webhook: address already in use" in capsys.readouterr().err


@pytest.mark.parametrize("setup_error", ["", "failed to new daemon"])
def test_a_build_error_exits_1_with_one_clear_line(
        setup_error: str, capsys: pytest.CaptureFixture[str]) -> None:
    def build(_: argparse.Namespace, r: Runner) -> None:
        raise ValueError("NODE_NAME env is empty")

    assert Running(build, setup_error=setup_error).join() == 1
    prefix = setup_error or "unable to set up test-component"
    err = capsys.readouterr().err
    assert f"{prefix}: NODE_NAME env is empty" in err
    assert "Traceback" not in err


def test_a_name_registered_twice_is_a_build_error(capsys: pytest.CaptureFixture[str]) -> None:
    def build(_: argparse.Namespace, r: Runner) -> None:
        r.add("a", Hooks())
        r.task("a", lambda stop: None)

    assert Running(build).join() == 1
    assert "'a' is registered twice" in capsys.readouterr().err


def test_invalid_leader_election_is_a_build_error(capsys: pytest.CaptureFixture[str]) -> None:
    def build(_: argparse.Namespace, r: Runner) -> None:
        r.leader_election(LeaderElectionConfiguration(
            lease_duration=1, renew_deadline=2, resource_name="x"))

    assert Running(build).join() == 1
    assert "leaderElection.leaseDuration: must be greater than renewDeadline" in \
        capsys.readouterr().err


def test_leader_election_without_a_client_is_a_build_error(
        capsys: pytest.CaptureFixture[str]) -> None:
    def build(_: argparse.Namespace, r: Runner) -> None:
        r.leader_election(LeaderElectionConfiguration(resource_name="x"))

    assert Running(build).join() == 1
    assert "leader election needs the client: connect() first" in capsys.readouterr().err


KEY = InformerKey("", "v1", "pods", "", "", "", False)


class FakeFactory:
    """An informer factory whose single cache syncs when the test says so."""

    def __init__(self) -> None:
        self.started = False
        self.synced = threading.Event()

    def start(self) -> None:
        self.started = True

    def shutdown(self) -> None:
        self.started = False

    def wait_for_cache_sync(self, timeout: float | None = None,
                            stop: threading.Event | None = None) -> dict[InformerKey, bool]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.started and not self.synced.is_set():
            if (stop is not None and stop.is_set()) or \
                    (deadline is not None and time.monotonic() >= deadline):
                break
            time.sleep(0.01)
        return {KEY: self.started and self.synced.is_set()}


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


@pytest.fixture
def served() -> Iterator[tuple[FakeFactory, Running, list[Server]]]:
    factory = FakeFactory()
    servers: list[Server] = []

    def build(_: argparse.Namespace, r: Runner) -> None:
        servers.append(r.serve("127.0.0.1:0"))
        r.informers(factory)

    running = Running(build)
    wait_until(lambda: bool(servers) and factory.started)
    yield factory, running, servers
    running.stop.set()
    assert running.join() == 0


def test_ready_only_after_the_informers_synced(
        served: tuple[FakeFactory, Running, list[Server]]) -> None:
    factory, _, [server] = served
    assert _get(server.url + "/healthz") == (200, "ok")
    status, body = _get(server.url + "/readyz?verbose")
    assert status == 500
    assert "[-]informer-sync failed: caches not synced: pods.v1" in body
    factory.synced.set()
    assert _get(server.url + "/readyz") == (200, "ok")


def test_leader_bound_runnables_wait_for_their_caches() -> None:
    rec = Recorder()
    factory = FakeFactory()

    def build(_: argparse.Namespace, r: Runner) -> None:
        r.informers(factory, leader=True)
        r.add("controllers", rec.runnable("controllers"), leader=True)

    running = Running(build)
    wait_until(lambda: factory.started)
    time.sleep(0.1)
    assert rec.events == []
    factory.synced.set()
    wait_until(lambda: rec.events == ["start controllers"])
    running.stop.set()
    assert running.join() == 0
    assert not factory.started


def test_a_stop_while_waiting_for_caches_starts_nothing_more() -> None:
    rec = Recorder()
    factory = FakeFactory()

    def build(_: argparse.Namespace, r: Runner) -> None:
        r.informers(factory, leader=True)
        r.add("controllers", rec.runnable("controllers"), leader=True)

    running = Running(build, grace_period=2)
    wait_until(lambda: factory.started)
    running.stop.set()
    assert running.join() == 0
    assert rec.events == []
