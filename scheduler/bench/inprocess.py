"""In-process runs: the scheduler fed from an informer-style store, binding in memory.

Like kube-scheduler's scheduler_perf, but without an API server: the scheduler's event
handlers receive the nodes and existing pods (as an informer's initial list would deliver
them), every pod to schedule is queued, and the in-memory binder reports each binding back to
the handlers from a separate "informer" thread, as a watch event would. NodeMetrics (for the
LoadAware workload) go straight into the plugin's handlers.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from scheduler.apis.config import load_scheduler_config
from scheduler.bench.workloads import SCHEDULER_NAME, Workload, node_metric
from scheduler.factory import build_scheduler
from scheduler.framework.binder import InMemoryBinder

PROFILE = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
profiles:
- schedulerName: koord-scheduler
  plugins:
    filter: {enabled: [%(filter)s]}
    score: {enabled: [%(score)s]}
    reserve: {enabled: [%(reserve)s]}
  pluginConfig:
  - name: LoadAwareScheduling
    args:
      filterExpiredNodeMetrics: true
      nodeMetricExpirationSeconds: 300
      resourceWeights: {cpu: 1, memory: 1}
      usageThresholds: {cpu: 65, memory: 95}
      estimatedScalingFactors: {cpu: 85, memory: 70}
"""


@dataclass
class Result:
    workload: str
    mode: str
    nodes: int
    scheduled: int
    seconds: float
    latencies: list[float]

    @property
    def pods_per_second(self) -> float:
        return self.scheduled / self.seconds if self.seconds else 0.0

    def percentile(self, p: float) -> float:
        if not self.latencies:
            return 0.0
        s = sorted(self.latencies)
        return s[min(len(s) - 1, int(p / 100 * len(s)))]


def config_for(workload: Workload) -> Any:
    load_aware = workload.node_metrics
    entry = "{name: LoadAwareScheduling}" if load_aware else ""
    names = {"filter": entry, "score": entry, "reserve": entry}
    return load_scheduler_config(PROFILE % names, source=f"bench profile {workload.name}")


def _now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def run_in_process(workload: Workload, *, seed: int = 1) -> Result:
    nodes, existing, todo = workload.build(seed)
    informer_events: queue.Queue[Any] = queue.Queue()
    started: dict[str, float] = {}
    latencies: list[float] = []
    done = threading.Event()
    bound = [0]

    def on_bind(pod: dict[str, Any]) -> None:
        informer_events.put(pod)

    built = build_scheduler(config_for(workload), binder=InMemoryBinder(on_bind=on_bind))
    sched, handlers = built.scheduler, built.handlers
    for n in nodes:
        handlers.add_node(n)
    for p in existing:
        handlers.add_pod_to_cache(p)
    # Plugins that keep their own informer handlers (LoadAwareScheduling) get the same events.
    plugin: Any = sched.profiles[SCHEDULER_NAME].plugin("LoadAwareScheduling")
    pod_listeners = [plugin.cache.pod_handler()] if plugin is not None else []
    for p in existing:
        for listener in pod_listeners:
            listener.on_add(p, True)
    if plugin is not None:
        now = _now_rfc3339()
        per_node: dict[str, list[dict]] = {}
        for p in existing:
            per_node.setdefault(p["spec"]["nodeName"], []).append(p)
        for i, n in enumerate(nodes):
            name = n["metadata"]["name"]
            pods = per_node.get(name, [])
            plugin.cache.set_node_metric(node_metric(
                name, cpu_milli=300 + (i * 37) % 1200, memory=(2 + i % 8) * 1024 ** 3,
                update_time=now, pods=[(p["metadata"]["name"], 80, 400 * 1024 ** 2)
                                       for p in pods]))

    def informer() -> None:
        while True:
            pod = informer_events.get()
            if pod is None:
                return
            key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
            latencies.append(time.perf_counter() - started[key])
            handlers.delete_pod_from_queue(pod)
            handlers.add_pod_to_cache(pod)
            for listener in pod_listeners:
                listener.on_add(pod, False)
            bound[0] += 1
            if bound[0] == len(todo):
                done.set()

    feeder = threading.Thread(target=informer, name="informer", daemon=True)
    feeder.start()
    for p in todo:
        handlers.add_pod_to_queue(p)
    stop = threading.Event()
    queue_threads = sched.queue.run(stop)
    t0 = time.perf_counter()
    original_pop = sched.queue.pop

    def timed_pop(timeout: float | None = None) -> Any:
        qpi = original_pop(timeout)
        if qpi is not None:
            started[qpi.key] = time.perf_counter()
        return qpi

    sched.queue.pop = timed_pop  # type: ignore[method-assign]
    while not done.is_set():
        if not sched.schedule_one(timeout=0.2) and time.perf_counter() - t0 > 5 and \
                sched.queue.pending_pods()["active"] == 0 and sched.wait_for_bindings(0.5):
            break  # nothing left that can be scheduled
    elapsed = time.perf_counter() - t0
    stop.set()
    informer_events.put(None)
    feeder.join()
    sched.stop()
    for t in queue_threads:
        t.join(timeout=2)
    return Result(workload.name, "in-process", workload.nodes, bound[0], elapsed, latencies)
