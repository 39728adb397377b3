"""``hack/koord``: small operator commands; ``explain pod NS/NAME`` says why a pod is pending,
``explain quota NAME`` shows an ElasticQuota in its tree (see ``hack.koord_quota``),
``explain reservation NAME`` shows a Reservation (phase, node, owners, what it holds and who
consumes it) and, while it waits for a node, the scheduler's diagnosis of its reserve pod.

There is no upstream counterpart: kube-scheduler only leaves the last ``FailedScheduling``
message. ``explain`` asks koord-scheduler's ``/debug/pods/<ns>/<name>`` for the structured
diagnosis (per Filter plugin: nodes rejected and reasons; the nearest miss and by how much;
for a gang pod its gang: members, waiting at Permit, bound, time left before the timeout; for
a pod of an ElasticQuota its quota path with min, max, runtime, used and request at each level
and which dimension blocks it where).
When the scheduler cannot be reached it falls back to the pod's ``PodScheduled`` condition
read from the API server with ``--kubeconfig``.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from typing import Any

from scheduler.diagnosis import explain_text


def _from_scheduler(url: str, key: str, timeout: float) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/debug/pods/{key}",
                                    timeout=timeout) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as err:
        if err.code == 404:
            return {}
        raise


def _from_api_server(kubeconfig: str | None, ns: str, name: str) -> str:
    from pkg.client.resources import PODS
    from pkg.client.rest import Client

    pod = Client.from_kubeconfig(kubeconfig).get(PODS, name, ns)
    if (pod.get("spec") or {}).get("nodeName"):
        return f"Pod {ns}/{name} is bound to node {pod['spec']['nodeName']}."
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return (f"Pod {ns}/{name} is pending ({c.get('reason')}).\n  {c.get('message')}\n"
                    "(the scheduler was not reachable: no per-plugin diagnosis)")
    return f"Pod {ns}/{name} has not been tried by a scheduler yet."


def explain_pod(args: argparse.Namespace) -> int:
    ns, _, name = args.pod.partition("/")
    if not name:
        print(f"error: pod must be NAMESPACE/NAME, got {args.pod!r}", file=sys.stderr)
        return 2
    try:
        entry = _from_scheduler(args.scheduler, f"{ns}/{name}", args.timeout)
    except (urllib.error.URLError, OSError) as err:
        print(f"(scheduler at {args.scheduler} not reachable: {err})", file=sys.stderr)
        try:
            print(_from_api_server(args.kubeconfig, ns, name))
        except Exception as api_err:  # noqa: BLE001 - report, don't trace back
            print(f"error: {api_err}", file=sys.stderr)
            return 1
        return 0
    if not entry:
        print(f"The scheduler has no pending diagnosis for {ns}/{name} "
              "(scheduled, not yet tried, or not its scheduler).")
        return 1
    if args.output == "json":
        print(json.dumps(entry, indent=2))
    else:
        print(explain_text(entry["pod"], entry.get("diagnosis") or {}, entry.get("message", ""),
                           entry.get("explain") or ()))
    return 0


def reservation_text(obj: dict[str, Any]) -> str:
    """A Reservation as its owner wants to read it."""
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, \
        obj.get("status") or {}
    phase = status.get("phase") or "Pending"
    where = f" on node {status['nodeName']}" if status.get("nodeName") else ""
    expiry = (f"ttl {spec['ttl']}" if spec.get("ttl") else
              f"expires {spec['expires']}" if spec.get("expires") else "no expiry")
    once = spec.get("allocateOnce") is not False  # unset means true
    lines = [f"Reservation {meta.get('name')}: {phase}{where} ({expiry}, "
             f"{'allocate-once' if once else 'reusable'})"]
    for owner in spec.get("owners") or ():
        lines.append(f"  owner: {json.dumps(owner, sort_keys=True)}")

    def amounts(rl: dict[str, Any] | None) -> str:
        return ", ".join(f"{k}={v}" for k, v in sorted((rl or {}).items())) or "-"
    lines.append(f"  allocatable: {amounts(status.get('allocatable'))}; "
                 f"allocated: {amounts(status.get('allocated'))}")
    owners = [f"{o.get('namespace')}/{o.get('name')}" for o in status.get("currentOwners") or ()]
    lines.append(f"  consumed by: {', '.join(owners) or '-'}")
    for c in status.get("conditions") or ():
        lines.append(f"  {c.get('type')}={c.get('status')} ({c.get('reason') or '-'})"
                     + (f": {c['message']}" if c.get("message") else ""))
    return "\n".join(lines)


def explain_reservation(args: argparse.Namespace) -> int:
    from api.scheduling.v1alpha1 import Reservation
    from pkg.client.resources import RESERVATIONS
    from pkg.client.rest import Client
    from pkg.util.reservation import is_unassigned_active, new_reserve_pod

    try:
        obj = Client.from_kubeconfig(args.kubeconfig).get(RESERVATIONS, args.reservation)
        reservation = Reservation.model_validate(obj)
    except Exception as err:  # noqa: BLE001 - report, don't trace back
        print(f"error: Reservation {args.reservation}: {err}", file=sys.stderr)
        return 1
    print(reservation_text(obj))
    if not is_unassigned_active(reservation):
        return 0
    # Still looking for a node: its reserve pod is pending in the scheduler.
    md = new_reserve_pod(reservation)["metadata"]
    key = f"{md['namespace']}/{md['name']}"
    try:
        entry = _from_scheduler(args.scheduler, key, args.timeout)
    except (urllib.error.URLError, OSError) as err:
        print(f"(scheduler at {args.scheduler} not reachable: {err})", file=sys.stderr)
        return 0
    if not entry:
        print(f"The scheduler has no pending diagnosis for its reserve pod {key} "
              "(not yet tried, or not its scheduler).")
        return 0
    print(explain_text(entry["pod"], entry.get("diagnosis") or {}, entry.get("message", ""),
                       entry.get("explain") or ()))
    return 0


def explain_quota(args: argparse.Namespace) -> int:
    from hack.koord_quota import explain_quota as explain

    try:
        print(explain(args.kubeconfig, args.quota, args.namespace))
    except Exception as err:  # noqa: BLE001 - report, don't trace back
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hack/koord")
    sub = parser.add_subparsers(dest="command", required=True)
    explain = sub.add_parser("explain", help="say why an object is in its state")
    what = explain.add_subparsers(dest="what", required=True)
    pod = what.add_parser("pod", help="why a pod is pending")
    pod.add_argument("pod", metavar="NAMESPACE/NAME")
    pod.add_argument("--scheduler", default="http://127.0.0.1:10251",
                     help="koord-scheduler's debug endpoint base URL")
    pod.add_argument("--kubeconfig", default=None)
    pod.add_argument("--timeout", type=float, default=5.0)
    pod.add_argument("-o", "--output", choices=("text", "json"), default="text")
    pod.set_defaults(func=explain_pod)
    quota = what.add_parser("quota", help="an ElasticQuota in its tree: min, max, runtime, "
                            "request and used of it, its ancestors, siblings and children")
    quota.add_argument("quota", metavar="NAME")
    quota.add_argument("-n", "--namespace", default=None,
                       help="the quota's namespace, when several hold that name")
    quota.add_argument("--kubeconfig", default=None)
    quota.set_defaults(func=explain_quota)
    rsv = what.add_parser("reservation", help="a Reservation: phase, node, owners, what it "
                          "holds and who consumes it; the scheduler's diagnosis while pending")
    rsv.add_argument("reservation", metavar="NAME")
    rsv.add_argument("--scheduler", default="http://127.0.0.1:10251",
                     help="koord-scheduler's debug endpoint base URL")
    rsv.add_argument("--kubeconfig", default=None)
    rsv.add_argument("--timeout", type=float, default=5.0)
    rsv.set_defaults(func=explain_reservation)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
