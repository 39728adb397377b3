"""A stand-alone election candidate: ``python -m pkg.leaderelection.candidate``.

Joins the election described by the ``--leader-elect*`` flags and prints one JSON line per
event (``new_leader``, ``started_leading``, ``leading`` every retry period while leading,
``stopped_leading``) with the wall-clock time. SIGTERM or SIGINT stop it gracefully (the lease
is released). Used by the multi-process leader-election tests and handy to watch an election by
hand; it corresponds to client-go's ``examples/leader-election``.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from typing import Any

from pkg.client.config import load_config
from pkg.client.rest import Client
from pkg.leaderelection.config import (
    LeaderElectionConfiguration,
    add_leader_election_flags,
    config_from_args,
    new_leader_elector,
)


def emit(event: str, **kw: Any) -> None:
    sys.stdout.write(json.dumps({"event": event, "t": time.time(), **kw}) + "\n")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="leader-election-candidate")
    p.add_argument("--kubeconfig", required=True)
    p.add_argument("--identity", required=True)
    add_leader_election_flags(p, LeaderElectionConfiguration(
        resource_name="candidate", resource_namespace="default"))
    args = p.parse_args(argv)
    config = config_from_args(args, LeaderElectionConfiguration(
        resource_name="candidate", resource_namespace="default"))
    client = Client.from_config(load_config(args.kubeconfig), qps=-1)
    stop = threading.Event()
    lost = threading.Event()

    def lead(leading_stop: threading.Event) -> None:
        emit("started_leading", id=args.identity)
        while not leading_stop.wait(config.retry_period):
            emit("leading", id=args.identity)

    def stopped() -> None:
        if not stop.is_set():
            lost.set()
        emit("stopped_leading", id=args.identity)

    elector = new_leader_elector(client, config, lead, stopped,
                                 lambda who: emit("new_leader", id=args.identity, leader=who),
                                 identity=args.identity)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    emit("ready", id=args.identity)
    elector.run(stop)
    emit("exit", id=args.identity)
    return 1 if lost.is_set() else 0


if __name__ == "__main__":
    sys.exit(main())
