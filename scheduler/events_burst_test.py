"""A 2,000-pod burst through the real scheduler against the embedded API server (its own
process, as in the end-to-end bench): every pod gets its Scheduled event, none dropped, each
reported by its profile, and kubectl's core/v1 view shows them all.

Run with ``-s`` to see the measured rates behind ``pkg.events.events.QUEUE_LENGTH`` and
``WRITERS``: pods bound a second by the scheduler, and events written a second
(``BURST_PODS=200`` for a quick run while working on the recorder).
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from pkg.client.config import ClientOptions
from pkg.client.informers import SharedInformerFactory, wait_for_cache_sync
from pkg.client.resources import EVENTS, EVENTS_V1, NAMESPACES, NODES, PODS
from pkg.client.rest import Client
from pkg.events.events import EventBroadcaster
from scheduler.apis.config import load_scheduler_config
from scheduler.bench.e2e import ApiServerProcess
from scheduler.bench.workloads import node, pod
from scheduler.factory import build_scheduler
from test.e2e.cluster import wait_for

PODS_IN_BURST = int(os.environ.get("BURST_PODS", "2000"))
OTHER_PROFILE_PODS = 20
NODES_IN_CLUSTER = 60  # 40 pods each (4 CPUs, 100m a pod): room for the burst
NS = "burst"
CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: koord-scheduler
- schedulerName: other-scheduler
"""


@pytest.fixture(scope="module")
def server() -> Iterator[ApiServerProcess]:
    with tempfile.TemporaryDirectory() as workdir:
        srv = ApiServerProcess(workdir)
        try:
            yield srv
        finally:
            srv.stop()


def _client(srv: ApiServerProcess) -> Client:
    # As the bench (and scheduler_perf): the measurement is of the scheduler and the
    # recorder, not of the default client throttle.
    return Client.from_options(ClientOptions(kubeconfig=srv.kubeconfig, qps=5000, burst=5000))


def _burst_pod(i: int) -> dict[str, Any]:
    p = pod(f"p-{i}")
    p["metadata"] = {"name": f"p-{i}", "namespace": NS}
    if i >= PODS_IN_BURST:
        p["spec"]["schedulerName"] = "other-scheduler"
    return p


def test_a_burst_of_pods_gets_every_scheduled_event(server: ApiServerProcess) -> None:
    client = _client(server)
    client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                               "metadata": {"name": NS}})
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: client.create(NODES, node(i)), range(NODES_IN_CLUSTER)))
        list(pool.map(lambda i: client.create(PODS, _burst_pod(i), NS),
                      range(PODS_IN_BURST + OTHER_PROFILE_PODS)))

    factory = SharedInformerFactory(client)
    # Its own client, as koord-scheduler's main does.
    broadcaster = EventBroadcaster(_client(server))
    built = build_scheduler(load_scheduler_config(CONFIG, source="burst"), client=client,
                            informer_factory=factory, recorder_factory=broadcaster.new_recorder)
    built.handlers.register(factory)
    sched = built.scheduler
    stop = threading.Event()
    factory.start()
    try:
        assert wait_for_cache_sync(*factory.informers().values(), timeout=120)
        pods = factory.informer_for(PODS, typed=False).lister
        sched.queue.run(stop)
        loop = threading.Thread(target=sched.run, args=(stop,), daemon=True)
        t0 = time.perf_counter()
        loop.start()
        total = PODS_IN_BURST + OTHER_PROFILE_PODS
        wait_for(lambda: sum(1 for p in pods.list() if p["spec"].get("nodeName")) == total,
                 timeout=600, interval=0.5, what="every pod bound")
        bound_s = time.perf_counter() - t0
        assert broadcaster.flush(timeout=600)
        written_s = time.perf_counter() - t0
    finally:
        stop.set()
        sched.stop()
        factory.shutdown()
        broadcaster.shutdown(timeout=30)
    print(f"\n{total} pods bound in {bound_s:.1f} s ({total / bound_s:.0f}/s); their events "
          f"written {written_s:.1f} s after the start ({total / written_s:.0f}/s)")

    assert broadcaster.dropped == 0
    scheduled = [e for e in client.list(EVENTS_V1, NS)["items"] if e["reason"] == "Scheduled"]
    per_pod = Counter(e["regarding"]["name"] for e in scheduled)
    assert len(per_pod) == total and set(per_pod.values()) == {1}, \
        [name for name, n in per_pod.items() if n != 1][:10]
    by_pod = {e["regarding"]["name"]: e for e in scheduled}
    for i in (0, PODS_IN_BURST - 1):
        e = by_pod[f"p-{i}"]
        assert (e["action"], e["type"], e["reportingController"]) == \
            ("Binding", "Normal", "koord-scheduler")
        assert e["note"].startswith(f"Successfully assigned {NS}/p-{i} to node-")
    assert by_pod[f"p-{PODS_IN_BURST}"]["reportingController"] == "other-scheduler"
    # The core/v1 view (kubectl get events, the local cluster's report) has them too.
    core = [e for e in client.list(EVENTS, NS)["items"] if e["reason"] == "Scheduled"]
    assert len(core) == total
    assert all(e["message"].startswith("Successfully assigned") for e in core)
