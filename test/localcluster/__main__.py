"""``hack/local-up`` / ``bazel run //test/localcluster:local-up``: a local Koordinator cluster
running a co-location scenario, then a report.

    python -m test.localcluster [--nodes N] [--duration 3m] [--scenario FILE] [--workdir DIR]

Starts the embedded API server with N simulated nodes (a koordlet process each), two
replicas each of koord-manager, koord-scheduler and koord-descheduler with upstream's shipped
configuration (koord-descheduler's with LowNodeLoad on; leader-elected; a component that exits
is restarted with back-off), runs the scenario (default
``test/localcluster/scenarios/default.yaml``: one day in 3 minutes; ``quota.yaml`` beside it:
two teams' ElasticQuotas, borrowing, revocation and preemption within a quota; ``hotspot``: a
Deployment pinned to two nodes that run hot, which koord-descheduler balances), and
prints the report; ``report.txt``, ``report.json``, ``placements.tsv``, ``utilisation.png``, the
kubeconfig and every component's log are left in the workdir (default ``_output/local-up``).
Ctrl-C stops every process cleanly and reports what ran so far.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from pathlib import Path

from pkg.util import flags
from test.localcluster.cluster import LocalCluster, WorkdirError, prepare_workdir
from test.localcluster.components import ComponentFailed
from test.localcluster.scenario import DEFAULT_SCENARIO, ScenarioError, load, scenario_path


def _duration(value: str) -> float:
    """Seconds, or a Go duration ("3m")."""
    try:
        return float(value)
    except ValueError:
        return flags.duration(value)


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="hack/local-up", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenario", default=None, metavar="FILE",
                   help="scenario YAML, or the name of one in test/localcluster/scenarios "
                        "(default: default.yaml there)")
    p.add_argument("--nodes", type=int, default=None,
                   help="simulated nodes (default: the scenario's)")
    p.add_argument("--duration", type=_duration, default=None,
                   help="how long to run, seconds or 3m/90s (default: one scenario day)")
    p.add_argument("--workdir", default=None,
                   help="output directory, emptied first (default: _output/local-up)")
    p.add_argument("--settle", action="store_true",
                   help="at the end stop the controllers and wait for running batch pods, "
                        "so the API objects hold still (for checking the report)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="local-up: %(levelname)s %(message)s")
    # Under `bazel run` the user's directory is BUILD_WORKING_DIRECTORY, not the runfiles.
    base = Path(os.environ.get("BUILD_WORKING_DIRECTORY", "."))
    try:
        scenario = load(scenario_path(args.scenario, base) if args.scenario
                        else DEFAULT_SCENARIO)
    except ScenarioError as e:
        print(f"local-up: {e}", file=sys.stderr)
        return 2
    if args.nodes is not None:
        if args.nodes < 1:
            print("local-up: --nodes must be at least 1", file=sys.stderr)
            return 2
        scenario.nodes.count = args.nodes
    duration = args.duration if args.duration is not None else scenario.day_length_seconds
    try:
        workdir = prepare_workdir((base / (args.workdir or "_output/local-up")).absolute())
    except WorkdirError as e:
        print(f"local-up: {e}", file=sys.stderr)
        return 2
    cluster = LocalCluster(scenario, workdir, settle=args.settle)
    # SIGTERM ends the run like Ctrl-C: processes stopped, report of what ran.
    signal.signal(signal.SIGTERM, _interrupt)
    rc = 0
    try:
        cluster.up()
        report = cluster.run(duration)
    except KeyboardInterrupt:
        cluster.say("local-up: interrupted, stopping")
        report = None
        rc = 130
        if cluster.samples and cluster.workload is not None and cluster.client is not None:
            try:
                report = cluster.finish()
            except (Exception, KeyboardInterrupt) as e:  # noqa: BLE001 - a bonus after Ctrl-C
                cluster.say(f"local-up: no report: {e!r}")
    except ComponentFailed as e:
        cluster.say(f"local-up: {e}")
        report = None
        rc = 1
    finally:
        cluster.down()
        cluster.say("local-up: every process stopped")
    if report is not None:
        print()
        print((workdir / "report.txt").read_text(), end="")
    return rc


if __name__ == "__main__":
    sys.exit(main())
