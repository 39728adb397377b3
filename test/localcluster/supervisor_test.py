"""The local cluster's supervisor restarts what exits, as a kubelet would: same arguments, the
log appended below a marker, a doubling back-off, restarts and exit codes counted; a process
released from supervision stays down."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from test.e2e.cluster import wait_for
from test.localcluster.supervisor import Backoff, Restart, Supervisor, describe_exit

CHILD = "test.localcluster.supervisor_test"  # run as the supervised process: see the end


@pytest.fixture
def supervisor(tmp_path: Path) -> Iterator[tuple[Supervisor, list[Restart], Path]]:
    heard: list[Restart] = []
    sup = Supervisor(heard.append)
    yield sup, heard, tmp_path
    for s in sup.release(list(sup.processes)):
        s.proc.stop(5)
    sup.close()


def test_backoff_doubles_to_the_cap_and_resets_after_a_long_run() -> None:
    b = Backoff()
    assert [b.next(0.5) for _ in range(7)] == [1, 2, 4, 8, 16, 30, 30]
    assert b.next(60.0) == 1  # ran a minute: forgiven
    assert b.next(1.0) == 2


def test_an_exiting_process_is_restarted_with_the_same_arguments(
        supervisor: tuple[Supervisor, list[Restart], Path]) -> None:
    sup, heard, tmp = supervisor
    log = tmp / "child.log"
    s = sup.start("crasher", CHILD, ["0", "3"], log)
    sup.supervise("crasher")
    wait_for(lambda: log.read_text().count("child ['0', '3']") >= 3, timeout=60,
             what="the first run and two restarts")
    assert s.last_exit_code == 3
    assert [(r.name, r.exit_code, r.delay) for r in heard[:2]] == [
        ("crasher", 3, 1.0), ("crasher", 3, 2.0)]
    text = log.read_text()
    # Every run's output is kept, each restart below a marker line.
    assert "===== local-up supervisor: crasher exit 3; restart 1 at " in text
    assert "restart 2 at " in text


def test_kill_9_is_restarted_and_a_released_process_stays_down(
        supervisor: tuple[Supervisor, list[Restart], Path]) -> None:
    sup, heard, tmp = supervisor
    s = sup.start("sleeper", CHILD, ["600", "0"], tmp / "sleeper.log")
    sup.supervise("sleeper")
    first = s.pid
    wait_for(lambda: "child" in s.log(), timeout=30, what="the child's first line")
    os.kill(first, signal.SIGKILL)
    wait_for(lambda: s.restarts == 1 and s.alive(), timeout=30, what="a restart")
    assert s.pid != first
    assert s.last_exit_code == -signal.SIGKILL
    assert describe_exit(s.last_exit_code) == "killed by SIGKILL"
    assert heard[0].exit_code == -signal.SIGKILL
    [released] = sup.release(["sleeper"])
    released.proc.stop(5)
    assert not s.alive()
    # The supervisor's loop runs every 0.2 s: a few rounds later it has not restarted it.
    rounds = [0]

    def looked_a_while() -> bool:
        rounds[0] += 1
        return rounds[0] > 10

    wait_for(looked_a_while, timeout=30, interval=0.2, what="a few supervisor rounds")
    assert s.restarts == 1 and not s.alive()


if __name__ == "__main__":
    # The supervised child: says it started, then exits with argv[2] after argv[1] seconds.
    print("child", sys.argv[1:], flush=True)
    time.sleep(float(sys.argv[1]))
    sys.exit(int(sys.argv[2]))
