import threading
import time
from collections.abc import Callable

import pytest

from koordlet.statesinformer.callbacks import CallbackRunner, RegisterType


def _until(pred: Callable[[], bool], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_callbacks_run_in_order_and_pending_signals_coalesce() -> None:
    calls: list[tuple[str, object]] = []
    entered, gate = threading.Event(), threading.Event()
    runner = CallbackRunner(lambda t: f"state-{t}")

    def slow(t: RegisterType, target: object) -> None:
        entered.set()
        gate.wait(60)
        calls.append(("a", target))

    runner.register(RegisterType.ALL_PODS, "a", "first", slow)
    runner.register(RegisterType.ALL_PODS, "b", "second", lambda t, x: calls.append(("b", x)))
    with pytest.raises(ValueError):
        runner.register(RegisterType.ALL_PODS, "a", "dup", slow)
    stop = threading.Event()
    runner.start(stop)
    try:
        runner.send(RegisterType.ALL_PODS)
        assert entered.wait(30), "the first send never ran the callbacks"
        # The worker is inside "a": its pending slot is free again.
        for _ in range(5):
            runner.send(RegisterType.ALL_PODS)  # one pending slot: five sends, one run
        gate.set()
        assert _until(lambda: len(calls) >= 4), calls
        # A third run would come right after the second; a short look for one (on a busy
        # machine it may come too late to be seen, never wrongly).
        time.sleep(0.3)
    finally:
        gate.set()
        stop.set()
    assert calls == [("a", "state-AllPods"), ("b", "state-AllPods")] * 2
