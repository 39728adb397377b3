"""Samples the local cluster while a scenario runs: per node allocatable, requested and used
CPU and memory, batch allocatable and requested, BE usage and suppression (no upstream
counterpart; what a user would read from ``kubectl get node/nodemetric`` and koordlet's
``/metrics`` over time).

Every number comes from the API server's objects, except the BE suppression, which is koordlet's
``koordlet_be_suppress_cpu_cores`` gauge. Used CPU and memory are the NodeMetric's
``nodeUsage`` (koordlet's window average). ``online_used_cpu`` is what the node would use with
online services only: its ``systemUsage`` plus its non-BE pods' usage (those pods live through
the whole window, so their averages add up to the node's; a batch pod that ran for part of the
window would not). ``be_used_cpu`` is the rest of ``nodeUsage``.

NodeMetric usage is clamped to [0, allocatable] and the node flagged (``metric_problems``) when
it is not: the API server accepts ``cpu: 1e30`` as kube-apiserver does, and one such report
must not turn the cluster's utilisation into 1.7e29 %. A usage that is no usable quantity
counts as no NodeMetric.

The scenario's ElasticQuotas (labelled as its own by ``bootstrap``) are sampled too: ``spec.min``
and ``spec.max``, and what koord-scheduler writes back (§8.8 of its ElasticQuota plugin): the
``runtime`` and ``request`` annotations and ``status.used``.

For koord-descheduler: its PodMigrationJobs at every sample (kept once deleted), where each pod
was bound at every tick of the driver (an evicted pod's node is known after it is gone), and
for each PodDisruptionBudget with an int ``minAvailable`` the fewest of its pods available
(Ready, not being deleted) at any tick once its workload was first up.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from api.extension.elastic_quota import (
    ANNOTATION_REQUEST,
    ANNOTATION_RUNTIME,
    parse_quota_resource_list,
)
from api.extension.resource import BATCH_CPU, BATCH_MEMORY
from pkg.client.resources import (
    ELASTIC_QUOTAS,
    NODE_METRICS,
    NODES,
    POD_DISRUPTION_BUDGETS,
    POD_MIGRATION_JOBS,
    PODS,
)
from pkg.client.rest import Client
from pkg.util.podresources import CPU, MEMORY, quantity_int, sum_requests
from test.e2e.cluster import scrape_gauge

from .workload import LABEL_KIND, QUOTA

SUPPRESS_GAUGE = "koordlet_be_suppress_cpu_cores"
TERMINAL = ("Succeeded", "Failed")
Obj = dict[str, Any]
GI = float(1 << 30)


@dataclass(slots=True)
class NodeSample:
    """One node at one instant. CPU in cores, memory in GiB."""

    allocatable_cpu: float = 0.0
    allocatable_memory: float = 0.0
    batch_allocatable_cpu: float = 0.0
    batch_allocatable_memory: float = 0.0
    requested_cpu: float = 0.0
    requested_memory: float = 0.0
    requested_batch_cpu: float = 0.0
    requested_batch_memory: float = 0.0
    used_cpu: float | None = None
    used_memory: float | None = None
    online_used_cpu: float | None = None
    be_used_cpu: float | None = None
    metric_update_time: str | None = None
    be_suppress_cpu: float | None = None
    pods: int = 0
    # What was wrong with the NodeMetric's usage (clamped, or ignored): "cpu usage '1e30' ...".
    metric_problems: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Amounts:
    """CPU in cores and memory in GiB of one of a quota's resource lists; None where the list
    has no such entry (the scheduler has not written it yet) or it is no quantity."""

    cpu: float | None = None
    memory: float | None = None


@dataclass(slots=True)
class QuotaSample:
    """One ElasticQuota at one instant."""

    min: Amounts
    max: Amounts
    runtime: Amounts  # annotation quota.scheduling.koordinator.sh/runtime
    used: Amounts  # status.used
    request: Amounts  # annotation quota.scheduling.koordinator.sh/request

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> QuotaSample:
        return QuotaSample(**{k: Amounts(**v) for k, v in obj.items()})


@dataclass(slots=True)
class Sample:
    t: float  # seconds into the day
    nodes: dict[str, NodeSample] = field(default_factory=dict)
    phases: dict[str, dict[str, int]] = field(default_factory=dict)  # kind → phase → count
    quotas: dict[str, QuotaSample] = field(default_factory=dict)  # by quota name

    def to_json(self) -> Obj:
        return {"t": self.t, "phases": self.phases,
                "nodes": {n: asdict(s) for n, s in self.nodes.items()},
                "quotas": {q: asdict(s) for q, s in self.quotas.items()}}

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> Sample:
        return Sample(obj["t"], {n: NodeSample(**s) for n, s in obj["nodes"].items()},
                      obj["phases"], {q: QuotaSample.from_json(s)
                                      for q, s in (obj.get("quotas") or {}).items()})


def _q(resource: str, value: Any) -> float:
    return float(quantity_int(resource, value))


def _cores(resources: Mapping[str, Any], name: str = CPU) -> float:
    """cpu and kubernetes.io/batch-cpu are both counted in milli-cores by quantity_int."""
    return _q(name, resources[name]) / 1000 if name in resources else 0.0


def _gib(resources: Mapping[str, Any], name: str = MEMORY) -> float:
    return _q(name, resources[name]) / GI if name in resources else 0.0


class _Usage:
    """Reads NodeMetric usages clamped to one node's allocatable, noting what it clamped."""

    def __init__(self, cpu_limit: float, memory_limit: float) -> None:
        self.limits = {CPU: (cpu_limit, 1000.0), MEMORY: (memory_limit, GI)}
        self.problems: list[str] = []

    def __call__(self, resources: Mapping[str, Any], name: str, what: str) -> float | None:
        """Cores or GiB of ``name`` in ``resources`` (0 when absent); None when unreadable."""
        if name not in resources:
            return 0.0
        q = resources[name]
        limit, scale = self.limits[name]
        try:
            value = _q(name, q) / scale
        except (ValueError, ArithmeticError):  # float() of 1e400 overflows
            self.problems.append(f"{what} {name} usage {q!r} is no usable quantity: ignored")
            return None
        if value < 0:
            self.problems.append(f"{what} {name} usage {q!r} is negative: counted as 0")
            return 0.0
        if value > limit:
            self.problems.append(f"{what} {name} usage {q!r} is above allocatable "
                                 f"({limit:g}): counted as {limit:g}")
            return limit
        return value


def node_sample(node: Obj, pods: Iterable[Obj], metric: Obj | None) -> NodeSample:
    alloc = (node.get("status") or {}).get("allocatable") or {}
    s = NodeSample(allocatable_cpu=_cores(alloc), allocatable_memory=_gib(alloc),
                   batch_allocatable_cpu=_cores(alloc, BATCH_CPU),
                   batch_allocatable_memory=_gib(alloc, BATCH_MEMORY))
    live = [p for p in pods if (p.get("status") or {}).get("phase") not in TERMINAL]
    req = sum_requests(live)
    s.pods = len(live)
    s.requested_cpu = req.get(CPU, 0) / 1000
    s.requested_memory = req.get(MEMORY, 0) / GI
    s.requested_batch_cpu = req.get(BATCH_CPU, 0) / 1000
    s.requested_batch_memory = req.get(BATCH_MEMORY, 0) / GI
    status = (metric or {}).get("status") or {}
    node_metric = status.get("nodeMetric") or {}
    usage = (node_metric.get("nodeUsage") or {}).get("resources")
    if usage:
        read = _Usage(s.allocatable_cpu, s.allocatable_memory)
        used_cpu, s.used_memory = read(usage, CPU, "node"), read(usage, MEMORY, "node")
        system = (node_metric.get("systemUsage") or {}).get("resources") or {}
        parts = [read(system, CPU, "system")] + [
            read((p.get("podUsage") or {}).get("resources") or {}, CPU,
                 f"pod {p.get('namespace')}/{p.get('name')}")
            for p in status.get("podsMetric") or [] if p.get("qos") != "BE"]
        s.metric_problems = read.problems
        if used_cpu is not None:
            s.used_cpu = used_cpu
            s.metric_update_time = status.get("updateTime")
            online = sum(p for p in parts if p is not None)
            # Pods younger than the window average over their own life, so right after online
            # pods start their sum can pass the node's window average: never more than the
            # node.
            s.online_used_cpu = min(online, used_cpu)
            s.be_used_cpu = max(0.0, used_cpu - s.online_used_cpu)
    return s


def _amounts(resources: Mapping[str, Any]) -> Amounts:
    def read(name: str, scale: float) -> float | None:
        if name not in resources:
            return None
        try:
            return _q(name, resources[name]) / scale
        except (ValueError, ArithmeticError):
            return None

    return Amounts(read(CPU, 1000.0), read(MEMORY, GI))


def quota_sample(quota: Obj) -> QuotaSample:
    spec = quota.get("spec") or {}
    annotations = (quota.get("metadata") or {}).get("annotations") or {}
    return QuotaSample(
        min=_amounts(spec.get("min") or {}), max=_amounts(spec.get("max") or {}),
        runtime=_amounts(parse_quota_resource_list(annotations, ANNOTATION_RUNTIME)),
        used=_amounts((quota.get("status") or {}).get("used") or {}),
        request=_amounts(parse_quota_resource_list(annotations, ANNOTATION_REQUEST)))


def pods_by_node(pods: Iterable[Obj]) -> dict[str, list[Obj]]:
    out: dict[str, list[Obj]] = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            out.setdefault(node, []).append(pod)
    return out


def phase_counts(pods: Iterable[Obj]) -> dict[str, dict[str, int]]:
    """The workload's pods (online, batch) by phase."""
    out: dict[str, dict[str, int]] = {}
    for pod in pods:
        kind = ((pod.get("metadata") or {}).get("labels") or {}).get(LABEL_KIND)
        if kind is None:
            continue
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        by_phase = out.setdefault(kind, {})
        by_phase[phase] = by_phase.get(phase, 0) + 1
    return out


@dataclass(slots=True)
class PdbWatch:
    """A PodDisruptionBudget's pods as the driver saw them at every tick: the fewest available
    (Ready, not being deleted) once its workload first had ``minAvailable`` up."""

    namespace: str
    name: str
    selector: dict[str, str]  # spec.selector.matchLabels
    min_available: int
    up: bool = False  # the workload had minAvailable available once
    lowest: int | None = None
    lowest_at: float | None = None

    def selects(self, pod: Obj) -> bool:
        md = pod.get("metadata") or {}
        labels = md.get("labels") or {}
        return md.get("namespace") == self.namespace and all(
            labels.get(k) == v for k, v in self.selector.items())

    def observe(self, t: float, pods: Iterable[Obj]) -> None:
        available = sum(1 for p in pods if self.selects(p) and is_available(p))
        self.up = self.up or available >= self.min_available
        if self.up and (self.lowest is None or available < self.lowest):
            self.lowest, self.lowest_at = available, t


def is_available(pod: Obj) -> bool:
    """Ready and not being deleted: what a PodDisruptionBudget counts as healthy."""
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or ())


class Recorder:
    def __init__(self, client: Client, koordlet_metrics: Mapping[str, str],
                 quotas: bool = False) -> None:
        self.client = client
        self.koordlet_metrics = koordlet_metrics
        self.quotas = quotas  # whether to sample the scenario's ElasticQuotas
        self.samples: list[Sample] = []
        # Where each pod was bound, as seen at any tick: an evicted pod's node outlives it.
        self.pod_nodes: dict[tuple[str, str], str] = {}
        self.pdbs: dict[tuple[str, str], PdbWatch] = {}
        # koord-descheduler's PodMigrationJobs by name, as last seen (a deleted one stays).
        self.jobs: dict[str, Obj] = {}
        # The UIDs of the workload's pods a controller (a Deployment's ReplicaSet) created.
        self.controlled: set[str] = set()

    def list_pods(self) -> list[Obj]:
        return self.client.list(PODS)["items"]

    def observe(self, t: float, pods: list[Obj]) -> None:
        """Every tick: the pods' nodes, the workload's pods a controller created and the
        PodDisruptionBudgets' available pods."""
        for pod in pods:
            md = pod["metadata"]
            if node := (pod.get("spec") or {}).get("nodeName"):
                self.pod_nodes[(md["namespace"], md["name"])] = node
            if LABEL_KIND in (md.get("labels") or {}) and any(
                    ref.get("controller") for ref in md.get("ownerReferences") or ()):
                self.controlled.add(md["uid"])
        for watch in self.pdbs.values():
            watch.observe(t, pods)

    def sample_descheduling(self) -> None:
        """The PodMigrationJobs and the PodDisruptionBudgets to watch (new ones from now on;
        an int minAvailable only)."""
        for job in self.client.list(POD_MIGRATION_JOBS)["items"]:
            self.jobs[job["metadata"]["name"]] = job
        for pdb in self.client.list(POD_DISRUPTION_BUDGETS)["items"]:
            md, spec = pdb["metadata"], pdb.get("spec") or {}
            key = (md["namespace"], md["name"])
            if key not in self.pdbs and isinstance(spec.get("minAvailable"), int):
                self.pdbs[key] = PdbWatch(md["namespace"], md["name"], dict(
                    (spec.get("selector") or {}).get("matchLabels") or {}),
                    spec["minAvailable"])

    def sample(self, t: float, pods: list[Obj], scrape: bool = True) -> Sample:
        """One sample from the given pod list and freshly listed nodes and NodeMetrics."""
        nodes = self.client.list(NODES)["items"]
        metrics = {m["metadata"]["name"]: m for m in self.client.list(NODE_METRICS)["items"]}
        by_node = pods_by_node(pods)
        s = Sample(t, phases=phase_counts(pods))
        for node in nodes:
            name = node["metadata"]["name"]
            ns = node_sample(node, by_node.get(name, []), metrics.get(name))
            if scrape and name in self.koordlet_metrics:
                ns.be_suppress_cpu = scrape_gauge(self.koordlet_metrics[name] + "/metrics",
                                                  SUPPRESS_GAUGE)
            s.nodes[name] = ns
        self.sample_descheduling()
        if self.quotas:
            for quota in self.client.list(ELASTIC_QUOTAS,
                                          label_selector=f"{LABEL_KIND}={QUOTA}")["items"]:
                s.quotas[quota["metadata"]["name"]] = quota_sample(quota)
        self.samples.append(s)
        return s
