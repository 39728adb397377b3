"""SIGTERM and SIGINT as a stop event (controller-runtime ``pkg/manager/signals``): the first
signal asks for a graceful stop, a second one ends the process at once with status 1."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType

SIGNALS = (signal.SIGTERM, signal.SIGINT)

_installed = False


@contextlib.contextmanager
def handle_signals(stop: threading.Event) -> Iterator[bool]:
    """Within the block SIGTERM and SIGINT set ``stop``; the previous handlers are back after it.

    Python runs signal handlers in the main thread only and refuses to install them from any
    other: there (a test running a component on a thread) nothing is installed, the caller owns
    ``stop``, and the block gets False. Installing while installed is an error, as upstream's
    ``SetupSignalHandler`` panics when called twice.
    """
    global _installed
    if threading.current_thread() is not threading.main_thread():
        yield False
        return
    if _installed:
        raise RuntimeError("signal handlers are already installed")
    received: list[int] = []

    def handle(signum: int, _frame: FrameType | None) -> None:
        # No logging here: the handler may interrupt the main thread inside a write to the
        # same stream. The runner logs that it is stopping.
        if received:
            os._exit(1)
        received.append(signum)
        stop.set()

    previous = {sig: signal.signal(sig, handle) for sig in SIGNALS}
    _installed = True
    try:
        yield True
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _installed = False


__all__ = ["SIGNALS", "handle_signals"]
