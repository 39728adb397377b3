import threading
import time

import pytest

from koordlet.statesinformer.callbacks import CallbackRunner, RegisterType


def test_callbacks_run_in_order_and_pending_signals_coalesce() -> None:
    calls: list[tuple[str, object]] = []
    gate = threading.Event()
    runner = CallbackRunner(lambda t: f"state-{t}")

    def slow(t: RegisterType, target: object) -> None:
        gate.wait(5)
        calls.append(("a", target))

    runner.register(RegisterType.ALL_PODS, "a", "first", slow)
    runner.register(RegisterType.ALL_PODS, "b", "second", lambda t, x: calls.append(("b", x)))
    with pytest.raises(ValueError):
        runner.register(RegisterType.ALL_PODS, "a", "dup", slow)
    stop = threading.Event()
    runner.start(stop)
    try:
        runner.send(RegisterType.ALL_PODS)
        time.sleep(0.3)  # the worker is now inside "a"
        for _ in range(5):
            runner.send(RegisterType.ALL_PODS)  # one pending slot: five sends, one run
        gate.set()
        time.sleep(0.5)
    finally:
        stop.set()
    assert calls == [("a", "state-AllPods"), ("b", "state-AllPods")] * 2
