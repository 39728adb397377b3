"""The component runner: how every Koordinator process starts and stops.

Corresponds to controller-runtime's ``pkg/manager`` (runnables with and without leader
election, probes, a shutdown bounded by ``GracefulShutdownTimeout``), through which
koord-manager starts upstream, and to what ``cmd/kube-scheduler/app`` and ``cmd/koordlet`` do
by hand. A component's ``main.py`` holds its flags and a build function::

    def build(args: argparse.Namespace, runner: Runner) -> None:
        runner.leader_election(config_from_args(args, DEFAULTS))
        client = runner.connect(options_from_args(args, user_agent="koord-example"))
        runner.serve(args.metrics_addr)
        factory = SharedInformerFactory(client)
        reconciler = Reconciler(client, factory)
        runner.informers(factory, leader=True)
        runner.task("reconciler", reconciler.run, leader=True)

    COMPONENT = Component("koord-example", build_parser, build)

    def main(argv: list[str] | None = None) -> int:
        return run(COMPONENT, argv)

``run`` parses the flags (argparse exits 2 on a bad one, 0 after ``--help``; the parser must
have ``pkg.log``'s flags), sets up logging, installs the SIGTERM/SIGINT handlers (from the main
thread only; ``signals.handle_signals``) and calls the build function. An exception from it ends
the process with status 1 and the line ``<setup_error>: <error>``. Then:

1. what is registered without ``leader=True`` starts in registration order. Servers come from
   ``serve``: their ``/readyz`` check ``informer-sync`` fails until each informer factory
   registered without ``leader`` has synced;
2. with leader election the runner campaigns for the Lease; once it leads (at once without an
   election) the leader-bound informer factories start and their caches are waited for (up to
   ``CACHE_SYNC_TIMEOUT``), then the leader-bound runnables and tasks start in order;
3. it runs until SIGTERM or SIGINT (or the caller's ``stop``), a task raising, or the lease
   being lost;
4. it stops in reverse start order within ``grace_period``: the leader-bound runnables, then
   the election (which releases the Lease, so a standby takes over at once), then the rest.
   What did not stop in time is named in the log. A second signal exits at once with status 1.

The exit status is 0 after a requested stop and 1 when startup failed, a task raised, the lease
was lost (as controller-runtime, so that the replica restarts as a standby) or something did not
stop within the grace period.
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from prometheus_client import REGISTRY, CollectorRegistry

from pkg import log as klog
from pkg.client.config import ClientOptions
from pkg.client.informers.factory import InformerKey
from pkg.client.rest import Client
from pkg.component.signals import handle_signals
from pkg.leaderelection.config import LeaderElectionConfiguration, new_leader_elector
from pkg.leaderelection.leaderelection import LeaderElector
from pkg.server.server import Server, leader_election_check
from pkg.util import flags

# Well inside the 30 s Kubernetes gives a pod between SIGTERM and SIGKILL, so what did not stop
# is logged, and the status set, before the kill.
DEFAULT_GRACE_PERIOD = 10.0
# controller-runtime's CacheSyncTimeout.
CACHE_SYNC_TIMEOUT = 120.0


class Runnable(Protocol):
    """Something started and stopped in order: a server, a webhook, a set of controllers."""

    def start(self) -> None:
        """Start and return. Raising ends startup (status 1). A start that has to wait (for a
        cache) gives up once ``Runner.stopping`` is set."""

    def stop(self) -> None:
        """Stop and return; the runner waits for it until the grace period ends."""


class Task(Protocol):
    """A loop that the runner runs on a thread named after it; it returns once ``stop`` is
    set. Raising ends the component (status 1)."""

    def __call__(self, stop: threading.Event, /) -> None: ...


class InformerFactory(Protocol):
    """What the runner needs of a ``SharedInformerFactory``."""

    def start(self) -> None: ...

    def shutdown(self) -> None: ...

    def wait_for_cache_sync(self, timeout: float | None = None,
                            stop: threading.Event | None = None) -> Mapping[InformerKey, bool]:
        ...


class Build(Protocol):
    """A component's build function: connects, and registers what the component runs."""

    def __call__(self, args: argparse.Namespace, runner: Runner, /) -> None: ...


@dataclass(frozen=True)
class Component:
    """What a component provides: its name (the binary's, also its logger's), its flags and
    its build function. ``setup_error`` begins the line that reports a failed build."""

    name: str
    parser: Callable[[], argparse.ArgumentParser]
    build: Build
    setup_error: str = ""

    def parse_args(self, argv: Sequence[str]) -> argparse.Namespace:
        """The flags, Go's single-dash long form (``-addr=:9316``) included."""
        parser = self.parser()
        return parser.parse_args(flags.go_style(parser, argv))


def _nothing() -> None:
    pass


@dataclass(frozen=True)
class Hooks:
    """A runnable from two functions, for what has no object of its own to start or stop."""

    on_start: Callable[[], None] = _nothing
    on_stop: Callable[[], None] = _nothing

    def start(self) -> None:
        self.on_start()

    def stop(self) -> None:
        self.on_stop()


@dataclass(frozen=True)
class _Entry:
    name: str
    runnable: Runnable


class _TaskThread:
    """A task on a daemon thread (a task that ignores its stop cannot hold the process)."""

    def __init__(self, name: str, task: Task,
                 failed: Callable[[str, Exception], None]) -> None:
        self._task = task
        self._failed = failed
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        try:
            self._task(self._stop)
        except Exception as err:  # noqa: BLE001 - reported with the task's name, then we stop
            self._failed(self._thread.name, err)


class Runner:
    """What a build function registers with; created by ``run``."""

    def __init__(self, name: str, stopping: threading.Event, grace_period: float) -> None:
        self.name = name
        # Set when the component is to stop: a signal, the caller, a failure, a lost lease.
        self.stopping = stopping
        self.grace_period = grace_period
        self._log = logging.getLogger(name)
        self._client: Client | None = None
        self._election: LeaderElectionConfiguration | None = None
        self._health: list[Server] = []
        self._ready_after: list[InformerFactory] = []
        self._names: set[str] = set()
        self._main: list[_Entry] = []
        self._leader: list[_Entry] = []
        # Start and shutdown race when a signal or a lost lease comes while the leader-bound
        # part starts on the election's thread.
        self._lock = threading.Lock()
        self._starting = ""
        self._closing = False
        self._started: list[_Entry] = []
        self._leading: list[_Entry] = []
        self._failed = False
        self._release = threading.Event()  # ends the election, giving the lease back

    # -- what a build function calls ----------------------------------------------------------

    def connect(self, options: ClientOptions) -> Client:
        """The component's API client; leader election uses it too."""
        self._client = Client.from_options(options)
        return self._client

    def serve(self, address: str, *, name: str = "server",
              registry: CollectorRegistry = REGISTRY, health: bool = True,
              metrics: bool = True) -> Server:
        """An HTTP server on ``address``, registered as ``name`` like any runnable (register it
        first to answer probes while the rest starts). With ``health`` it has the runner's
        checks: healthz ``leaderElection`` under an election, readyz ``informer-sync``."""
        server = Server(address, registry=registry, health=health, metrics=metrics)
        self.add(name, server)
        if health:
            server.add_readyz_check("informer-sync", self._informers_synced)
            self._health.append(server)
        return server

    def informers(self, factory: InformerFactory, *, name: str = "informers",
                  leader: bool = False) -> None:
        """Start ``factory`` in order and shut it down in reverse. Without ``leader``, the
        servers are not ready before its caches have synced; with it, it starts when leading
        and the leader-bound runnables after it wait for its caches (up to
        ``CACHE_SYNC_TIMEOUT``: a controller checks its own caches before it starts)."""

        def start() -> None:
            factory.start()
            if leader:
                self._wait_for_caches(name, factory)

        self.add(name, Hooks(start, factory.shutdown), leader=leader)
        if not leader:
            self._ready_after.append(factory)

    def add(self, name: str, runnable: Runnable, *, leader: bool = False) -> None:
        """Start ``runnable`` in registration order (``leader``: only while leading) and stop
        it in reverse."""
        if name in self._names:
            raise ValueError(f"{name!r} is registered twice")
        self._names.add(name)
        (self._leader if leader else self._main).append(_Entry(name, runnable))

    def task(self, name: str, task: Task, *, leader: bool = False) -> None:
        """Run ``task`` on a thread named ``name``, started and stopped in order as ``add``."""
        self.add(name, _TaskThread(name, task, self._task_failed), leader=leader)

    def leader_election(self, config: LeaderElectionConfiguration) -> None:
        """Start what is registered with ``leader=True`` only once holding the Lease that
        ``config`` names (at once when ``config.leader_elect`` is off). Raises ValueError when
        ``config`` is invalid."""
        problems = config.validate()
        if problems:
            raise ValueError("; ".join(problems))
        self._election = config if config.leader_elect else None

    # -- running ------------------------------------------------------------------------------

    def _run(self, elector: LeaderElector | None) -> int:
        election: threading.Thread | None = None
        try:
            self._start(self._main, self._started)
            if elector is None:
                self._start_leading()
            elif not self.stopping.is_set():
                self._log.info("attempting to acquire leader lease %s (identity %s)",
                               elector.name, elector.identity)
                election = threading.Thread(target=elector.run, args=(self._release,),
                                            name="leader-election", daemon=True)
                election.start()
            self.stopping.wait()
        finally:
            self._log.info("stopping %s", self.name)
            in_time = self._shutdown(election)
        return 1 if self._failed or not in_time else 0

    def _new_elector(self) -> LeaderElector | None:
        """The elector, when the build asked for an election (after it connected)."""
        if self._election is None:
            return None
        if self._client is None:
            raise RuntimeError("leader election needs the client: connect() first")
        elector = new_leader_elector(self._client, self._election,
                                     lambda _leading: self._start_leading(),
                                     self._stopped_leading)
        for server in self._health:
            server.add_healthz_check("leaderElection", leader_election_check(elector))
        return elector

    def _start_leading(self) -> None:
        self._start(self._leader, self._leading)

    def _start(self, entries: list[_Entry], started: list[_Entry]) -> None:
        """Start ``entries`` in order into ``started``, until one fails or we stop."""
        for entry in entries:
            with self._lock:
                if self._closing or self.stopping.is_set():
                    return
                self._starting = entry.name
                try:
                    entry.runnable.start()
                except Exception as err:  # noqa: BLE001 - any failure to start ends the component
                    self._fail(f"failed to start {entry.name}: {err}")
                    return
                started.append(entry)

    def _wait_for_caches(self, name: str, factory: InformerFactory) -> None:
        synced = factory.wait_for_cache_sync(CACHE_SYNC_TIMEOUT, self.stopping)
        waiting = [str(key) for key, ok in synced.items() if not ok]
        if waiting and not self.stopping.is_set():
            self._log.warning("%s: caches not synced after %gs: %s", name, CACHE_SYNC_TIMEOUT,
                              ", ".join(waiting))

    def _informers_synced(self) -> str | None:
        waiting = [str(key) for factory in self._ready_after
                   for key, ok in factory.wait_for_cache_sync(timeout=0).items() if not ok]
        return f"caches not synced: {', '.join(waiting)}" if waiting else None

    def _task_failed(self, name: str, err: Exception) -> None:
        self._fail(f"task {name} failed: {err}", err)

    def _stopped_leading(self) -> None:
        if not self._release.is_set():
            self._fail("leader election lost")

    def _fail(self, message: str, err: Exception | None = None) -> None:
        self._log.error("%s", message, exc_info=err)
        self._failed = True
        self.stopping.set()

    # -- stopping -----------------------------------------------------------------------------

    def _shutdown(self, election: threading.Thread | None) -> bool:
        """Stop what started, in reverse, within the grace period; whether all stopped."""
        self.stopping.set()  # a start still waiting gives up
        deadline = time.monotonic() + self.grace_period
        if not self._lock.acquire(timeout=self.grace_period):
            self._log.error("%s did not finish starting within the grace period of %gs",
                            self._starting, self.grace_period)
            return False
        self._closing = True
        self._lock.release()
        in_time = self._stop_all(self._leading, deadline)
        if election is not None:
            self._release.set()
            in_time = self._within(deadline, "leader-election", election.join) and in_time
        return self._stop_all(self._started, deadline) and in_time

    def _stop_all(self, started: list[_Entry], deadline: float) -> bool:
        in_time = True
        for entry in reversed(started):
            in_time = self._within(deadline, entry.name, entry.runnable.stop) and in_time
        return in_time

    def _within(self, deadline: float, name: str, stop: Callable[[], None]) -> bool:
        """Call ``stop`` on a thread of its own and wait for it until ``deadline``."""

        def call() -> None:
            try:
                stop()
            except Exception:  # noqa: BLE001 - logged; the others still stop
                self._log.exception("stopping %s failed", name)

        thread = threading.Thread(target=call, name=f"stop-{name}", daemon=True)
        thread.start()
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            self._log.error("%s did not stop within the grace period of %gs", name,
                            self.grace_period)
            return False
        return True


def run(component: Component, argv: Sequence[str] | None = None,
        stop: threading.Event | None = None, *,
        grace_period: float = DEFAULT_GRACE_PERIOD) -> int:
    """Run ``component`` until it is stopped (a signal, or ``stop`` set); its exit status."""
    args = component.parse_args(sys.argv[1:] if argv is None else argv)
    klog.setup_from_args(args)
    runner = Runner(component.name, stop or threading.Event(), grace_period)
    with handle_signals(runner.stopping):
        try:
            component.build(args, runner)
            elector = runner._new_elector()
        except Exception as err:  # noqa: BLE001 - whatever the build raises, it does not start
            runner._log.error("%s: %s", component.setup_error or
                              f"unable to set up {component.name}", err)
            runner._log.debug("build failed", exc_info=err)
            return 1
        return runner._run(elector)


__all__ = [
    "CACHE_SYNC_TIMEOUT", "DEFAULT_GRACE_PERIOD", "Build", "Component", "Hooks",
    "InformerFactory", "Runnable", "Runner", "Task", "run",
]
