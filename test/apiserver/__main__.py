"""``python -m test.apiserver``: run the embedded API server in the foreground.

Prints one line ``READY <url> <kubeconfig>`` on stdout once it accepts connections, then
serves until SIGINT/SIGTERM (then, with ``--workdir``, snapshots the objects there for the next
run on it; see ``persistence.py``). ``--simulated-nodes FILE`` registers simulated kubelets first: a
YAML list of ``nodes.NodeSpec`` mappings (``name``, ``cpu``, ``memory``, ``pods``, ``labels``,
``annotations``, ``taints``, ``extra``, ``allocatable``, ...); a bad entry is an error naming
its index and field, before anything is served; nodes a previous run on the workdir stored
are resumed, not registered again.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import signal
import sys
from pathlib import Path

import yaml

from .nodes import NodeSpec
from .persistence import PersistenceError
from .server import Options, serve


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m test.apiserver", description=__doc__)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="serving port (0: a free one)")
    p.add_argument("--http-port", type=int, default=None,
                   help="also serve plain HTTP on this port (0: a free one)")
    p.add_argument("--insecure", action="store_true", help="serve plain HTTP only")
    p.add_argument("--kubeconfig-out", default=None, help="where to write the kubeconfig")
    p.add_argument("--workdir", default=None,
                   help="directory for certificates and the objects, kept across restarts "
                        "(default: a temporary one, nothing kept)")
    p.add_argument("--token", default=None, help="require this bearer token")
    p.add_argument("--random-token", action="store_true",
                   help="require a random token (kept in --workdir for the next run)")
    p.add_argument("--watch-cache-size", type=int, default=20_000)
    p.add_argument("--bookmark-interval", type=float, default=5.0)
    p.add_argument("--simulated-nodes", default=None, metavar="FILE",
                   help="YAML list of simulated nodes (NodeSpec fields) to register")
    p.add_argument("--node-lease-interval", type=float, default=Options.lease_interval)
    p.add_argument("--node-status-interval", type=float, default=Options.node_status_interval)
    return p.parse_args(argv)


class NodesFileError(ValueError):
    """A --simulated-nodes file that does not hold a list of NodeSpec mappings."""


def load_node_specs(path: str) -> list[NodeSpec]:
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as e:
        raise NodesFileError(f"--simulated-nodes {path}: {e}") from None
    if not isinstance(doc, list):
        raise NodesFileError(f"--simulated-nodes {path}: want a YAML list of nodes")
    fields = {f.name for f in dataclasses.fields(NodeSpec)}
    specs = []
    for i, entry in enumerate(doc):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise NodesFileError(f"--simulated-nodes {path}: [{i}].name: a string is required")
        unknown = sorted(set(entry) - fields)
        if unknown:
            raise NodesFileError(f"--simulated-nodes {path}: [{i}] ({entry['name']}): "
                                 f"unknown field(s) {', '.join(unknown)}")
        specs.append(NodeSpec(**entry))
    return specs


async def amain(args: argparse.Namespace) -> None:
    specs = load_node_specs(args.simulated_nodes) if args.simulated_nodes else []
    server = await serve(Options(
        host=args.host, port=args.port, tls=not args.insecure, http_port=args.http_port,
        token=args.token, random_token=args.random_token, kubeconfig=args.kubeconfig_out,
        workdir=args.workdir,
        watch_cache_size=args.watch_cache_size, bookmark_interval=args.bookmark_interval,
        lease_interval=args.node_lease_interval,
        node_status_interval=args.node_status_interval))
    for spec in specs:
        await server.nodes.register_or_resume(spec)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    extra = f" {server.http_url}" if server.http_url and server.http_url != server.url else ""
    print(f"READY {server.url} {server.kubeconfig}{extra}", flush=True)
    await stop.wait()
    await server.close()


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="test.apiserver: %(levelname)s %(message)s")
    try:
        asyncio.run(amain(parse_args(argv)))
    except (NodesFileError, PersistenceError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
