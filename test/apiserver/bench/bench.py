"""Benchmark of the embedded API server: a large cluster listed and watched by real clients.

    python -m test.apiserver.bench [--nodes 5000] [--pods 50000] [--watchers 10]
                                   [--rate 1000] [--seconds 5] [--workdir DIR]

Fills the server with nodes and pods (through the API, in the server's loop), then measures:
full lists through the official Python client (raw bytes, ``_preload_content=False``, and
paginated with limit=500 like an informer), ``kubectl get pods -A`` (Table output), pod
creation over HTTP, and watch fan-out (a writer patching pods at ``--rate`` per second while
``--watchers`` watch connections in another process count what they receive, and how late).
With ``--workdir`` every write is also logged there, as by a server that keeps its objects
across restarts, and the table ends with the restart (snapshot, then load). Prints one table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import ssl
import sys
import time
from typing import Any, cast

from urllib3 import BaseHTTPResponse

from test.apiserver import start
from test.apiserver.testing import Kubectl, api_client, kubectl_binary


def node(i: int) -> dict[str, Any]:
    name = f"node-{i:05d}"
    res = {"cpu": "64", "memory": "256Gi", "pods": "110"}
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                  "topology.kubernetes.io/zone": f"z{i % 3}"}},
            "status": {"capacity": res, "allocatable": res,
                       "conditions": [{"type": "Ready", "status": "True",
                                       "reason": "KubeletReady"}],
                       "nodeInfo": {"kubeletVersion": "v1.32.0"}}}


def pod(i: int, nodes: int) -> dict[str, Any]:
    return {"metadata": {"name": f"pod-{i:06d}", "labels": {"app": f"app-{i % 200}",
                                                           "koordinator.sh/qosClass": "LS"}},
            "spec": {"nodeName": f"node-{i % nodes:05d}", "schedulerName": "koord-scheduler",
                     "containers": [{"name": "main", "image": "registry.local/app:1.0",
                                     "resources": {"requests": {"cpu": "500m",
                                                                "memory": "1Gi"},
                                                   "limits": {"cpu": "1", "memory": "2Gi"}}}]}}


def _watchers_proc(url: str, ca: str, token: str, n: int, seconds: float, rv: str,
                   out: Any, ready: Any) -> None:
    import aiohttp

    async def one(session: aiohttp.ClientSession, stats: dict[str, Any]) -> None:
        params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": str(int(seconds))}
        async with session.get(f"{url}/api/v1/namespaces/default/pods", params=params) as r:
            buf = b""
            async for chunk in r.content.iter_any():
                buf += chunk
                *lines, buf = buf.split(b"\n")
                now = time.time()
                for line in lines:
                    if not line:
                        continue
                    ev = json.loads(line)
                    stats["events"] += 1
                    sent = ((ev["object"]["metadata"].get("annotations") or {}).get("bench/t"))
                    if sent:
                        stats["lag"] = max(stats["lag"], now - float(sent))
                    stats["last"] = now

    async def main() -> list[dict[str, Any]]:
        ctx = ssl.create_default_context(cadata=ca)
        conn = aiohttp.TCPConnector(ssl=ctx, limit=0)
        stats = [{"events": 0, "lag": 0.0, "last": 0.0} for _ in range(n)]
        async with aiohttp.ClientSession(connector=conn, headers={
                "Authorization": f"Bearer {token}"}) as s:
            tasks = [asyncio.create_task(one(s, st)) for st in stats]
            await asyncio.sleep(0.5)
            ready.set()
            await asyncio.gather(*tasks, return_exceptions=True)
        return stats

    out.put(asyncio.run(main()))


def run(args: argparse.Namespace) -> list[tuple[str, str, str]]:
    rows: list[tuple[str, str, str]] = []
    srv = start(token="bench", workdir=args.workdir)
    api = srv.api
    try:
        async def fill() -> tuple[float, float]:
            ni, pi = api.info("", "v1", "nodes"), api.info("", "v1", "pods")
            t0 = time.perf_counter()
            for i in range(args.nodes):
                await api.create(ni, None, node(i))
            t1 = time.perf_counter()
            for i in range(args.pods):
                await api.create(pi, "default", pod(i, args.nodes))
            return t1 - t0, time.perf_counter() - t1

        tn, tp = srv.call(fill, timeout=3600)
        rows.append((f"create {args.nodes} nodes (in-process API)", f"{tn:.2f} s",
                     f"{args.nodes / tn:,.0f}/s"))
        rows.append((f"create {args.pods} pods (in-process API)", f"{tp:.2f} s",
                     f"{args.pods / tp:,.0f}/s"))

        from kubernetes import client

        core = client.CoreV1Api(api_client(srv))
        t0 = time.perf_counter()
        for i in range(1000):
            # The client sends a dict body as it is (its types ask for a V1Pod).
            core.create_namespaced_pod("kube-system", pod(i, args.nodes))  # type: ignore[arg-type]
        t = time.perf_counter() - t0
        rows.append(("create 1000 pods over HTTPS (official client)", f"{t:.2f} s",
                     f"{1000 / t:,.0f}/s"))

        for attempt in ("cold", "warm"):
            t0 = time.perf_counter()
            # Not preloaded, the answer is the raw urllib3 response (typed as the V1PodList).
            r = cast(BaseHTTPResponse, core.list_namespaced_pod("default",
                                                               _preload_content=False))
            data = r.data
            n = len(json.loads(data)["items"])
            t = time.perf_counter() - t0
            rows.append((f"list {n} pods, raw bytes + json.loads ({attempt})", f"{t:.2f} s",
                         f"{len(data) / 1e6:.0f} MB"))
        t0 = time.perf_counter()
        n, token = 0, None
        while True:
            r = cast(BaseHTTPResponse, core.list_namespaced_pod(
                "default", limit=500, _continue=token, _preload_content=False))
            page = json.loads(r.data)
            n += len(page["items"])
            token = page["metadata"].get("continue")
            if not token:
                break
        t = time.perf_counter() - t0
        rows.append((f"list {n} pods, pages of 500 (informer style)", f"{t:.2f} s", ""))

        if kubectl_binary():
            k = Kubectl(srv)
            for argv, label in ((["get", "pods", "-n", "default", "--chunk-size=0"],
                                 "kubectl get pods --chunk-size=0 (Table)"),
                                (["get", "nodes", "--chunk-size=0"],
                                 "kubectl get nodes --chunk-size=0 (Table)")):
                t0 = time.perf_counter()
                p = k.run(*argv, timeout=600)
                t = time.perf_counter() - t0
                rows.append((label, f"{t:.2f} s", f"{len(p.stdout.splitlines()) - 1} rows"))
            k.close()

        rows.extend(watch_fanout(srv, args))
    finally:
        t0 = time.perf_counter()
        srv.stop()
    if args.workdir:
        t = time.perf_counter() - t0
        size = os.path.getsize(os.path.join(args.workdir, "data", "snapshot"))
        rows.append(("stop: snapshot of the store", f"{t:.2f} s", f"{size / 1e6:.0f} MB"))
        t0 = time.perf_counter()
        srv = start(token="bench", workdir=args.workdir)
        t = time.perf_counter() - t0
        n = sum(len(c) for c in srv.api.storage.collections.values())
        srv.stop()
        rows.append((f"start again: load {n} objects", f"{t:.2f} s", ""))
    return rows


def watch_fanout(srv: Any, args: argparse.Namespace) -> list[tuple[str, str, str]]:
    api = srv.api
    rv = str(api.storage.rv)
    ctx = mp.get_context("spawn")
    out, ready = ctx.Queue(), ctx.Event()
    ca = open(srv.ca_file).read()
    proc = ctx.Process(target=_watchers_proc, args=(
        srv.url, ca, "bench", args.watchers, args.seconds + 3, rv, out, ready))
    proc.start()
    ready.wait(30)
    total = int(args.rate * args.seconds)
    n_pods = min(args.pods, 5000)

    async def write() -> float:
        info = api.info("", "v1", "pods")
        t0 = time.perf_counter()
        for i in range(total):
            body = json.dumps({"metadata": {"annotations": {"bench/t": repr(time.time())}}})
            await api.patch(info, "default", f"pod-{i % n_pods:06d}",
                            "application/merge-patch+json", body.encode())
            ahead = (i + 1) / args.rate - (time.perf_counter() - t0)
            if ahead > 0:
                await asyncio.sleep(ahead)
        return time.perf_counter() - t0

    t = srv.call(write, timeout=600)
    stats = out.get(timeout=args.seconds + 60)
    proc.join(10)
    got = [s["events"] for s in stats]
    lag = max(s["lag"] for s in stats)
    return [
        (f"write {total} pod patches at {args.rate}/s", f"{t:.2f} s", f"{total / t:,.0f}/s"),
        (f"{args.watchers} watchers: events received each (min/max)",
         f"{min(got)}/{max(got)}", f"{min(got) / t:,.0f}/s each"),
        ("watch delivery lag, worst event", f"{lag * 1000:.0f} ms", ""),
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m test.apiserver.bench")
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pods", type=int, default=50000)
    p.add_argument("--watchers", type=int, default=10)
    p.add_argument("--rate", type=float, default=1000)
    p.add_argument("--seconds", type=float, default=5)
    p.add_argument("--workdir", default=None,
                   help="keep the objects in this (new) directory, as across restarts")
    args = p.parse_args(argv)
    rows = run(args)
    w = max(len(r[0]) for r in rows)
    print(f"{'measure'.ljust(w)}  {'time/value':>12}  {'rate/size':>14}")
    print("-" * (w + 30))
    for name, a, b in rows:
        print(f"{name.ljust(w)}  {a:>12}  {b:>14}")
    print(f"(python {sys.version.split()[0]}, {os.cpu_count()} CPUs; kubectl's default "
          "chunking is throttled by client-go's 5 QPS limit, hence --chunk-size=0)")
    return 0



