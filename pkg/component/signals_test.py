"""Signals: SIGTERM stops a component run from the main thread gracefully and the previous
handlers come back; off the main thread nothing is installed; a second signal exits at once
with status 1."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import pkg
from pkg.component.runner import Component, Hooks, Runner, run
from pkg.component.signals import handle_signals
from pkg.component.testing import parser, wait_until

REPO_ROOT = Path(pkg.__file__).absolute().parents[1]


def test_sigterm_stops_gracefully_and_the_handlers_are_restored() -> None:
    before = signal.getsignal(signal.SIGTERM)
    events: list[str] = []

    def build(_: object, r: Runner) -> None:
        r.add("a", Hooks(lambda: events.append("start"), lambda: events.append("stop")))

    def terminate() -> None:
        wait_until(lambda: events == ["start"])
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=terminate, daemon=True).start()
    assert run(Component("test-component", parser, build), []) == 0
    assert events == ["start", "stop"]
    assert signal.getsignal(signal.SIGTERM) is before


def test_off_the_main_thread_nothing_is_installed() -> None:
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    seen: list[object] = []

    def inside() -> None:
        with handle_signals(threading.Event()) as installed:
            seen.append(installed)
            seen.append({sig: signal.getsignal(sig) for sig in before})

    thread = threading.Thread(target=inside)
    thread.start()
    thread.join()
    assert seen == [False, before]


def test_installing_while_installed_is_an_error() -> None:
    with handle_signals(threading.Event()) as installed:
        assert installed
        with pytest.raises(RuntimeError, match="already installed"), \
                handle_signals(threading.Event()):
            pass


STUCK = """
import argparse, sys, threading
from pkg import log
from pkg.component import Component, Hooks, run

def parser():
    p = argparse.ArgumentParser()
    log.add_flags(p)
    return p

def build(args, r):
    r.add("stuck", Hooks(lambda: print("started", flush=True), threading.Event().wait))

sys.exit(run(Component("stuck", parser, build), [], grace_period=60))
"""


def test_a_second_signal_exits_at_once_with_status_1() -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep +
               os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-c", STUCK], cwd=REPO_ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "started\n"
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        assert proc.poll() is None  # stopping, within its 60 s of grace
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 1
    finally:
        proc.kill()
        proc.wait()
