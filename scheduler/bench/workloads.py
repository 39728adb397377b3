"""scheduler_perf-style workloads: nodes, existing pods and pods to schedule, as parsed JSON.

Corresponds to kubernetes ``test/integration/scheduler_perf`` (``config/performance-config.yaml``
and the node/pod templates ``node-default.yaml`` and ``pod-default.yaml``): nodes with 4 cpu,
32Gi memory and 110 pods; pods asking 100m cpu and 500Mi memory. Each workload names its
nodes, the pods already bound, and the pods to schedule.

The gang workloads (``GangScheduling_<gangs>x<members>``) follow Volcano's gang benchmarks:
nodes with 32 cpu, and PodGroups (``scheduling.sigs.k8s.io/v1alpha1``) whose members carry the
``pod-group.scheduling.sigs.k8s.io`` label. Each also has one gang that cannot fit: its
members may only go to three nodes, each with room for one of them, and it needs four.

The quota workloads (``ElasticQuota_<pods>x<leaves>``) follow Kueue's CI gate (15,000 workloads
in 30 ClusterQueues of 5 cohorts): parent ElasticQuotas (``is-parent``), each with leaf quotas
sharing it, on the scheduler_perf nodes; every pod carries its leaf's
``quota.scheduling.koordinator.sh/name`` label. A leaf's min is 40% of what its pods ask and
its max 120%, except the last leaf of each parent, capped at a given share; a parent's max is a
given share of what its leaves may ask. At 100% both (as in Kueue's gate, every workload is
admitted) every leaf borrows beyond its min and the capped leaves and the parents end exactly
at their max; below 100%, the leaves share their parent by weight (§8.3) and the pods their
quotas do not admit stay pending. The sums fit the cluster: every admitted pod fits a node.

The Reservation workload (``Reservation_<reservations>x<pods>``, issue 18, after koordinator#3032
where Reservation slowed the scheduler): on the scheduler_perf nodes, ``Available``
Reservations (``scheduling.koordinator.sh/v1alpha1``), one per node from ``node-0`` on, each
holding room for a few scheduler_perf pods (``allocateOnce: false``) for the pods labelled
``app: rsv-<k>``, ``RESERVATION_APPS`` such labels in turn; half the pods to schedule carry one
of those labels (so each may use any of a dozen Reservations on as many nodes), the other half
match none. The Reservations hold room for every matching pod.
"""

from __future__ import annotations

import functools
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from api.extension.coscheduling import LABEL_POD_GROUP
from api.extension.elastic_quota import LABEL_QUOTA_IS_PARENT, LABEL_QUOTA_NAME, LABEL_QUOTA_PARENT
from pkg.util.podresources import CPU, MEMORY, resource_list
from scheduler.apis.config import ElasticQuotaArgs
from scheduler.plugins.elasticquota.core import GroupQuotaManager

SCHEDULER_NAME = "koord-scheduler"
NAMESPACE = "bench"
ZONES = 10
UNFIT_GANG = "unfit"
# The unfit gang: members of 20 cpu pinned to three 32-cpu nodes (one member fits on each),
# four needed; a short timeout sends its waiting members back often.
UNFIT_NODES = 3
UNFIT_CPU = "20"
UNFIT_TIMEOUT_SECONDS = 5


def node(i: int, *, zones: int = ZONES, cpu: str = "4",
         memory: str = "32Gi") -> dict[str, Any]:
    name = f"node-{i}"
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1", "labels": {
            "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
            "topology.kubernetes.io/zone": f"zone-{i % zones}",
            "node-group": "a" if i % 2 == 0 else "b"}},
        "spec": {},
        "status": {"capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
                   "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True"}]},
    }


def pod(name: str, *, node_name: str = "", labels: dict[str, str] | None = None,
        affinity: dict[str, Any] | None = None,
        spread: list[dict[str, Any]] | None = None, cpu: str = "100m",
        memory: str = "500Mi") -> dict[str, Any]:
    resources = {"cpu": cpu, "memory": memory}
    spec: dict[str, Any] = {
        "schedulerName": SCHEDULER_NAME, "priority": 0,
        "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": resources, "limits": dict(resources)}}],
    }
    if node_name:
        spec["nodeName"] = node_name
    if affinity:
        spec["affinity"] = affinity
    if spread:
        spec["topologySpreadConstraints"] = spread
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NAMESPACE, "uid": f"uid-{name}",
                         "resourceVersion": "1", "labels": labels or {"app": "bench"}},
            "spec": spec, "status": {"phase": "Running" if node_name else "Pending"}}


def node_metric(node_name: str, *, cpu_milli: int, memory: int, update_time: str,
                pods: Sequence[tuple[str, int, int]] = ()) -> dict[str, Any]:
    """A NodeMetric as koordlet reports it (usage of the node and of its pods)."""
    return {
        "apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric",
        "metadata": {"name": node_name, "resourceVersion": "1"},
        "spec": {"metricCollectPolicy": {"reportIntervalSeconds": 60}},
        "status": {"updateTime": update_time,
                   "nodeMetric": {"nodeUsage": {"resources": {
                       "cpu": f"{cpu_milli}m", "memory": str(memory)}}},
                   "podsMetric": [{"namespace": NAMESPACE, "name": n, "podUsage": {"resources": {
                       "cpu": f"{c}m", "memory": str(m)}}} for n, c, m in pods]},
    }


# A Reservation workload: each Reservation holds room for this many scheduler_perf pods, and
# the matching pods' owner labels take this many values (Reservations per label: count / apps).
RESERVATION_PODS = 3
RESERVATION_APPS = 160


def reservation(name: str, node_name: str, app: str, pods: int = RESERVATION_PODS
                ) -> dict[str, Any]:
    """An Available Reservation on ``node_name`` for the pods labelled ``app``, as
    koord-scheduler leaves it once bound (status written at Bind, §7.8)."""
    held = {CPU: f"{pods * QUOTA_POD_CPU_MILLI}m", MEMORY: f"{pods * QUOTA_POD_MEMORY_MI}Mi"}
    return {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Reservation",
        "metadata": {"name": name, "uid": f"uid-rsv-{name}", "resourceVersion": "1",
                     "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"template": {"metadata": {"namespace": NAMESPACE}, "spec": {
                     "schedulerName": SCHEDULER_NAME, "containers": [{
                         "name": "pause", "resources": {"requests": dict(held),
                                                        "limits": dict(held)}}]}},
                 "owners": [{"labelSelector": {"matchLabels": {"app": app}}}],
                 "allocateOnce": False, "ttl": "0s"},
        "status": {"phase": "Available", "nodeName": node_name, "allocatable": dict(held),
                   "conditions": [
                       {"type": "Scheduled", "status": "True", "reason": "Scheduled"},
                       {"type": "Ready", "status": "True", "reason": "Available"}]},
    }


def pod_group(name: str, min_member: int, *, timeout_seconds: int | None = None
              ) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member}
    if timeout_seconds is not None:
        spec["scheduleTimeoutSeconds"] = timeout_seconds
    return {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": NAMESPACE, "uid": f"uid-pg-{name}",
                         "resourceVersion": "1"},
            "spec": spec}


def elastic_quota(name: str, *, min_: Mapping[str, str], max_: Mapping[str, str],
                  parent: str = "", is_parent: bool = False) -> dict[str, Any]:
    labels = {LABEL_QUOTA_PARENT: parent} if parent else {}
    if is_parent:
        labels[LABEL_QUOTA_IS_PARENT] = "true"
    return {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "ElasticQuota",
            "metadata": {"name": name, "namespace": NAMESPACE, "uid": f"uid-eq-{name}",
                         "resourceVersion": "1", "labels": labels},
            "spec": {"min": dict(min_), "max": dict(max_)}}


# A quota workload's pods: scheduler_perf's pod, in milli-cpu and MiB.
QUOTA_POD_CPU_MILLI = 100
QUOTA_POD_MEMORY_MI = 500


@dataclass(frozen=True, slots=True)
class Quotas:
    """``parents`` parent ElasticQuotas of ``leaves`` leaf quotas each, the pods spread evenly
    over the leaves; the last leaf's max and each parent's max in percent of what their pods
    ask."""

    parents: int
    leaves: int
    capped: int = 100
    parent: int = 100

    def leaf_names(self) -> list[str]:
        return [f"quota-{p}-{leaf}" for p in range(self.parents) for leaf in range(self.leaves)]

    def build(self, pods: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]],
                                        dict[str, str]]:
        """The quotas (parents first), their pods, and each pod's leaf."""
        per_leaf = pods // (self.parents * self.leaves)
        cpu, memory = per_leaf * QUOTA_POD_CPU_MILLI, per_leaf * QUOTA_POD_MEMORY_MI
        quotas: list[dict[str, Any]] = []
        leaves: list[dict[str, Any]] = []
        for p in range(self.parents):
            # The others may borrow up to 120% of what their pods ask.
            caps = [cpu * 6 // 5] * (self.leaves - 1) + [cpu * self.capped // 100]
            leaves += [elastic_quota(
                f"quota-{p}-{leaf}", parent=f"quota-{p}",
                min_={CPU: f"{cpu * 2 // 5}m", MEMORY: f"{memory * 2 // 5}Mi"},
                max_={CPU: f"{cap}m", MEMORY: f"{memory * 2}Mi"}) for leaf, cap in enumerate(caps)]
            asked = sum(min(cpu, cap) for cap in caps)
            quotas.append(elastic_quota(
                f"quota-{p}", is_parent=True,
                min_={CPU: f"{cpu * 2 // 5 * self.leaves}m",
                      MEMORY: f"{memory * 2 // 5 * self.leaves}Mi"},
                max_={CPU: f"{asked * self.parent // 100}m",
                      MEMORY: f"{memory * 2 * self.leaves}Mi"}))
        todo = [pod(f"{leaf}-{j}", labels={LABEL_QUOTA_NAME: leaf},
                    cpu=f"{QUOTA_POD_CPU_MILLI}m", memory=f"{QUOTA_POD_MEMORY_MI}Mi")
                for leaf in self.leaf_names() for j in range(per_leaf)]
        quota_of = {p["metadata"]["name"]: p["metadata"]["labels"][LABEL_QUOTA_NAME]
                    for p in todo}
        return quotas + leaves, todo, quota_of

    def violations(self, quotas: list[dict[str, Any]], bound: Counter[str]) -> int:
        """Pods bound beyond a quota's max (a parent's: its leaves' pods), over every quota."""
        request = {CPU: QUOTA_POD_CPU_MILLI, MEMORY: QUOTA_POD_MEMORY_MI * 2**20}
        over = 0
        for q in quotas:
            name = q["metadata"]["name"]
            max_ = resource_list(q["spec"]["max"])
            room = min(max_[k] // v for k, v in request.items())
            pods = sum(n for leaf, n in bound.items()
                       if leaf == name or leaf.startswith(f"{name}-"))
            over += max(0, pods - room)
        return over


@functools.cache
def quota_fitting(quotas: Quotas, nodes: int, pods: int) -> int:
    """How many of the pods their quotas admit: each leaf's runtime once every pod is known
    (it does not move while they bind), as the plugin's tree computes it with its defaults."""
    tree = GroupQuotaManager.from_args(ElasticQuotaArgs())
    for i in range(nodes):
        tree.on_node_add(node(i))
    objects, todo, quota_of = quotas.build(pods)
    for q in objects:
        tree.update_quota(q)
    for p in todo:
        tree.on_pod_add(quota_of[p["metadata"]["name"]], p)
    per_leaf = Counter(quota_of.values())
    fitting = 0
    for leaf, count in per_leaf.items():
        runtime = tree.refresh_runtime(leaf) or {}
        fitting += min(count, runtime.get(CPU, 0) // QUOTA_POD_CPU_MILLI,
                       runtime.get(MEMORY, 0) // (QUOTA_POD_MEMORY_MI * 2**20))
    return fitting


@dataclass(frozen=True, slots=True)
class Gangs:
    """``count`` PodGroups of ``members`` pods each (minMember = members), and one that cannot
    fit."""

    count: int
    members: int


@dataclass(slots=True)
class Objects:
    """What a workload creates: the pods to schedule are shuffled, gang members included."""

    nodes: list[dict[str, Any]]
    existing: list[dict[str, Any]]
    todo: list[dict[str, Any]]
    pod_groups: list[dict[str, Any]] = field(default_factory=list)
    gang_of: dict[str, str] = field(default_factory=dict)  # pod name → PodGroup name
    quotas: list[dict[str, Any]] = field(default_factory=list)  # ElasticQuotas, parents first
    quota_of: dict[str, str] = field(default_factory=dict)  # pod name → leaf quota name
    reservations: list[dict[str, Any]] = field(default_factory=list)  # Available ones

    @property
    def unfit(self) -> frozenset[str]:
        """Names of the pods of the gang that cannot fit."""
        return frozenset(p for p, g in self.gang_of.items() if g == UNFIT_GANG)


def _gang_pods(gangs: Gangs) -> tuple[list[dict[str, Any]], list[dict[str, Any]],
                                      dict[str, str]]:
    groups = [pod_group(f"gang-{g}", gangs.members) for g in range(gangs.count)]
    pods = [pod(f"gang-{g}-{m}", labels={LABEL_POD_GROUP: f"gang-{g}"}, cpu="1", memory="2Gi")
            for g in range(gangs.count) for m in range(gangs.members)]
    need = UNFIT_NODES + 1
    groups.append(pod_group(UNFIT_GANG, need, timeout_seconds=UNFIT_TIMEOUT_SECONDS))
    pinned = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{
            "key": "kubernetes.io/hostname", "operator": "In",
            "values": [f"node-{i}" for i in range(UNFIT_NODES)]}]}]}}}
    pods += [pod(f"{UNFIT_GANG}-{m}", labels={LABEL_POD_GROUP: UNFIT_GANG}, affinity=pinned,
                 cpu=UNFIT_CPU, memory="2Gi") for m in range(need)]
    gang_of = {p["metadata"]["name"]: p["metadata"]["labels"][LABEL_POD_GROUP] for p in pods}
    return groups, pods, gang_of


@dataclass
class Workload:
    name: str
    nodes: int
    existing: int
    to_schedule: int
    make_pod: Callable[[str], dict[str, Any]] = pod
    node_metrics: bool = False
    gangs: Gangs | None = None
    quotas: Quotas | None = None
    reservations: int = 0  # Available Reservations (Reservation workloads)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def pods(self) -> int:
        """How many pods the run schedules (the unfit gang's pods, and the pods their quotas do
        not admit, not counted)."""
        if self.gangs:
            return self.gangs.count * self.gangs.members
        if self.quotas:
            return quota_fitting(self.quotas, self.nodes, self.to_schedule)
        return self.to_schedule

    def build(self, seed: int = 1) -> Objects:
        if self.quotas is not None:
            quotas, todo, quota_of = self.quotas.build(self.to_schedule)
            random.Random(seed).shuffle(todo)
            return Objects([node(i) for i in range(self.nodes)], [], todo, quotas=quotas,
                           quota_of=quota_of)
        if self.gangs is not None:
            nodes = [node(i, cpu="32", memory="128Gi") for i in range(self.nodes)]
            groups, todo, gang_of = _gang_pods(self.gangs)
            random.Random(seed).shuffle(todo)
            return Objects(nodes, [], todo, groups, gang_of)
        nodes = [node(i) for i in range(self.nodes)]
        if self.reservations:
            reservations = [reservation(f"rsv-{i}", f"node-{i % self.nodes}",
                                        f"rsv-{i % RESERVATION_APPS}")
                            for i in range(self.reservations)]
            todo = [self.make_pod(f"pod-{j}") if j % 2 else
                    pod(f"pod-{j}", labels={"app": f"rsv-{(j // 2) % RESERVATION_APPS}"})
                    for j in range(self.to_schedule)]
            random.Random(seed).shuffle(todo)
            return Objects(nodes, [], todo, reservations=reservations)
        existing = [dict(self.make_pod(f"init-{j}"), spec=dict(
            self.make_pod(f"init-{j}")["spec"], nodeName=f"node-{j % self.nodes}"))
            for j in range(self.existing)]
        for p in existing:
            p["status"] = {"phase": "Running"}
        todo = [self.make_pod(f"pod-{j}") for j in range(self.to_schedule)]
        random.Random(seed).shuffle(todo)
        return Objects(nodes, existing, todo)


def _affinity_pod(name: str) -> dict[str, Any]:
    return pod(name, affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "node-group", "operator": "In", "values": ["a"]}]}]}}})


def _spread_pod(name: str) -> dict[str, Any]:
    return pod(name, labels={"app": "spread"}, spread=[{
        "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "spread"}}}])


# Gangs × members on nodes: Volcano's two gang benchmarks, and many small gangs on many nodes.
GANG_WORKLOADS = ((20, 50, 100), (10, 100, 100), (1000, 10, 5000))
# Pods, parents × leaves each, nodes: Kueue's CI gate.
QUOTA_WORKLOADS = ((15000, 5, 6, 1000),)
# Available Reservations, pods to schedule (half of them matching), nodes: issue 18.
RESERVATION_WORKLOADS = ((2000, 10000, 5000),)


def workloads(nodes: int = 5000, existing: int = 1000, to_schedule: int = 10000
              ) -> dict[str, Workload]:
    return {
        "SchedulingBasic": Workload("SchedulingBasic", nodes, existing, to_schedule),
        "SchedulingLoadAware": Workload("SchedulingLoadAware", nodes, existing, to_schedule,
                                        node_metrics=True),
        "SchedulingNodeAffinity": Workload("SchedulingNodeAffinity", nodes, existing,
                                           to_schedule, make_pod=_affinity_pod),
        "TopologySpreading": Workload("TopologySpreading", nodes, existing, to_schedule,
                                      make_pod=_spread_pod),
        **{f"GangScheduling_{g}x{m}": Workload(f"GangScheduling_{g}x{m}", n, 0, 0,
                                                gangs=Gangs(g, m))
           for g, m, n in GANG_WORKLOADS},
        **{f"ElasticQuota_{p}x{parents * leaves}": Workload(
            f"ElasticQuota_{p}x{parents * leaves}", n, 0, p, quotas=Quotas(parents, leaves))
           for p, parents, leaves, n in QUOTA_WORKLOADS},
        **{f"Reservation_{r}x{p}": Workload(f"Reservation_{r}x{p}", n, 0, p, reservations=r)
           for r, p, n in RESERVATION_WORKLOADS},
    }
