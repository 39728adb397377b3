"""End-to-end runs: koord-scheduler against the embedded API server in its own process.

The API server (``python -m test.apiserver``) runs as a separate process, as a real one would;
the bench creates the nodes, the existing (bound) pods and the pods to schedule through the
API, then starts the scheduler with a real client, informers, the API binder
(``pods/binding``) and the event recorder, and measures from the moment the scheduler's caches
are synced until its informer has seen every pod bound. As scheduler_perf does, the client's
rate limit is raised (5,000 QPS) so that the measurement is of the scheduler, not of the
default client throttle.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from api.crds import crd_manifests
from pkg.client.config import ClientOptions
from pkg.client.informers import EventHandlerFuncs, SharedInformerFactory, wait_for_cache_sync
from pkg.client.resources import CUSTOM_RESOURCE_DEFINITIONS, NAMESPACES, NODES, PODS
from pkg.client.rest import Client
from pkg.events.events import EventBroadcaster
from scheduler.bench.inprocess import Result, config_for
from scheduler.bench.workloads import Workload, node_metric
from scheduler.eventhandlers import NODE_METRICS
from scheduler.factory import build_scheduler

REPO_ROOT = Path(__file__).absolute().parents[2]


class ApiServerProcess:
    def __init__(self, workdir: str) -> None:
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep +
                   os.environ.get("PYTHONPATH", ""))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "test.apiserver", "--port", "0", "--kubeconfig-out",
             os.path.join(workdir, "kubeconfig"), "--watch-cache-size", "100000"],
            cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().split()
        if not line or line[0] != "READY":
            raise RuntimeError("the embedded API server did not start")
        self.kubeconfig = line[2]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def _create_all(client: Client, resource: Any, objs: list[dict], *, status: bool = False
                ) -> None:
    def one(obj: dict) -> None:
        created = client.create(resource, obj)
        if status:
            created["status"] = obj["status"]
            client.update_status(resource, created)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, objs))


def _strip(obj: dict) -> dict:
    meta = {k: v for k, v in obj["metadata"].items() if k not in ("uid", "resourceVersion")}
    return dict(obj, metadata=meta)


def run_end_to_end(workload: Workload, *, seed: int = 1) -> Result:
    nodes, existing, todo = workload.build(seed)
    with tempfile.TemporaryDirectory() as workdir:
        server = ApiServerProcess(workdir)
        try:
            return _run(server, workload, nodes, existing, todo)
        finally:
            server.stop()


def _run(server: ApiServerProcess, workload: Workload, nodes: list[dict],
         existing: list[dict], todo: list[dict]) -> Result:
    client = Client.from_options(ClientOptions(kubeconfig=server.kubeconfig, qps=5000,
                                               burst=5000))
    client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                               "metadata": {"name": "bench"}})
    _create_all(client, NODES, [_strip(n) for n in nodes])
    _create_all(client, PODS, [_strip(p) for p in existing])
    if workload.node_metrics:
        crd = next(c for c in crd_manifests()
                   if c["metadata"]["name"] == "nodemetrics.slo.koordinator.sh")
        client.create(CUSTOM_RESOURCE_DEFINITIONS, crd)
        time.sleep(0.5)  # the new resource is served once the CRD is established
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        _create_all(client, NODE_METRICS, [
            _strip(node_metric(n["metadata"]["name"], cpu_milli=300 + (i * 37) % 1200,
                               memory=(2 + i % 8) * 1024 ** 3, update_time=now))
            for i, n in enumerate(nodes)], status=True)
    _create_all(client, PODS, [_strip(p) for p in todo])

    factory = SharedInformerFactory(client)
    broadcaster = EventBroadcaster(client)
    built = build_scheduler(config_for(workload), client=client, informer_factory=factory,
                            recorder_factory=broadcaster.new_recorder)
    sched = built.scheduler
    built.handlers.register(factory)
    wanted = {f"bench/{p['metadata']['name']}" for p in todo}
    started: dict[str, float] = {}
    latencies: list[float] = []
    all_bound = threading.Event()

    def bound(old: dict, new: dict) -> None:
        key = f"bench/{new['metadata']['name']}"
        if (new.get("spec") or {}).get("nodeName") and key in wanted and \
                not (old.get("spec") or {}).get("nodeName"):
            wanted.discard(key)
            if key in started:
                latencies.append(time.perf_counter() - started[key])
            if not wanted:
                all_bound.set()

    factory.informer_for(PODS, typed=False).add_event_handler(EventHandlerFuncs(update=bound))
    original_pop = sched.queue.pop

    def timed_pop(timeout: float | None = None) -> Any:
        qpi = original_pop(timeout)
        if qpi is not None:
            started.setdefault(qpi.key, time.perf_counter())
        return qpi

    sched.queue.pop = timed_pop  # type: ignore[method-assign]
    stop = threading.Event()
    factory.start()
    wait_for_cache_sync(*factory.informers().values(), timeout=120)
    sched.queue.run(stop)
    loop = threading.Thread(target=sched.run, args=(stop,), daemon=True)
    t0 = time.perf_counter()
    loop.start()
    all_bound.wait(timeout=600)
    elapsed = time.perf_counter() - t0
    stop.set()
    sched.stop()
    loop.join(timeout=5)
    factory.shutdown()
    broadcaster.shutdown(timeout=5)
    return Result(workload.name, "end-to-end", workload.nodes, len(todo) - len(wanted),
                  elapsed, latencies)
