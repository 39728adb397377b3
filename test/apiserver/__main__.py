"""``python -m test.apiserver``: run the embedded API server in the foreground.

Prints one line ``READY <url> <kubeconfig>`` on stdout once it accepts connections, then
serves until SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from .server import Options, new_token, serve


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m test.apiserver", description=__doc__)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="serving port (0: a free one)")
    p.add_argument("--http-port", type=int, default=None,
                   help="also serve plain HTTP on this port (0: a free one)")
    p.add_argument("--insecure", action="store_true", help="serve plain HTTP only")
    p.add_argument("--kubeconfig-out", default=None, help="where to write the kubeconfig")
    p.add_argument("--workdir", default=None, help="directory for certificates")
    p.add_argument("--token", default=None, help="require this bearer token")
    p.add_argument("--random-token", action="store_true", help="require a random token")
    p.add_argument("--watch-cache-size", type=int, default=20_000)
    p.add_argument("--bookmark-interval", type=float, default=5.0)
    return p.parse_args(argv)


async def amain(args: argparse.Namespace) -> None:
    token = args.token or (new_token() if args.random_token else None)
    server = await serve(Options(
        host=args.host, port=args.port, tls=not args.insecure, http_port=args.http_port,
        token=token, kubeconfig=args.kubeconfig_out, workdir=args.workdir,
        watch_cache_size=args.watch_cache_size, bookmark_interval=args.bookmark_interval))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    extra = f" {server.http_url}" if server.http_url and server.http_url != server.url else ""
    print(f"READY {server.url} {server.kubeconfig}{extra}", flush=True)
    await stop.wait()
    await server.close()


def main(argv: list[str] | None = None) -> int:
    asyncio.run(amain(parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
