"""In-process runs: the scheduler fed from an informer-style store, binding in memory.

Like kube-scheduler's scheduler_perf, but without an API server: the scheduler's event
handlers receive the nodes and existing pods (as an informer's initial list would deliver
them), every pod to schedule is queued, and the in-memory binder reports each binding back to
the handlers from a separate "informer" thread, as a watch event would. Plugins that keep
their own informer handlers get the same events, before the scheduler's own (they register
theirs first): LoadAwareScheduling, Coscheduling and ElasticQuota see every pod and each binding
as a pod update; Coscheduling sees the PodGroups; ElasticQuota sees the nodes and the
ElasticQuotas (through its ``QuotaTreeFeeder``, as its informers would); NodeMetrics go straight
into LoadAware's cache, and Available Reservations into Reservation's cache (which puts their
reserve pods in the scheduler's cache, as its informer handler would). Reservation's restore
step (BeforePreFilter, §7.4) is timed on every cycle.

Two profiles: ``bench``, the in-tree defaults (plus LoadAwareScheduling for the LoadAware
workload), and ``shipped``, upstream's ``config/manager/scheduler-config.yaml`` (found as the
tests find upstream's data, ``KOORD_UPSTREAM_DATA`` overriding) with leader election off;
plugins not implemented yet are left out with the scheduler's warning. Gang and quota workloads
default to ``shipped``, the others to ``bench``.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import yaml

from api.extension.reservation import ANNOTATION_RESERVATION_ALLOCATED
from api.scheduling.v1alpha1 import Reservation
from pkg.client.informers.handlers import EventHandlerFuncs, ResourceEventHandler
from pkg.util.testdata import upstream_data_dir
from scheduler.apis.config import KubeSchedulerConfiguration, load_scheduler_config
from scheduler.apis.config.loader import decode_scheduler_config
from scheduler.bench.workloads import SCHEDULER_NAME, UNFIT_GANG, Objects, Workload, node_metric
from scheduler.factory import build_scheduler
from scheduler.framework.binder import InMemoryBinder
from scheduler.framework.events import ELASTIC_QUOTA, POD_GROUP
from scheduler.framework.runtime import Framework
from scheduler.plugins.coscheduling import Coscheduling
from scheduler.plugins.elasticquota import ElasticQuota
from scheduler.plugins.loadaware import LoadAwareScheduling
from scheduler.plugins.reservation import Reservation as ReservationPlugin

BENCH, SHIPPED = "bench", "shipped"
PROFILES = (BENCH, SHIPPED)
SHIPPED_CONFIG = ("config", "manager", "scheduler-config.yaml")
SHIPPED_CONFIG_KEY = "koord-scheduler-config"
# A run that binds nothing for this long is stuck; it ends with what it bound.
STALL_SECONDS = 60.0

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
    profile: str = BENCH
    # Gang workloads: seconds from the run's start (every pod is queued by then) to each
    # fitting gang's last member bound, and how many members of the unfit gang were bound.
    gang_latencies: list[float] = field(default_factory=list)
    unfit_bound: int | None = None
    # Quota workloads: pods bound beyond a quota's max, over every quota (must be 0).
    quota_violations: int | None = None
    # Reservation workloads: pods bound into a Reservation (their reservation-allocated
    # annotation), and the seconds of each cycle's restore step.
    in_reservations: int | None = None
    restore_seconds: list[float] = field(default_factory=list)

    @property
    def pods_per_second(self) -> float:
        return self.scheduled / self.seconds if self.seconds else 0.0

    def percentile(self, p: float) -> float:
        return _percentile(self.latencies, p)

    def gang_percentile(self, p: float) -> float:
        return _percentile(self.gang_latencies, p)

    def restore_mean(self) -> float:
        r = self.restore_seconds
        return sum(r) / len(r) if r else 0.0

    def restore_percentile(self, p: float) -> float:
        return _percentile(self.restore_seconds, p)


def _percentile(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, int(p / 100 * len(s)))]


class Progress:
    """Bindings as the informer reports them: pod and gang latencies, the unfit gang's count.

    ``popped`` records when the scheduler first took a pod from the queue (a pod latency
    includes its retries); ``bound`` is called once per pod, on the informer thread."""

    def __init__(self, objects: Objects, expected: int) -> None:
        self.gang_of = objects.gang_of
        self.objects = objects
        self.quota_bound: Counter[str] = Counter()  # leaf quota → its pods bound
        self.left = Counter(g for g in self.gang_of.values() if g != UNFIT_GANG)
        self.expected = expected
        self.started: dict[str, float] = {}
        self.latencies: list[float] = []
        self.gang_latencies: list[float] = []
        self.bound_count = 0
        self.in_reservations = 0
        self.restore_seconds: list[float] = []
        self.unfit_bound = 0
        self.t0 = 0.0
        self.last_bound = 0.0
        self.done = threading.Event()

    def start(self) -> None:
        self.t0 = self.last_bound = time.perf_counter()

    def popped(self, key: str) -> None:
        self.started.setdefault(key, time.perf_counter())

    def bound(self, key: str, name: str, annotations: dict[str, str] | None = None) -> None:
        now = self.last_bound = time.perf_counter()
        if annotations and ANNOTATION_RESERVATION_ALLOCATED in annotations:
            self.in_reservations += 1
        if key in self.started:
            self.latencies.append(now - self.started[key])
        quota = self.objects.quota_of.get(name)
        if quota is not None:
            self.quota_bound[quota] += 1
        gang = self.gang_of.get(name)
        if gang == UNFIT_GANG:
            self.unfit_bound += 1
            return
        if gang is not None:
            self.left[gang] -= 1
            if self.left[gang] == 0:
                self.gang_latencies.append(now - self.t0)
        self.bound_count += 1
        if self.bound_count == self.expected:
            self.done.set()

    def result(self, workload: Workload, mode: str, profile: str, seconds: float) -> Result:
        return Result(workload.name, mode, workload.nodes, self.bound_count, seconds,
                      self.latencies, profile, self.gang_latencies,
                      self.unfit_bound if workload.gangs is not None else None,
                      workload.quotas.violations(self.objects.quotas, self.quota_bound)
                      if workload.quotas is not None else None,
                      self.in_reservations if workload.reservations else None,
                      self.restore_seconds)

    def time_restore(self, plugin: ReservationPlugin) -> None:
        """Record how long each cycle's restore step (Reservation's BeforePreFilter) takes."""
        original = plugin.before_pre_filter
        durations = self.restore_seconds

        def timed(state: Any, pod: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return original(state, pod)
            finally:
                durations.append(time.perf_counter() - t0)

        plugin.before_pre_filter = timed  # type: ignore[method-assign]


def default_profile(workload: Workload) -> str:
    return SHIPPED if (workload.gangs is not None or workload.quotas is not None
                       or workload.reservations) else BENCH


def shipped_config() -> KubeSchedulerConfiguration:
    """Upstream's shipped configuration (the ConfigMap's key), leader election off."""
    path = upstream_data_dir().joinpath(*SHIPPED_CONFIG)
    config = yaml.safe_load(yaml.safe_load(path.read_text())["data"][SHIPPED_CONFIG_KEY])
    config.setdefault("leaderElection", {})["leaderElect"] = False
    return decode_scheduler_config(config, source=str(path))


def config_for(workload: Workload, profile: str | None = None) -> KubeSchedulerConfiguration:
    if (profile or default_profile(workload)) == SHIPPED:
        return shipped_config()
    entry = "{name: LoadAwareScheduling}" if workload.node_metrics else ""
    names = {"filter": entry, "score": entry, "reserve": entry}
    return load_scheduler_config(PROFILE % names, source=f"bench profile {workload.name}")


def timed_pop(fwk_queue: Any, on_pop: Callable[[str], None]) -> None:
    """Have the queue report each pod it hands to the scheduler (its key)."""
    original_pop = fwk_queue.pop

    def pop(timeout: float | None = None) -> Any:
        qpi = original_pop(timeout)
        if qpi is not None:
            on_pop(qpi.key)
        return qpi

    fwk_queue.pop = pop


def _now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _set_node_metrics(plugin: LoadAwareScheduling, objects: Objects) -> None:
    now = _now_rfc3339()
    per_node: dict[str, list[dict]] = {}
    for p in objects.existing:
        per_node.setdefault(p["spec"]["nodeName"], []).append(p)
    for i, n in enumerate(objects.nodes):
        name = n["metadata"]["name"]
        pods = per_node.get(name, [])
        plugin.cache.set_node_metric(node_metric(
            name, cpu_milli=300 + (i * 37) % 1200, memory=(2 + i % 8) * 1024 ** 3,
            update_time=now, pods=[(p["metadata"]["name"], 80, 400 * 1024 ** 2)
                                   for p in pods]))


def run_in_process(workload: Workload, *, profile: str | None = None, seed: int = 1
                   ) -> Result:
    profile = profile or default_profile(workload)
    objects = workload.build(seed)
    informer_events: queue.Queue[dict[str, Any] | None] = queue.Queue()
    progress = Progress(objects, workload.pods)

    built = build_scheduler(config_for(workload, profile),
                            binder=InMemoryBinder(on_bind=informer_events.put))
    sched, handlers = built.scheduler, built.handlers
    fwk: Framework = sched.profiles[SCHEDULER_NAME]
    load_aware = fwk.plugin("LoadAwareScheduling")
    gangs = fwk.plugin("Coscheduling")
    quotas = fwk.plugin("ElasticQuota")
    reservation = fwk.plugin("Reservation")
    # The plugins' own pod handlers, in the order an informer would call them.
    pod_listeners: list[ResourceEventHandler] = []
    if isinstance(load_aware, LoadAwareScheduling):
        pod_listeners.append(load_aware.cache.pod_handler())
    if isinstance(gangs, Coscheduling):
        pod_listeners.append(gangs.cache.pod_handler())
        pod_group_listeners = [gangs.cache.pod_group_handler(),
                               handlers.custom_resource_handler(POD_GROUP)]
        for pg in objects.pod_groups:
            for pg_listener in pod_group_listeners:
                pg_listener.on_add(pg, True)
    node_listeners: list[ResourceEventHandler] = []
    if isinstance(quotas, ElasticQuota):
        pod_listeners.append(quotas.feeder.pod_handler())
        node_listeners.append(quotas.feeder.node_handler())
        quota_listeners = [quotas.feeder.quota_handler(),
                           handlers.custom_resource_handler(ELASTIC_QUOTA)]
        for q in objects.quotas:
            for quota_listener in quota_listeners:
                quota_listener.on_add(q, True)
    if isinstance(reservation, ReservationPlugin):
        reservation.cache.adapter = handlers
        cache = reservation.cache
        pod_listeners.append(EventHandlerFuncs(add=cache.on_pod,
                                               update=lambda _, new: cache.on_pod(new)))
        progress.time_restore(reservation)
    for n in objects.nodes:
        for listener in node_listeners:
            listener.on_add(n, True)
        handlers.add_node(n)
    for p in objects.existing:
        for listener in pod_listeners:
            listener.on_add(p, True)
        handlers.add_pod_to_cache(p)
    if isinstance(load_aware, LoadAwareScheduling) and workload.node_metrics:
        _set_node_metrics(load_aware, objects)
    if isinstance(reservation, ReservationPlugin):
        for r in objects.reservations:
            reservation.cache.update_reservation(Reservation.model_validate(r))
    pending = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p
               for p in objects.todo}

    def informer() -> None:
        while True:
            pod = informer_events.get()
            if pod is None:
                return
            meta = pod["metadata"]
            key = f"{meta['namespace']}/{meta['name']}"
            old = pending[key]
            for listener in pod_listeners:
                listener.on_update(old, pod)
            handlers.delete_pod_from_queue(old)
            handlers.add_pod_to_cache(pod)
            progress.bound(key, meta["name"], meta.get("annotations"))

    feeder = threading.Thread(target=informer, name="informer", daemon=True)
    feeder.start()
    for p in objects.todo:
        for listener in pod_listeners:
            listener.on_add(p, True)
        handlers.add_pod_to_queue(p)
    stop = threading.Event()
    queue_threads = sched.queue.run(stop)
    timed_pop(sched.queue, progress.popped)
    progress.start()
    while not progress.done.is_set():
        if sched.schedule_one(timeout=0.2):
            continue
        now = time.perf_counter()
        if now - progress.last_bound > STALL_SECONDS or (
                now - progress.t0 > 5 and sched.queue.pending_pods()["active"] == 0
                and workload.gangs is None and sched.wait_for_bindings(0.5)):
            break  # nothing left that can be scheduled
    elapsed = time.perf_counter() - progress.t0
    stop.set()
    sched.stop()
    informer_events.put(None)
    feeder.join()
    for t in queue_threads:
        t.join(timeout=2)
    return progress.result(workload, "in-process", profile, elapsed)
