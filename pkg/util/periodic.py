"""A function run every period on its own thread until stopped (client-go's ``wait.Until``).

One round's exception is logged and the next round runs on time: a controller's loop must not
end because one pass met bad data or a failing API call.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from pkg.util.clock import Clock

log = logging.getLogger(__name__)


class Periodic:
    def __init__(self, name: str, fn: Callable[[], object], period: float,
                 clock: Clock) -> None:
        self.name = name
        self.fn = fn
        self.period = period
        self.clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.fn()
            except Exception:  # noqa: BLE001 - one bad round must not end the loop
                log.exception("%s: a round failed", self.name)
            if self.clock.sleep(self.period, self._stop):
                return
