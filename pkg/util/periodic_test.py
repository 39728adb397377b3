"""Periodic: rounds on the clock's period, a failing round does not end the loop, stop ends
it (FakeClock: no real waiting)."""

from __future__ import annotations

import threading

from pkg.util.clock import FakeClock
from pkg.util.periodic import Periodic


def test_rounds_follow_the_period_and_survive_a_failing_round() -> None:
    clock = FakeClock()
    rounds: list[float] = []
    second = threading.Event()

    def round_() -> None:
        rounds.append(clock.monotonic())
        if len(rounds) == 1:
            raise RuntimeError("bad data")
        second.set()

    loop = Periodic("test-loop", round_, 2.0, clock)
    loop.start()
    try:
        assert clock.wait_for_waiters(1)
        assert len(rounds) == 1
        clock.step(1.0)
        assert not second.wait(0.05) and len(rounds) == 1  # not due yet
        clock.step(1.0)
        assert second.wait(30)
        assert rounds[1] - rounds[0] == 2.0
    finally:
        loop.stop()
    assert loop._thread is None
