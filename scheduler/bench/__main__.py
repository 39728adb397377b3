"""``python -m scheduler.bench``: scheduler_perf-style throughput and latency of koord-scheduler.

Runs each workload in process (informer-fed, in-memory binder) and, with ``--e2e``, end to end
through the embedded API server, then prints a table per run:

* ``pods/s``: pods bound per second (the unfit gang's pods are not counted);
* ``p50 ms``/``p99 ms``: per-pod latency, from the scheduler first popping the pod to the
  informer seeing it bound (a gang member's includes its wait at Permit);
* gang workloads only: ``gang p50``/``gang p99``, the gang completion latency in seconds, from
  the run's start (every pod is queued by then) to the gang's last member bound, and
  ``unfit``, how many members of the gang that cannot fit were bound (all or nothing: 0);
* quota workloads only: ``quota viol.``, pods bound beyond a quota's max (a parent's counting
  its leaves' pods), over every quota: must be 0. ``pods`` counts only the pods the quotas
  admit (their leaves' runtimes once every pod is known); the others stay pending.

``--profile`` picks the scheduler configuration: ``bench`` (in-tree defaults, plus
LoadAwareScheduling for SchedulingLoadAware) or ``shipped`` (upstream's shipped
scheduler-config.yaml, every plugin this version has); by default gang and quota workloads
run ``shipped`` and the others ``bench``. Targets on a 2-core machine: SchedulingBasic in process
≥ 680 pods/s (with either profile), SchedulingLoadAware ≥ 500 pods/s, end to end ≥ 200 pods/s;
gang workloads ≥ 500 pods/s in process and ≥ 150 pods/s end to end. The gang run (the gang
workloads in process and end to end, SchedulingBasic with the shipped profile in process)::

    G=GangScheduling_20x50,GangScheduling_10x100,GangScheduling_1000x10
    python3 -m scheduler.bench --profile shipped --workloads SchedulingBasic,$G --e2e $G

Reservation workloads only: ``in rsv``, pods bound into a Reservation (half the pods match
one, and the Reservations hold room for all of them), and the restore step's cost per
scheduling cycle (Reservation's BeforePreFilter, §7.4: mean and p99, µs). As upstream, a
matching pod lands in a Reservation only when the nodes kube-scheduler examines for it
(``percentageOfNodesToScore``: adaptive, 10% of 5,000 nodes) include one of its Reservations'
nodes: about 2,000 of the 5,000 here; with ``percentageOfNodesToScore: 100`` all of them do.
Reservation_2000x10000 (issue 18, koordinator#3032: 2,000 Available Reservations on 5,000
nodes, 10,000 pods): targets ≥ 680 pods/s in process and ≥ 200 pods/s end to end::

    python3 -m scheduler.bench --profile shipped \
        --workloads SchedulingBasic,Reservation_2000x10000 --e2e Reservation_2000x10000

ElasticQuota_15000x30 (issue 17, Kueue's CI gate: 15,000 pods in 30 leaf quotas under 5
parents, 1,000 nodes): targets ≥ 500 pods/s in process and ≥ 150 pods/s end to end::

    python3 -m scheduler.bench --profile shipped --workloads SchedulingBasic,ElasticQuota_15000x30 \
        --e2e ElasticQuota_15000x30
"""

from __future__ import annotations

import argparse
import logging
import sys

from scheduler.bench.inprocess import PROFILES, Result, run_in_process
from scheduler.bench.workloads import workloads

ALL = "*"


def _row(r: Result) -> str:
    gang = "" if r.unfit_bound is None else \
        f" {r.gang_percentile(50):>9.2f} {r.gang_percentile(99):>9.2f} {r.unfit_bound:>6}"
    if r.quota_violations is not None:
        # Under the last header, past the empty gang columns.
        gang = f"{gang or ' ' * 29} {r.quota_violations:>11}"
    if r.in_reservations is not None:
        gang = (f"{gang or ' ' * 29}{'' if r.quota_violations is not None else ' ' * 12}"
                f" {r.in_reservations:>6} {r.restore_mean() * 1e6:>10.1f}"
                f" {r.restore_percentile(99) * 1e6:>10.1f}")
    return (f"{r.workload:<24} {r.mode:<11} {r.profile:<8} {r.nodes:>6} {r.scheduled:>6} "
            f"{r.seconds:>8.2f} {r.pods_per_second:>8.0f} "
            f"{r.percentile(50) * 1000:>8.2f} {r.percentile(99) * 1000:>8.2f}{gang}")


def table(results: list[Result]) -> str:
    head = (f"{'workload':<24} {'mode':<11} {'profile':<8} {'nodes':>6} {'pods':>6} "
            f"{'seconds':>8} {'pods/s':>8} {'p50 ms':>8} {'p99 ms':>8} "
            f"{'gang p50 s':>9} {'gang p99 s':>9} {'unfit':>6} {'quota viol.':>11} "
            f"{'in rsv':>6} {'restore µs':>10} {'p99 µs':>10}")
    return "\n".join([head, "-" * len(head), *map(_row, results)])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m scheduler.bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    all_names = list(workloads())
    p.add_argument("--workloads", default=",".join(all_names),
                   help=f"comma-separated, from {', '.join(all_names)}")
    p.add_argument("--nodes", type=int, default=5000,
                   help="nodes of the Scheduling* workloads (gang workloads have their own)")
    p.add_argument("--existing", type=int, default=1000)
    p.add_argument("--pods", type=int, default=10000)
    p.add_argument("--profile", choices=PROFILES,
                   help="scheduler configuration for every workload (default: shipped for "
                        "gang workloads, bench for the others)")
    p.add_argument("--e2e", nargs="?", const=ALL, default="", metavar="WORKLOADS",
                   help="also run end to end through the embedded API server: every workload, "
                        "or those comma-separated")
    p.add_argument("--e2e-only", action="store_true")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    chosen = workloads(args.nodes, args.existing, args.pods)
    names = [n.strip() for n in args.workloads.split(",")]
    e2e = set(names) if args.e2e in ("", ALL) else {n.strip() for n in args.e2e.split(",")}
    for name in {*names, *e2e} - set(chosen):
        p.error(f"unknown workload {name!r}")
    results: list[Result] = []
    for name in names:
        w = chosen[name]
        if not args.e2e_only:
            results.append(run_in_process(w, profile=args.profile))
            print(_row(results[-1]), file=sys.stderr, flush=True)
        if (args.e2e or args.e2e_only) and name in e2e:
            from scheduler.bench.e2e import run_end_to_end
            results.append(run_end_to_end(w, profile=args.profile))
            print(_row(results[-1]), file=sys.stderr, flush=True)
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
