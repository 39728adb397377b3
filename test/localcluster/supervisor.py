"""Keeps the local cluster's processes running as the kubelet keeps a pod's containers running
(upstream counterpart: the kubelet's container restart back-off, ``pkg/kubelet/kuberuntime``
with ``flowcontrol.Backoff``; no Koordinator code).

A supervised process that exits, whatever its exit status, is started again with the same
module, arguments and environment after a back-off, its output appended to the same log file
below a marker line. The kubelet waits 10 s doubling to 5 min and forgets the back-off after a
container ran 10 min; a local cluster lives minutes, so these are scaled down: the first
restart waits ``INITIAL_BACKOFF_SECONDS`` (1 s), each further one twice the last up to
``MAX_BACKOFF_SECONDS`` (30 s), and a process that ran ``RESET_AFTER_SECONDS`` (60 s) before
exiting starts again from 1 s. A process is supervised only once ``supervise()`` is called
(after it first got ready: one that never gets ready is the caller's failure, not restarted),
and no longer after ``stop()``.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from test.e2e.cluster import ComponentProcess

log = logging.getLogger(__name__)

INITIAL_BACKOFF_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 30.0
RESET_AFTER_SECONDS = 60.0
POLL_SECONDS = 0.2


def describe_exit(code: int) -> str:
    """``exit 1``, or ``killed by SIGKILL`` for a negative Popen status."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit {code}"


@dataclass(slots=True)
class Backoff:
    """The kubelet's crash-loop back-off, scaled down (see the module docstring)."""

    initial: float = INITIAL_BACKOFF_SECONDS
    cap: float = MAX_BACKOFF_SECONDS
    reset_after: float = RESET_AFTER_SECONDS
    last: float = 0.0

    def next(self, ran_for: float) -> float:
        """The wait before restarting a process that exited after ``ran_for`` seconds."""
        if ran_for >= self.reset_after:
            self.last = 0.0
        self.last = self.initial if self.last == 0.0 else min(self.cap, self.last * 2)
        return self.last


@dataclass(slots=True)
class Restart:
    """What the supervisor saw: a process exited, and when it starts again."""

    name: str
    exit_code: int
    delay: float
    restarts: int  # counting this one


@dataclass(slots=True)
class Supervised:
    """One component process, across its restarts."""

    name: str
    module: str
    args: list[str]
    log_path: Path
    env: dict[str, str] | None = None
    backoff: Backoff = field(default_factory=Backoff)
    restarts: int = 0
    last_exit_code: int | None = None
    supervised: bool = False
    proc: ComponentProcess = field(init=False)
    started_at: float = field(init=False)
    restart_at: float | None = None

    def __post_init__(self) -> None:
        self.launch(append=False)

    def launch(self, append: bool) -> None:
        self.proc = ComponentProcess(self.module, self.args, self.log_path, self.env,
                                     own_session=True, append=append)
        self.started_at = time.monotonic()

    def alive(self) -> bool:
        return self.proc.alive()

    def log(self) -> str:
        return self.proc.log()

    @property
    def pid(self) -> int:
        return self.proc.proc.pid


class Supervisor:
    """Restarts supervised processes that exit; ``on_restart`` hears of each exit."""

    def __init__(self, on_restart: Callable[[Restart], None] | None = None) -> None:
        self.processes: dict[str, Supervised] = {}
        self._on_restart = on_restart
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="supervisor", daemon=True)
        self._thread.start()

    def start(self, name: str, module: str, args: list[str], log_path: Path,
              env: dict[str, str] | None = None) -> Supervised:
        """Start a process (not yet supervised: see ``supervise``)."""
        with self._lock:
            s = self.processes[name] = Supervised(name, module, args, log_path, env)
        return s

    def supervise(self, name: str) -> None:
        with self._lock:
            self.processes[name].supervised = True

    def _loop(self) -> None:
        while not self._closed.wait(POLL_SECONDS):
            with self._lock:
                seen = [self._check(s) for s in self.processes.values() if s.supervised]
            for restart in seen:
                if restart is not None and self._on_restart is not None:
                    self._on_restart(restart)

    def _check(self, s: Supervised) -> Restart | None:
        now = time.monotonic()
        if s.restart_at is None:
            code = s.proc.proc.poll()
            if code is None:
                return None
            s.proc.stop(0)  # reaped already: closes our handle on its log
            s.last_exit_code = code
            delay = s.backoff.next(now - s.started_at)
            s.restart_at = now + delay
            log.warning("%s %s; restarting in %gs", s.name, describe_exit(code), delay)
            return Restart(s.name, code, delay, s.restarts + 1)
        if now >= s.restart_at:
            s.restarts += 1
            s.restart_at = None
            how = describe_exit(s.last_exit_code if s.last_exit_code is not None else 0)
            with open(s.log_path, "a") as f:
                f.write(f"\n===== local-up supervisor: {s.name} {how}; restart {s.restarts} "
                        f"at {time.strftime('%H:%M:%S')} with the same arguments =====\n")
            s.launch(append=True)
        return None

    def release(self, names: list[str]) -> list[Supervised]:
        """Stop supervising ``names`` (no further restart) and return them."""
        with self._lock:
            out = [self.processes[n] for n in names]
            for s in out:
                s.supervised = False
                s.restart_at = None
        return out

    def close(self) -> None:
        """Stop supervising everything; call once the processes are stopped: those it restarted
        were forked by its thread, and PR_SET_PDEATHSIG SIGTERMs them when that thread ends."""
        self.release(list(self.processes))
        self._closed.set()
        self._thread.join(5)
