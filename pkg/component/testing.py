"""Helpers for tests of components run through the runner: a parser with the logging flags,
``Running`` (``run`` on a thread of its own, stopped through its ``stop``) and ``wait_until``."""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Callable

from pkg import log as klog
from pkg.component.runner import Build, Component, run


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="test-component")
    klog.add_flags(p)
    return p


def wait_until(predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


class Running:
    """``run`` on a thread of its own (no signal handlers), stopped through ``stop``."""

    def __init__(self, build: Build, grace_period: float = 5.0, setup_error: str = "") -> None:
        self.stop = threading.Event()
        self.status: int | None = None
        component = Component("test-component", parser, build, setup_error)
        self.thread = threading.Thread(target=self._run, args=(component, grace_period))
        self.thread.start()

    def _run(self, component: Component, grace_period: float) -> None:
        self.status = run(component, [], self.stop, grace_period=grace_period)

    def join(self, timeout: float = 30.0) -> int | None:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "run did not return"
        return self.status
