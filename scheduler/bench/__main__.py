"""``python -m scheduler.bench``: scheduler_perf-style throughput and latency of koord-scheduler.

Runs each workload in process (informer-fed, in-memory binder) and, with ``--e2e``, end to end
through the embedded API server, then prints pods/s and p50/p99 per-pod scheduling latency
(pop to bound) per workload. Targets on a 2-core machine: SchedulingBasic in process ≥ 680
pods/s, SchedulingLoadAware ≥ 500 pods/s, end to end ≥ 200 pods/s.
"""

from __future__ import annotations

import argparse
import logging
import sys

from scheduler.bench.inprocess import Result, run_in_process
from scheduler.bench.workloads import workloads


def table(results: list[Result]) -> str:
    head = f"{'workload':<24} {'mode':<11} {'nodes':>6} {'pods':>6} {'seconds':>8} " \
           f"{'pods/s':>8} {'p50 ms':>8} {'p99 ms':>8}"
    lines = [head, "-" * len(head)]
    for r in results:
        lines.append(f"{r.workload:<24} {r.mode:<11} {r.nodes:>6} {r.scheduled:>6} "
                     f"{r.seconds:>8.2f} {r.pods_per_second:>8.0f} "
                     f"{r.percentile(50) * 1000:>8.2f} {r.percentile(99) * 1000:>8.2f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m scheduler.bench", description=__doc__)
    all_names = list(workloads())
    p.add_argument("--workloads", default=",".join(all_names),
                   help=f"comma-separated, from {', '.join(all_names)}")
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--existing", type=int, default=1000)
    p.add_argument("--pods", type=int, default=10000)
    p.add_argument("--e2e", action="store_true",
                   help="also run end to end through the embedded API server")
    p.add_argument("--e2e-only", action="store_true")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    chosen = workloads(args.nodes, args.existing, args.pods)
    results: list[Result] = []
    for name in args.workloads.split(","):
        w = chosen.get(name.strip())
        if w is None:
            p.error(f"unknown workload {name!r}")
        if not args.e2e_only:
            results.append(run_in_process(w))
            print(table(results[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
        if args.e2e or args.e2e_only:
            from scheduler.bench.e2e import run_end_to_end
            results.append(run_end_to_end(w))
            print(table(results[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
