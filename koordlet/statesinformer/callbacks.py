"""State callbacks (upstream ``pkg/koordlet/statesinformer/impl/callback_runner.go``).

``CallbackRunner.register(type, name, description, fn)`` adds a callback (duplicate names per
type raise); ``send(type)`` signals that state of that type changed. Each type has one pending
slot: a send while one is already pending is dropped (coalescing), and one worker per type
runs that type's callbacks in registration order with the current state.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from enum import StrEnum
from typing import Any

log = logging.getLogger(__name__)


class RegisterType(StrEnum):
    NODE_SLO_SPEC = "NodeSLOSpec"
    ALL_PODS = "AllPods"
    NODE_TOPOLOGY = "NodeTopology"
    NODE_METADATA = "NodeMetadata"


Callback = Callable[[RegisterType, Any], object]  # a result, if any, is not read


class CallbackRunner:
    def __init__(self, target: Callable[[RegisterType], Any]) -> None:
        self._target = target  # the state handed to callbacks, read when they run
        self._callbacks: dict[RegisterType, list[tuple[str, Callback]]] = {
            t: [] for t in RegisterType}
        self._pending = {t: threading.Event() for t in RegisterType}

    def register(self, rtype: RegisterType, name: str, description: str,
                 fn: Callback) -> None:
        if any(n == name for n, _ in self._callbacks[rtype]):
            raise ValueError(f"callback {name!r} already registered for {rtype}")
        log.info("register %s callback %s: %s", rtype, name, description)
        self._callbacks[rtype].append((name, fn))

    def send(self, rtype: RegisterType) -> None:
        self._pending[rtype].set()

    def run_once(self, rtype: RegisterType) -> None:
        target = self._target(rtype)
        for name, fn in self._callbacks[rtype]:
            try:
                fn(rtype, target)
            except Exception:  # one bad callback must not starve the others
                log.exception("%s callback %s failed", rtype, name)

    def _worker(self, rtype: RegisterType, stop: threading.Event) -> None:
        pending = self._pending[rtype]
        while not stop.is_set():
            if pending.wait(0.1):
                pending.clear()
                self.run_once(rtype)

    def start(self, stop: threading.Event) -> None:
        for rtype in RegisterType:
            threading.Thread(target=self._worker, args=(rtype, stop), daemon=True,
                             name=f"callback-{rtype}").start()
