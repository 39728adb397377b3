"""End-to-end runs: koord-scheduler against the embedded API server in its own process.

The API server (``python -m test.apiserver``) runs as a separate process, as a real one would;
the bench creates the nodes, the existing (bound) pods and the pods to schedule through the
API, then starts the scheduler with a real client, informers, the API binder
(``pods/binding``) and the event recorder, and measures from the moment the scheduler's caches
are synced until its informer has seen every pod bound. As scheduler_perf does, the client's
rate limit is raised (5,000 QPS) so that the measurement is of the scheduler, not of the
default client throttle. Gang workloads create their PodGroups before their pods; with them
the scheduler runs everything it runs in a cluster: the PodGroup status controller, the
held-pod reports and the bind-gang annotations. Quota workloads create their ElasticQuotas
before their pods; the scheduler creates its built-in quotas and writes every quota's status
each second, as in a cluster.
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
from pkg.client.errors import ApiError
from pkg.client.informers import EventHandlerFuncs, SharedInformerFactory, wait_for_cache_sync
from pkg.client.resources import (
    CUSTOM_RESOURCE_DEFINITIONS,
    ELASTIC_QUOTAS,
    NAMESPACES,
    NODE_METRICS,
    NODES,
    POD_GROUPS,
    PODS,
    RESERVATIONS,
    Resource,
)
from pkg.client.rest import Client
from pkg.events.events import EventBroadcaster
from scheduler.bench.inprocess import (
    STALL_SECONDS,
    Progress,
    Result,
    config_for,
    default_profile,
    timed_pop,
)
from scheduler.bench.workloads import NAMESPACE, SCHEDULER_NAME, Objects, Workload, node_metric
from scheduler.factory import build_scheduler
from scheduler.plugins.elasticquota import NAME as ELASTIC_QUOTA_PLUGIN
from scheduler.plugins.elasticquota import ElasticQuota
from scheduler.plugins.reservation import Reservation as ReservationPlugin

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


def _install_crds(client: Client, *resources: Resource) -> None:
    """Create the CRDs of ``resources`` and wait until the server serves them."""
    names = {f"{r.plural}.{r.group}" for r in resources}
    for crd in crd_manifests():
        if crd["metadata"]["name"] in names:
            client.create(CUSTOM_RESOURCE_DEFINITIONS, crd)
    deadline = time.monotonic() + 60
    for resource in resources:
        while True:
            try:
                client.list(resource)
                break
            except ApiError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)  # polling the server until it serves the new resource


def run_end_to_end(workload: Workload, *, profile: str | None = None, seed: int = 1
                   ) -> Result:
    profile = profile or default_profile(workload)
    objects = workload.build(seed)
    with tempfile.TemporaryDirectory() as workdir:
        server = ApiServerProcess(workdir)
        try:
            return _run(server, workload, profile, objects)
        finally:
            server.stop()


def _run(server: ApiServerProcess, workload: Workload, profile: str, objects: Objects
         ) -> Result:
    client = Client.from_options(ClientOptions(kubeconfig=server.kubeconfig, qps=5000,
                                               burst=5000))
    # The bench's namespace, and koordinator-system, where ElasticQuota keeps its built-in
    # quotas (the chart creates it in a cluster).
    for ns in (NAMESPACE, "koordinator-system"):
        client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                   "metadata": {"name": ns}})
    # Every informer the scheduler's plugins start must be able to list its resource.
    _install_crds(client, NODE_METRICS, POD_GROUPS, ELASTIC_QUOTAS, RESERVATIONS)
    _create_all(client, NODES, [_strip(n) for n in objects.nodes])
    _create_all(client, PODS, [_strip(p) for p in objects.existing])
    if workload.node_metrics:
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        _create_all(client, NODE_METRICS, [
            _strip(node_metric(n["metadata"]["name"], cpu_milli=300 + (i * 37) % 1200,
                               memory=(2 + i % 8) * 1024 ** 3, update_time=now))
            for i, n in enumerate(objects.nodes)], status=True)
    _create_all(client, POD_GROUPS, [_strip(pg) for pg in objects.pod_groups])
    _create_all(client, ELASTIC_QUOTAS, [_strip(q) for q in objects.quotas])
    _create_all(client, RESERVATIONS, [_strip(r) for r in objects.reservations], status=True)
    _create_all(client, PODS, [_strip(p) for p in objects.todo])

    factory = SharedInformerFactory(client)
    broadcaster = EventBroadcaster(client)
    built = build_scheduler(config_for(workload, profile), client=client,
                            informer_factory=factory,
                            recorder_factory=broadcaster.new_recorder)
    sched = built.scheduler
    built.handlers.register(factory)
    progress = Progress(objects, workload.pods)
    reservation = sched.profiles[SCHEDULER_NAME].plugin("Reservation")
    if isinstance(reservation, ReservationPlugin):
        progress.time_restore(reservation)
    wanted = {f"{NAMESPACE}/{p['metadata']['name']}" for p in objects.todo}

    def bound(old: dict, new: dict) -> None:
        meta = new["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        if (new.get("spec") or {}).get("nodeName") and key in wanted and \
                not (old.get("spec") or {}).get("nodeName"):
            wanted.discard(key)
            progress.bound(key, meta["name"], meta.get("annotations"))

    factory.informer_for(PODS, typed=False).add_event_handler(EventHandlerFuncs(update=bound))
    timed_pop(sched.queue, progress.popped)
    stop = threading.Event()
    factory.start()
    wait_for_cache_sync(*factory.informers().values(), timeout=120)
    sched.queue.run(stop)
    loop = threading.Thread(target=sched.run, args=(stop,), daemon=True)
    progress.start()
    loop.start()
    while not progress.done.wait(1.0):
        if time.perf_counter() - progress.last_bound > STALL_SECONDS:
            break  # stuck: report what was bound
    elapsed = time.perf_counter() - progress.t0
    stop.set()
    sched.stop()
    loop.join(timeout=5)
    # ElasticQuota's status writer and revocation loops would go on writing to a stopped server.
    quota = sched.profiles[SCHEDULER_NAME].plugin(ELASTIC_QUOTA_PLUGIN)
    if isinstance(quota, ElasticQuota):
        for controller in (quota.status_writer, quota.revoker):
            if controller is not None:
                controller.stop()
    factory.shutdown()
    broadcaster.shutdown(timeout=5)
    return progress.result(workload, "end-to-end", profile, elapsed)
