"""The end-of-run report of the local cluster: text, JSON and a PNG (no upstream counterpart).

Built from the recorder's samples, the pods and the Events in the API server: per node
allocatable, requested and used over time; batch-cpu and batch-memory over time; where each pod
went and why (the scheduler's ``Scheduled``/``FailedScheduling`` events); BE suppression
(koordlet's gauge) and evictions (koordlet's ``evictPodSuccess`` events); cluster CPU
utilisation with co-location against the same workload with online services only (the
NodeMetric's node usage minus its BE pods' usage: the simulated online load does not depend on
the batch load, so the online-only run would measure exactly that). From the API server's
``/metrics`` (``api_access``): the requests it denied (403) by user, verb and resource, and the
requests each user made, which shows each component ran as its own ServiceAccount. With the
scenario's ElasticQuotas: each quota's min, max, runtime and used (what koord-scheduler writes
back) at the moments one of them changed, and the pods taken back from a quota, from the
events on them: ``Preempted`` (preemption within a quota) and ``Revoked`` (over-use
revocation). koord-descheduler's work (``descheduler_section``): each PodMigrationJob with the
pod's move from node to node and its outcome, each PodDisruptionBudget's fewest available pods
against its minAvailable, and the nodes' usage before the first job and at the end against
LowNodeLoad's thresholds; the PNG gets a panel of it when there was a job or a budget.
Memory QoS (``memory_qos``): what koordlet's CgroupReconcile wrote into each simulated node's
cgroup tree (``<workdir>/nodes/<node>/cgroup``, the fake v1 tree with an Anolis kernel's memcg
files), read back from the files at the end: per QoS class and group, each pod's
``memory.min``/``memory.low`` and its container's ``memory.high`` (finished pods keep the last
values written), and per node its kube-QoS dirs' ``memory.min``/``memory.low`` (the sums over
the pods running at the end).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from api.extension.qos import KubeQoSClass, get_kube_qos_class, get_pod_qos_class_with_default
from api.extension.reservation import ANNOTATION_RESERVATION_ALLOCATED
from koordlet.qosmanager.cgreconcile import pod_memory_request
from koordlet.util.system.fake_tree import MEMORY_UNLIMITED, fake_v1_env
from scheduler.plugins.elasticquota.quota_overuse_revoke import REVOKED_REASON
from test.apiserver.rbac import Denial, denials

from .recorder import NodeSample, PdbWatch, QuotaSample, Sample
from .workload import BACKFILL, GANG, LABEL_GROUP, LABEL_KIND, ROLLOUT

Obj = dict[str, Any]
EVICTED_REASON = "evictPodSuccess"  # koordlet's evictor event
PREEMPTED_REASON = "Preempted"  # kube-scheduler's event on a preemption victim
TIMELINE_ROWS = 10
QUOTA_TIMELINE_ROWS = 20


@dataclass(slots=True)
class NodeRow:
    node: str
    allocatable_cpu: float
    allocatable_memory: float
    batch_allocatable_cpu: float  # final
    batch_allocatable_memory: float
    batch_allocatable_cpu_min: float
    batch_allocatable_cpu_max: float
    requested_cpu: float  # final, non-terminated pods
    requested_memory: float
    requested_batch_cpu: float
    requested_batch_memory: float
    requested_batch_cpu_peak: float
    used_cpu: float | None  # final NodeMetric
    used_memory: float | None
    used_cpu_avg: float | None
    used_cpu_peak: float | None
    pods: int  # final, non-terminated
    # cpusuppress's cap on the BE cgroup (koordlet_be_suppress_cpu_cores): what the online
    # load leaves under the suppress threshold; the tightest one seen and when.
    be_cap_min: float | None
    be_cap_min_at: float | None
    be_cap_final: float | None
    # Distinct problems of the node's NodeMetric usage over the run (clamped or ignored).
    metric_problems: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ComponentRow:
    """A process of the local cluster and what the supervisor saw of it."""

    name: str
    restarts: int
    last_exit_code: int | None  # Popen's: negative for a signal
    last_exit: str  # "exit 1", "killed by SIGKILL", "" when it never exited


@dataclass(slots=True)
class LeaseRow:
    """Who holds a leader-election Lease at the end."""

    lease: str  # namespace/name
    holder: str  # the replica ("" when none holds it or the identity is unknown)
    identity: str  # spec.holderIdentity: <hostname>_<uuid>
    transitions: int  # spec.leaseTransitions


@dataclass(slots=True)
class ApiAccess:
    """Who asked the API server for what (test.apiserver's counters on ``/metrics``)."""

    denied: list[Denial]  # most denied first
    requests_by_user: dict[str, int]


DENIED_TOP = 5


def api_access(metrics_text: str) -> ApiAccess:
    """``apiserver_authorization_denied_total`` and ``apiserver_user_requests_total`` of the
    API server's ``/metrics`` text."""
    families = list(text_string_to_metric_families(metrics_text))
    by_user = {s.labels["user"]: int(s.value) for family in families for s in family.samples
               if s.name == "apiserver_user_requests_total"}
    return ApiAccess(denials(families), by_user)


@dataclass(slots=True)
class GangRow:
    """A gang job at the end: its PodGroup and its members."""

    gang: str  # namespace/name of the PodGroup
    members: int
    min_member: int
    bound: int
    running: int
    succeeded: int
    phase: str  # the PodGroup's status.phase ("" before the controller wrote one)
    # Distinct PodScheduled=False messages of members never bound, most frequent first.
    messages: list[str] = field(default_factory=list)


GANG_MESSAGES = 3


def _unschedulable_message(pod: Obj) -> str:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return str(c.get("message") or "")
    return ""


def gang_rows(pod_groups: Iterable[Obj], pods: Iterable[Obj]) -> list[GangRow]:
    """The scenario's PodGroups (labelled as gang jobs) and their member pods."""
    members: dict[str, list[Obj]] = {}
    for pod in pods:
        md = pod.get("metadata") or {}
        if (md.get("labels") or {}).get(LABEL_KIND) == GANG:
            key = f"{md.get('namespace')}/{(md.get('labels') or {}).get(LABEL_GROUP, '')}"
            members.setdefault(key, []).append(pod)
    rows = []
    for pg in pod_groups:
        md = pg.get("metadata") or {}
        if (md.get("labels") or {}).get(LABEL_KIND) != GANG:
            continue
        key = f"{md.get('namespace')}/{md.get('name')}"
        pods_of = members.get(key, [])
        phases = Counter((p.get("status") or {}).get("phase") or "Pending" for p in pods_of)
        unbound = [p for p in pods_of if not (p.get("spec") or {}).get("nodeName")]
        messages = Counter(m for m in map(_unschedulable_message, unbound) if m)
        rows.append(GangRow(
            key, len(pods_of), int((pg.get("spec") or {}).get("minMember") or 0),
            len(pods_of) - len(unbound), phases["Running"], phases["Succeeded"],
            str((pg.get("status") or {}).get("phase") or ""),
            [m for m, _ in messages.most_common(GANG_MESSAGES)]))
    return sorted(rows, key=lambda r: natural_key(r.gang))


@dataclass(slots=True)
class ReservationRow:
    """A rollout's Reservation at the end: where it held capacity and who consumed it."""

    name: str
    rollout: str
    node: str  # status.nodeName ("" while not scheduled)
    phase: str  # status.phase ("" before koord-scheduler wrote one)
    reason: str  # why it is not Available (the latest condition's reason), or ""
    owners: list[str]  # status.currentOwners, namespace/name


@dataclass(slots=True)
class RolloutRow:
    """A rollout's pods and its backfill's, and how many went into a Reservation."""

    rollout: str
    pods: int
    bound: int
    in_reservations: int  # pods carrying the reservation-allocated annotation
    backfill: int
    backfill_bound: int
    backfill_in_reservations: int  # must be 0: the capacity was held for the rollout
    backfill_waited: int  # backfill pods that were refused at least once
    backfill_messages: list[str] = field(default_factory=list)


def reservation_rows(reservations: Iterable[Obj]) -> list[ReservationRow]:
    """The scenario's Reservations (labelled as rollouts)."""
    rows = []
    for r in reservations:
        md = r.get("metadata") or {}
        labels = md.get("labels") or {}
        if labels.get(LABEL_KIND) != ROLLOUT:
            continue
        status = r.get("status") or {}
        phase = str(status.get("phase") or "")
        conditions = status.get("conditions") or []
        reason = str(conditions[-1].get("reason") or "") if conditions and \
            phase != "Available" else ""
        reason = "" if reason == phase else reason  # Succeeded (Succeeded) says nothing
        rows.append(ReservationRow(
            str(md.get("name")), str(labels.get(LABEL_GROUP, "")),
            str(status.get("nodeName") or ""), phase, reason,
            [f"{o.get('namespace')}/{o.get('name')}" for o in status.get("currentOwners") or ()]))
    return sorted(rows, key=lambda r: natural_key(r.name))


def rollout_rows(pods: Iterable[Obj], failed: Mapping[tuple[str, str], list[Obj]]
                 ) -> list[RolloutRow]:
    """Per rollout: its pods and its backfill's, bound and inside Reservations; ``failed``:
    the FailedScheduling events by pod."""
    rows: dict[str, RolloutRow] = {}
    messages: dict[str, Counter[str]] = {}
    for key, group, pod in _workload_pods(pods):
        kind = pod["metadata"]["labels"][LABEL_KIND]
        if kind not in (ROLLOUT, BACKFILL):
            continue
        rollout = group.removesuffix("-backfill") if kind == BACKFILL else group
        row = rows.setdefault(rollout, RolloutRow(rollout, 0, 0, 0, 0, 0, 0, 0))
        bound = bool((pod.get("spec") or {}).get("nodeName"))
        inside = ANNOTATION_RESERVATION_ALLOCATED in (pod["metadata"].get("annotations") or {})
        if kind == ROLLOUT:
            row.pods += 1
            row.bound += bound
            row.in_reservations += inside
            continue
        row.backfill += 1
        row.backfill_bound += bound
        row.backfill_in_reservations += inside
        refusals = [e.get("message", "") for e in failed.get(key, [])]
        if not refusals and (m := _unschedulable_message(pod)):
            refusals = [m]
        row.backfill_waited += bool(refusals)
        messages.setdefault(rollout, Counter()).update(refusals)
    for rollout, counter in messages.items():
        rows[rollout].backfill_messages = [m for m, _ in counter.most_common(GANG_MESSAGES)]
    return [rows[k] for k in sorted(rows, key=natural_key)]


@dataclass(slots=True)
class QuotaRow:
    """An ElasticQuota of the scenario over the run, in cores."""

    quota: str
    min_cpu: float | None  # final spec
    max_cpu: float | None
    peak_used_cpu: float | None
    peak_used_at: float | None  # seconds into the day
    runtime_cpu: float | None  # final figures the scheduler wrote back
    used_cpu: float | None
    request_cpu: float | None


@dataclass(slots=True)
class QuotaMoment:
    """The quotas' runtime and used cores at one sample (None: not written back yet)."""

    t: float
    runtime: dict[str, float | None]
    used: dict[str, float | None]


@dataclass(slots=True)
class Disruption:
    """A pod taken back: preempted (kube-scheduler's ``Preempted``) or revoked (ElasticQuota's
    ``Revoked``)."""

    pod: str  # namespace/name
    reason: str
    message: str
    t: float | None  # seconds into the day of the event (None: no run start known)


def quota_rows(samples: Sequence[Sample]) -> list[QuotaRow]:
    series: dict[str, list[tuple[float, QuotaSample]]] = {}
    for s in samples:
        for name, q in s.quotas.items():
            series.setdefault(name, []).append((s.t, q))
    rows = []
    for name in sorted(series, key=natural_key):
        points = series[name]
        final = points[-1][1]
        used = [(q.used.cpu, t) for t, q in points if q.used.cpu is not None]
        peak = max(used, key=lambda u: u[0]) if used else (None, None)
        rows.append(QuotaRow(name, final.min.cpu, final.max.cpu, peak[0], peak[1],
                             final.runtime.cpu, final.used.cpu, final.request.cpu))
    return rows


def quota_timeline(samples: Sequence[Sample]) -> list[QuotaMoment]:
    """The first sample, each sample where a quota's runtime or used changed, and the last;
    evenly thinned to ``QUOTA_TIMELINE_ROWS``."""
    moments: list[QuotaMoment] = []
    for s in samples:
        if not s.quotas:
            continue
        m = QuotaMoment(s.t, {n: q.runtime.cpu for n, q in s.quotas.items()},
                        {n: q.used.cpu for n, q in s.quotas.items()})
        if not moments or (m.runtime, m.used) != (moments[-1].runtime, moments[-1].used):
            moments.append(m)
    last = next((s for s in reversed(samples) if s.quotas), None)
    if last is not None and moments[-1].t != last.t:
        moments.append(QuotaMoment(last.t, {n: q.runtime.cpu for n, q in last.quotas.items()},
                                   {n: q.used.cpu for n, q in last.quotas.items()}))
    if len(moments) > QUOTA_TIMELINE_ROWS:
        step = len(moments) / (QUOTA_TIMELINE_ROWS - 1)
        moments = [moments[round(i * step)] for i in range(QUOTA_TIMELINE_ROWS - 1)] \
            + [moments[-1]]
    return moments


def _seconds_into_day(timestamp: str, epoch: float | None) -> float | None:
    if epoch is None or not timestamp:
        return None
    try:
        return datetime.fromisoformat(timestamp).timestamp() - epoch
    except ValueError:
        return None


def disruptions(events: Iterable[Obj], pods: Iterable[Obj],
                epoch: float | None = None) -> list[Disruption]:
    """Preempted and Revoked events on pods, in time order; a preemptor named by its UID in
    the message is named by namespace/name where it is still known."""
    names = {(p.get("metadata") or {}).get("uid"): "/".join(key)
             for key, _, p in _workload_pods(pods)}
    out = []
    for e in events:
        reason = e.get("reason")
        obj = e.get("involvedObject") or e.get("regarding") or {}
        if reason not in (PREEMPTED_REASON, REVOKED_REASON) or obj.get("kind") != "Pod":
            continue
        message = str(e.get("message") or e.get("note") or "")
        for uid, name in names.items():
            if uid and uid in message:
                message = message.replace(uid, name)
        ts = (e.get("eventTime") or e.get("lastTimestamp") or e.get("firstTimestamp")
              or (e.get("series") or {}).get("lastObservedTime") or "")
        out.append(Disruption(f"{obj.get('namespace', '')}/{obj.get('name', '')}",
                              str(reason), message, _seconds_into_day(ts, epoch)))
    return sorted(out, key=lambda d: (d.t if d.t is not None else 0.0, d.pod))


@dataclass(slots=True)
class Thresholds:
    """LowNodeLoad's thresholds, percent of allocatable by resource (cpu, memory)."""

    low: dict[str, float]
    high: dict[str, float]


def low_node_load_thresholds(config: Mapping[str, Any]) -> Thresholds | None:
    """The first profile's LowNodeLoad thresholds in a DeschedulerConfiguration (None when no
    profile configures LowNodeLoad)."""
    for profile in config.get("profiles") or ():
        for entry in profile.get("pluginConfig") or ():
            if entry.get("name") == "LowNodeLoad":
                args = entry.get("args") or {}
                return Thresholds({k: float(v) for k, v in (args.get("lowThresholds")
                                                           or {}).items()},
                                  {k: float(v) for k, v in (args.get("highThresholds")
                                                           or {}).items()})
    return None


@dataclass(slots=True)
class MigrationRow:
    """A PodMigrationJob of koord-descheduler: the pod it moved, from where to where."""

    name: str
    pod: str  # spec.podRef namespace/name
    from_node: str  # where the pod was bound ("" when never seen bound)
    to_node: str  # status.nodeName: the Reservation's node ("" before it was scheduled)
    replacement: str  # status.podRef: the pod bound in the Reservation ("" before)
    phase: str
    reason: str
    message: str
    created_at: float | None  # seconds into the day
    evicted_at: float | None  # the job's Evicting event
    ended_at: float | None  # the last condition change of a finished job

    @property
    def seconds(self) -> float | None:
        if self.created_at is None or self.ended_at is None:
            return None
        return self.ended_at - self.created_at


@dataclass(slots=True)
class PdbRow:
    """A PodDisruptionBudget over the run: the fewest pods available once its workload was
    up, against its minAvailable."""

    pdb: str  # namespace/name
    min_available: int
    lowest_available: int | None  # None: the workload never had minAvailable up
    lowest_at: float | None

    @property
    def held(self) -> bool:
        return self.lowest_available is None or self.lowest_available >= self.min_available


@dataclass(slots=True)
class NodeUsageRow:
    """A node's NodeMetric usage, percent of allocatable, before and after descheduling."""

    node: str
    cpu_before: float | None
    cpu_after: float | None
    cpu_peak: float | None
    memory_before: float | None
    memory_after: float | None


@dataclass(slots=True)
class DeschedulerSection:
    leader: str  # the replica holding koord-descheduler's Lease at the end
    thresholds: Thresholds | None
    jobs: list[MigrationRow]
    pdbs: list[PdbRow]
    usage: list[NodeUsageRow]
    # "Before": the last sample with NodeMetrics at the first job's creation (without a job,
    # the first such sample); "after": the last one.
    before_at: float | None
    after_at: float | None

    @property
    def phases(self) -> dict[str, int]:
        return dict(sorted(Counter(j.phase or "Pending" for j in self.jobs).items()))

    @property
    def pdbs_held(self) -> bool:
        return all(p.held for p in self.pdbs)


def _timestamp(obj: Obj, *fields: str) -> str:
    return next((str(obj[f]) for f in fields if obj.get(f)), "")


def migration_rows(jobs: Iterable[Obj], pod_nodes: Mapping[tuple[str, str], str],
                   events: Iterable[Obj], epoch: float | None) -> list[MigrationRow]:
    """The PodMigrationJobs in creation order; ``pod_nodes``: where each pod was seen bound."""
    evicting: dict[str, str] = {}
    for e in events:
        obj = e.get("involvedObject") or e.get("regarding") or {}
        if obj.get("kind") == "PodMigrationJob" and e.get("reason") == "Evicting":
            evicting.setdefault(str(obj.get("name")), _timestamp(
                e, "firstTimestamp", "eventTime", "lastTimestamp"))
    rows = []
    for job in jobs:
        md, spec, status = job["metadata"], job.get("spec") or {}, job.get("status") or {}
        ref = spec.get("podRef") or {}
        bound = status.get("podRef") or {}
        phase = str(status.get("phase") or "")
        ended = max((str(c.get("lastTransitionTime") or "") for c in
                     status.get("conditions") or ()), default="") \
            if phase in ("Succeeded", "Failed", "Aborted") else ""
        rows.append(MigrationRow(
            str(md["name"]), f"{ref.get('namespace', '')}/{ref.get('name', '')}",
            pod_nodes.get((str(ref.get("namespace", "")), str(ref.get("name", ""))), ""),
            str(status.get("nodeName") or ""),
            f"{bound.get('namespace', '')}/{bound.get('name', '')}" if bound.get("name")
            else "", phase, str(status.get("reason") or ""), str(status.get("message") or ""),
            _seconds_into_day(str(md.get("creationTimestamp") or ""), epoch),
            _seconds_into_day(evicting.get(str(md["name"]), ""), epoch),
            _seconds_into_day(ended, epoch)))
    return sorted(rows, key=lambda r: (r.created_at if r.created_at is not None else 0.0,
                                       natural_key(r.name)))


def _percent(used: float | None, allocatable: float) -> float | None:
    return None if used is None or allocatable <= 0 else 100 * used / allocatable


def usage_rows(samples: Sequence[Sample], before_at: float | None) -> tuple[
        list[NodeUsageRow], float | None, float | None]:
    """Per node cpu and memory usage (% of allocatable) at the last sample with NodeMetrics at
    or before ``before_at`` (None: the first such sample) and at the last; with those times."""
    measured = [s for s in samples if s.nodes and all(
        n.used_cpu is not None for n in s.nodes.values())]
    if not measured:
        return [], None, None
    earlier = [s for s in measured if before_at is None or s.t <= before_at]
    before = earlier[-1] if before_at is not None and earlier else measured[0]
    after = measured[-1]
    rows = []
    for name in sorted(after.nodes, key=natural_key):
        b, a = before.nodes.get(name), after.nodes[name]
        peak = [p for s in measured if name in s.nodes and (p := _percent(
            s.nodes[name].used_cpu, s.nodes[name].allocatable_cpu)) is not None]
        rows.append(NodeUsageRow(
            name, _percent(b.used_cpu, b.allocatable_cpu) if b else None,
            _percent(a.used_cpu, a.allocatable_cpu), max(peak) if peak else None,
            _percent(b.used_memory, b.allocatable_memory) if b else None,
            _percent(a.used_memory, a.allocatable_memory)))
    return rows, before.t, after.t


def descheduler_section(leader: str, thresholds: Thresholds | None, jobs: Iterable[Obj],
                        pod_nodes: Mapping[tuple[str, str], str], pdbs: Iterable[PdbWatch],
                        samples: Sequence[Sample], events: Iterable[Obj],
                        epoch: float | None) -> DeschedulerSection:
    rows = migration_rows(jobs, pod_nodes, events, epoch)
    first = next((r.created_at for r in rows if r.created_at is not None), None)
    usage, before_at, after_at = usage_rows(samples, first)
    budgets = sorted((PdbRow(f"{w.namespace}/{w.name}", w.min_available, w.lowest,
                             w.lowest_at) for w in pdbs), key=lambda p: natural_key(p.pdb))
    return DeschedulerSection(leader, thresholds, rows, budgets, usage, before_at, after_at)


@dataclass(slots=True)
class Utilisation:
    samples: int
    colocated_avg: float
    colocated_peak: float
    online_only_avg: float
    online_only_peak: float


@dataclass
class Report:
    scenario: str
    nodes: int
    day_length_seconds: float
    ran_seconds: float
    pods_created: int
    replacements: int
    phases: dict[str, dict[str, int]]
    node_rows: list[NodeRow]
    batch_timeline: list[dict[str, float]]
    placements: dict[str, dict[str, int]]  # group → node → pods bound there
    pending: list[dict[str, str]]  # pods never bound, with their last FailedScheduling
    failed_scheduling_reasons: list[tuple[str, int]]
    scheduled_events: int
    failed_scheduling_events: int
    evictions: list[dict[str, str]]
    utilisation: Utilisation | None
    png: str = ""
    files: dict[str, str] = field(default_factory=dict)
    components: list[ComponentRow] = field(default_factory=list)
    leases: list[LeaseRow] = field(default_factory=list)
    # 403s over the run (None: the API server's /metrics could not be read), and by whom.
    denied_requests: int | None = None
    denied: list[Denial] = field(default_factory=list)
    requests_by_user: dict[str, int] = field(default_factory=dict)
    gangs: list[GangRow] = field(default_factory=list)
    reservations: list[ReservationRow] = field(default_factory=list)
    rollouts: list[RolloutRow] = field(default_factory=list)
    quotas: list[QuotaRow] = field(default_factory=list)
    quota_timeline: list[QuotaMoment] = field(default_factory=list)
    disruptions: list[Disruption] = field(default_factory=list)
    descheduler: DeschedulerSection | None = None
    memory_qos: MemoryQoS | None = None

    def set_api_access(self, access: ApiAccess | None) -> None:
        if access is None:
            return
        self.denied = access.denied
        self.denied_requests = sum(r.count for r in access.denied)
        self.requests_by_user = access.requests_by_user

    def to_json(self) -> Obj:
        return asdict(self)


@dataclass(slots=True, frozen=True)
class MemoryQoSRow:
    """Pods of one QoS class and group with the same values in their cgroups (bytes; ``high``
    None: unthrottled, "max")."""

    qos: str
    group: str
    pods: int
    request: int  # the pod's memory request (batch-memory for BE pods), as koordlet counts it
    min: int
    low: int
    high: int | None


@dataclass(slots=True, frozen=True)
class KubeQoSDirRow:
    node: str
    dir: str  # kubepods (the Guaranteed dir, parent of the others), burstable, besteffort
    min: int
    low: int


@dataclass(slots=True)
class MemoryQoS:
    pods: list[MemoryQoSRow]
    dirs: list[KubeQoSDirRow]
    # Pods started within UNRECONCILED_SECONDS of the read: their files may still hold the
    # kernel's defaults, so they are left out of the rows.
    just_started: int = 0


_QOS_ORDER = ("LSE", "LSR", "LS", "BE", "SYSTEM")
# koordlet's --reconcile-interval-seconds (1, upstream's default) with a second to spare.
UNRECONCILED_SECONDS = 2.0
_KUBE_QOS_DIRS = ((KubeQoSClass.GUARANTEED, "kubepods"), (KubeQoSClass.BURSTABLE, "burstable"),
                  (KubeQoSClass.BEST_EFFORT, "besteffort"))


def _memcg_value(path: Path) -> int | None:
    """A memcg byte file; None when it is not there (the pod never ran on that node)."""
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def memory_qos(nodes_dir: Path, pods: Iterable[Obj], now: float) -> MemoryQoS:
    """The memory QoS values in the simulated nodes' trees (``<nodes_dir>/<node>/cgroup``),
    read at ``now`` (wall-clock seconds)."""
    counts: Counter[tuple[str, str, int, int, int, int | None]] = Counter()
    just_started = 0
    for _, group, pod in _workload_pods(pods):
        node = (pod.get("spec") or {}).get("nodeName")
        status = pod.get("status") or {}
        statuses = status.get("containerStatuses") or []
        if not node or not statuses or not statuses[0].get("containerID"):
            continue
        started = _seconds_into_day(status.get("startTime") or "", now)
        if started is not None and started > -UNRECONCILED_SECONDS:
            just_started += 1
            continue
        env = fake_v1_env(str(nodes_dir / node / "cgroup"))
        pod_dir = env.pod_dir(get_kube_qos_class(pod), pod["metadata"]["uid"])
        container_dir = env.container_dir(pod_dir, statuses[0]["containerID"])
        mn = _memcg_value(Path(env.path("memory.min", pod_dir)))
        low = _memcg_value(Path(env.path("memory.low", pod_dir)))
        high = _memcg_value(Path(env.path("memory.high", container_dir)))
        if mn is None or low is None or high is None:
            continue
        try:
            request = pod_memory_request(pod)
        except ValueError:
            continue
        counts[(get_pod_qos_class_with_default(pod).value, group, request, mn, low,
                None if high >= MEMORY_UNLIMITED else high)] += 1
    rows = [MemoryQoSRow(qos, group, n, request, mn, low, high)
            for (qos, group, request, mn, low, high), n in counts.items()]
    rows.sort(key=lambda r: (_QOS_ORDER.index(r.qos) if r.qos in _QOS_ORDER else
                             len(_QOS_ORDER), r.group, r.request, r.min, r.low))
    dirs = []
    for node_dir in sorted(nodes_dir.glob("*/cgroup"), key=lambda p: natural_key(p.parent.name)):
        env = fake_v1_env(str(node_dir))
        for kube_qos, name in _KUBE_QOS_DIRS:
            qos_dir = env.kube_qos_dir(kube_qos)
            mn = _memcg_value(Path(env.path("memory.min", qos_dir)))
            low = _memcg_value(Path(env.path("memory.low", qos_dir)))
            if mn is not None and low is not None:
                dirs.append(KubeQoSDirRow(node_dir.parent.name, name, mn, low))
    return MemoryQoS(rows, dirs, just_started)


def natural_key(name: str) -> list[Any]:
    """node-2 before node-10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def _avg(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def _node_row(name: str, series: list[NodeSample], ts: list[float]) -> NodeRow:
    final = series[-1]
    used = [s.used_cpu for s in series if s.used_cpu is not None]
    caps = [(s.be_suppress_cpu, t) for s, t in zip(series, ts)
            if s.be_suppress_cpu is not None and s.be_suppress_cpu > 0]
    tightest = min(caps) if caps else (None, None)
    return NodeRow(
        node=name, allocatable_cpu=final.allocatable_cpu,
        allocatable_memory=final.allocatable_memory,
        batch_allocatable_cpu=final.batch_allocatable_cpu,
        batch_allocatable_memory=final.batch_allocatable_memory,
        batch_allocatable_cpu_min=min(s.batch_allocatable_cpu for s in series),
        batch_allocatable_cpu_max=max(s.batch_allocatable_cpu for s in series),
        requested_cpu=final.requested_cpu, requested_memory=final.requested_memory,
        requested_batch_cpu=final.requested_batch_cpu,
        requested_batch_memory=final.requested_batch_memory,
        requested_batch_cpu_peak=max(s.requested_batch_cpu for s in series),
        used_cpu=final.used_cpu, used_memory=final.used_memory,
        used_cpu_avg=_avg(used) if used else None, used_cpu_peak=max(used) if used else None,
        pods=final.pods, be_cap_min=tightest[0], be_cap_min_at=tightest[1],
        be_cap_final=caps[-1][0] if caps else None,
        metric_problems=list(dict.fromkeys(p for s in series for p in s.metric_problems)))


def utilisation(samples: list[Sample]) -> tuple[list[float], list[float], list[float]]:
    """(t, co-located %, online-only %) for the samples where every node has a NodeMetric."""
    ts, co, online = [], [], []
    for s in samples:
        nodes = list(s.nodes.values())
        if not nodes or any(n.used_cpu is None for n in nodes):
            continue
        cap = sum(n.allocatable_cpu for n in nodes)
        ts.append(s.t)
        co.append(100 * sum(n.used_cpu or 0.0 for n in nodes) / cap)
        online.append(100 * sum(n.online_used_cpu or 0.0 for n in nodes) / cap)
    return ts, co, online


def batch_timeline(samples: list[Sample]) -> list[dict[str, float]]:
    rows = []
    step = max(1, len(samples) // TIMELINE_ROWS)
    picked = samples[::step]
    if samples and picked[-1] is not samples[-1]:
        picked.append(samples[-1])
    for s in picked:
        nodes = s.nodes.values()
        rows.append({
            "t": s.t,
            "batch_allocatable_cpu": sum(n.batch_allocatable_cpu for n in nodes),
            "requested_batch_cpu": sum(n.requested_batch_cpu for n in nodes),
            "be_used_cpu": sum(n.be_used_cpu or 0.0 for n in nodes),
            "batch_allocatable_memory": sum(n.batch_allocatable_memory for n in nodes),
            "requested_batch_memory": sum(n.requested_batch_memory for n in nodes),
            "online_used_cpu": sum(n.online_used_cpu or 0.0 for n in nodes),
        })
    return rows


def _events_by_pod(events: Iterable[Obj], reason: str) -> dict[tuple[str, str], list[Obj]]:
    out: dict[tuple[str, str], list[Obj]] = {}
    for e in events:
        if e.get("reason") != reason:
            continue
        obj = e.get("involvedObject") or {}
        if obj.get("kind") == "Pod":
            out.setdefault((obj.get("namespace", ""), obj.get("name", "")), []).append(e)
    return out


def _workload_pods(pods: Iterable[Obj]) -> list[tuple[tuple[str, str], str, Obj]]:
    """((namespace, name), group, pod) of the scenario's pods, in name order."""
    out = []
    for pod in pods:
        md = pod["metadata"]
        labels = md.get("labels") or {}
        if LABEL_KIND in labels:
            out.append(((md["namespace"], md["name"]), labels.get(LABEL_GROUP, ""), pod))
    return sorted(out, key=lambda item: item[0])


def _occurrences(e: Obj) -> int:
    """core/v1 recorders count in ``count``; events.k8s.io ones (koord-scheduler) in
    ``series.count``."""
    return e.get("count") or (e.get("series") or {}).get("count") or 1


def _count(events: Iterable[Obj]) -> int:
    """Occurrences, with the recorders' aggregated counts."""
    return sum(_occurrences(e) for e in events)


def _last_seen(e: Obj) -> str:
    """Comparable across both event APIs: RFC 3339 at second precision."""
    ts = (e.get("lastTimestamp") or (e.get("series") or {}).get("lastObservedTime")
          or e.get("eventTime") or "")
    return ts[:19]


def _last_message(events: list[Obj]) -> str:
    return max(events, key=lambda e: (_last_seen(e), _occurrences(e))).get("message", "")


def build(scenario: str, nodes: int, day: float, ran: float,
          samples: list[Sample], pods: list[Obj], events: list[Obj], created: int,
          replacements: int, pod_groups: Sequence[Obj] = (),
          epoch: float | None = None, reservations: Sequence[Obj] = ()) -> Report:
    """The report; ``epoch`` is the wall-clock start of the day (events get their time in
    it)."""
    by_node: dict[str, tuple[list[NodeSample], list[float]]] = {}
    for s in samples:
        for name, ns in s.nodes.items():
            series, ts = by_node.setdefault(name, ([], []))
            series.append(ns)
            ts.append(s.t)
    rows = [_node_row(name, *by_node[name]) for name in sorted(by_node, key=natural_key)]
    ts, co, online = utilisation(samples)
    util = Utilisation(len(ts), _avg(co), max(co), _avg(online), max(online)) if ts else None

    placements: dict[str, dict[str, int]] = {}
    pending = []
    failed = _events_by_pod(events, "FailedScheduling")
    for key, group, pod in _workload_pods(pods):
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            by = placements.setdefault(group, {})
            by[node] = by.get(node, 0) + 1
        else:
            pending.append({"pod": "/".join(key), "group": group,
                            "reason": _last_message(failed[key]) if key in failed else
                            _unschedulable_message(pod) or "not attempted yet"})
    reasons: Counter[str] = Counter()
    for evs in failed.values():
        for e in evs:
            reasons[e.get("message", "")] += _count([e])
    # Pods' only: koord-scheduler also says Scheduled on each Reservation it binds.
    scheduled = _count(e for e in events if e.get("reason") == "Scheduled"
                       and (e.get("involvedObject") or {}).get("kind") == "Pod")
    evictions = [{"pod": f"{(e.get('involvedObject') or {}).get('namespace')}/"
                         f"{(e.get('involvedObject') or {}).get('name')}",
                  "node": (e.get("source") or {}).get("host", ""),
                  "message": e.get("message", "")}
                 for e in events if e.get("reason") == EVICTED_REASON]
    phases = samples[-1].phases if samples else {}
    return Report(scenario, nodes, day, ran, created, replacements, phases, rows,
                  batch_timeline(samples), placements, pending, reasons.most_common(5),
                  scheduled, sum(reasons.values()), evictions, util,
                  gangs=gang_rows(pod_groups, pods), quotas=quota_rows(samples),
                  reservations=reservation_rows(reservations),
                  rollouts=rollout_rows(pods, failed),
                  quota_timeline=quota_timeline(samples),
                  disruptions=disruptions(events, pods, epoch) if any(
                      s.quotas for s in samples) else [])


def _f(v: float | None, fmt: str = "{:.1f}") -> str:
    return "-" if v is None else fmt.format(v)


def _render_components(r: Report) -> list[str]:
    restarted = [c for c in r.components if c.restarts or c.last_exit]
    total = sum(c.restarts for c in r.components)
    out = [f"Restarts (the supervisor restarts what exits): {total}" + (
        "; " + ", ".join(f"{c.name} {c.restarts} (last {c.last_exit})" for c in restarted)
        if restarted else "")]
    for lease in r.leases:
        holder = lease.holder or lease.identity or "nobody"
        out.append(f"Leader of Lease {lease.lease}: {holder} "
                   f"(transitions {lease.transitions})")
    n = "unknown (the API server's /metrics was not read)" if r.denied_requests is None \
        else str(r.denied_requests)
    out.append(f"API requests denied (403): {n}")
    for d in r.denied[:DENIED_TOP]:
        res = f"{d.resource}.{d.group}" if d.group else d.resource
        out.append(f"  {d.count:>6}  {d.user} {d.verb} {res}")
    return out


def _render_gangs(r: Report) -> list[str]:
    if not r.gangs:
        return []
    out = ["", "Gang jobs (PodGroups: koord-scheduler's Coscheduling binds minMember members "
               "together or none)",
           f"  {'gang':<28}{'members':>8}{'min':>5}{'bound':>7}{'running':>9}{'done':>6}"
           f"  PodGroup phase"]
    for g in r.gangs:
        out.append(f"  {g.gang:<28}{g.members:>8}{g.min_member:>5}{g.bound:>7}{g.running:>9}"
                   f"{g.succeeded:>6}  {g.phase or '-'}")
        if g.bound < g.members:
            for m in g.messages or ["no PodScheduled message yet"]:
                out.append(f"    why not bound: {m}")
    return out


def _render_reservations(r: Report) -> list[str]:
    if not r.reservations and not r.rollouts:
        return []
    out = ["", "Reservations (koord-scheduler's Reservation: capacity held ahead for a rollout's "
               "pods)",
           f"  {'reservation':<24}{'node':<12}{'phase':<20}consumed by"]
    for res in r.reservations:
        phase = f"{res.phase or '-'}" + (f" ({res.reason})" if res.reason else "")
        out.append(f"  {res.name:<24}{res.node or '-':<12}{phase:<20}"
                   f"{', '.join(res.owners) or '-'}")
    for ro in r.rollouts:
        out.append(f"  rollout {ro.rollout}: {ro.bound}/{ro.pods} pods bound, "
                   f"{ro.in_reservations} in a Reservation; backfill {ro.backfill_bound}/"
                   f"{ro.backfill} bound, {ro.backfill_in_reservations} in a Reservation, "
                   f"{ro.backfill_waited} waited")
        for m in ro.backfill_messages:
            out.append(f"    backfill waited: {m}")
    return out


def _render_quotas(r: Report) -> list[str]:
    if not r.quotas:
        return []
    out = ["", "Quotas (ElasticQuota, cpu cores; runtime, used and request as koord-scheduler "
               "writes them back)",
           f"  {'quota':<16}{'min':>6}{'max':>6}{'peak used':>11}{'at t s':>8}"
           f"{'runtime':>9}{'used':>6}{'request':>9}  (runtime..request: at the end)"]
    for q in r.quotas:
        out.append(f"  {q.quota:<16}{_f(q.min_cpu):>6}{_f(q.max_cpu):>6}"
                   f"{_f(q.peak_used_cpu):>11}{_f(q.peak_used_at, '{:.0f}'):>8}"
                   f"{_f(q.runtime_cpu):>9}{_f(q.used_cpu):>6}{_f(q.request_cpu):>9}")
    names = [q.quota for q in r.quotas]
    out.append("Runtime / used over the day (the samples where one changed)")
    out.append(f"{'t s':>6}" + "".join(f"{n:>16}" for n in names))
    for m in r.quota_timeline:
        out.append(f"{m.t:>6.0f}" + "".join(
            f"{_f(m.runtime.get(n)) + ' / ' + _f(m.used.get(n)):>16}" for n in names))
    out.append(f"Pods taken back ({PREEMPTED_REASON}: preemption within a quota; "
               f"{REVOKED_REASON}: over-use revocation): {len(r.disruptions)}")
    for d in r.disruptions:
        out.append(f"  t={_f(d.t, '{:.0f}'):>4} s  {d.pod}  {d.reason}: {d.message}")
    return out


def _marked(value: float | None, resource: str, t: Thresholds | None) -> str:
    """A usage percent, ``^`` above the high threshold, ``v`` under the low one."""
    if value is None:
        return "-"
    mark = ""
    if t is not None and resource in t.high and value > t.high[resource]:
        mark = "^"
    elif t is not None and resource in t.low and value < t.low[resource]:
        mark = "v"
    return f"{value:.1f}{mark}"


MEMORY_QOS_NODES = 5  # nodes whose kube-QoS dirs are listed


def _gi(v: int) -> str:
    return f"{v / 2**30:.2f}Gi"


def _of_request(v: int, request: int) -> str:
    return f"{_gi(v)} ({100 * v / request:.0f} %)" if request else _gi(v)


def _render_memory_qos(r: Report) -> list[str]:
    m = r.memory_qos
    if m is None:
        return []
    out = ["", "Memory QoS (koordlet CgroupReconcile: the memcg files of the nodes' cgroup trees "
           "at the end; pod memory.min/low, container memory.high):"]
    if not any(row.min or row.low or row.high is not None for row in m.pods):
        out.append("  none written (CgroupReconcile off, or no memoryQOS enabled in the "
                   "NodeSLO)")
        return out
    width = max(len(row.group) for row in m.pods)
    for row in m.pods:
        high = "max" if row.high is None else _of_request(row.high, row.request)
        out.append(f"  {row.qos:<3} {row.group:<{width}} {row.pods:>4} pods  request "
                   f"{_gi(row.request)}: min {_of_request(row.min, row.request)}, low "
                   f"{_of_request(row.low, row.request)}, high {high}")
    if m.just_started:
        out.append(f"  ({m.just_started} pods started in the last {UNRECONCILED_SECONDS:g} s "
                   "are left out: koordlet reconciles every second)")
    nodes = sorted({d.node for d in m.dirs}, key=natural_key)
    for node in nodes[:MEMORY_QOS_NODES]:
        out.append(f"  {node}: " + "; ".join(
            f"{d.dir} min {_gi(d.min)} low {_gi(d.low)}" for d in m.dirs if d.node == node))
    if len(nodes) > MEMORY_QOS_NODES:
        out.append(f"  ... and {len(nodes) - MEMORY_QOS_NODES} more nodes (report.json)")
    return out


def _render_descheduler(r: Report) -> list[str]:
    d = r.descheduler
    if d is None:
        return []
    t = d.thresholds
    limits = ", ".join(f"{res} low {t.low.get(res, 0):g} % / high {t.high.get(res, 0):g} %"
                       for res in sorted(set(t.low) | set(t.high))) if t else "not configured"
    out = ["", f"Descheduler (koord-descheduler, leader {d.leader or 'unknown'}; LowNodeLoad "
               f"on NodeMetrics: {limits})"]
    phases = ", ".join(f"{p} {n}" for p, n in d.phases.items())
    out.append(f"PodMigrationJobs: {len(d.jobs)}" + (f" ({phases})" if phases else ""))
    for j in d.jobs:
        to = j.to_node or "-"
        if j.replacement:
            to += f" as {j.replacement.split('/', 1)[-1]}"
        why = ": ".join(x for x in (j.reason, j.message) if x)
        out.append(f"  {j.name}  {j.pod}  {j.from_node or '?'} -> {to}  {j.phase or 'Pending'}"
                   f"  t={_f(j.created_at, '{:.0f}')} s, took {_f(j.seconds, '{:.0f}')} s"
                   + (f"  ({why})" if why else ""))
    if d.pdbs:
        out.append(f"No workload dropped below its PDB: {'yes' if d.pdbs_held else 'NO'}")
        for p in d.pdbs:
            lowest = ("never up" if p.lowest_available is None else
                      f"{p.lowest_available} at t={_f(p.lowest_at, '{:.0f}')} s")
            out.append(f"  {p.pdb}: minAvailable {p.min_available}, fewest available {lowest}")
    if d.usage:
        out.append(f"Node usage, % of allocatable (NodeMetric; ^ above high, v under low): "
                   f"before t={_f(d.before_at, '{:.0f}')} s"
                   + (" (the first job)" if d.jobs else "")
                   + f", after t={_f(d.after_at, '{:.0f}')} s")
        out.append(f"  {'node':<10}{'cpu before':>11}{'after':>8}{'peak':>8}"
                   f"{'mem before':>12}{'after':>8}")
        for u in d.usage:
            out.append(f"  {u.node:<10}{_marked(u.cpu_before, 'cpu', t):>11}"
                       f"{_marked(u.cpu_after, 'cpu', t):>8}{_f(u.cpu_peak):>8}"
                       f"{_marked(u.memory_before, 'memory', t):>12}"
                       f"{_marked(u.memory_after, 'memory', t):>8}")
    return out


def render_text(r: Report) -> str:
    out = [f"== Koordinator local cluster: scenario {r.scenario!r}, {r.nodes} nodes, "
           f"a day of {r.day_length_seconds:g} s (ran {r.ran_seconds:.0f} s) =="]
    phases = ", ".join(f"{kind}: " + " ".join(f"{ph}={n}" for ph, n in sorted(c.items()))
                       for kind, c in sorted(r.phases.items()))
    out.append(f"pods created {r.pods_created} (replacements {r.replacements}); {phases}")
    out.extend(_render_components(r))
    out.append("")
    out.append("Per node at the end (cores / GiB); batch = kubernetes.io/batch-cpu|memory "
               "allocatable; used = NodeMetric")
    hdr = (f"{'node':<10}{'alloc cpu':>10}{'alloc mem':>10}{'req cpu':>9}{'req mem':>9}"
           f"{'batch cpu':>10}{'(min..max)':>13}{'batch mem':>10}{'req b-cpu':>10}"
           f"{'peak':>6}{'used cpu':>9}{'avg':>6}{'peak':>6}{'used mem':>9}{'pods':>6}"
           f"{'BE cap':>8}")
    out.append(hdr)
    for n in r.node_rows:
        out.append(
            f"{n.node:<10}{n.allocatable_cpu:>10.1f}{n.allocatable_memory:>10.1f}"
            f"{n.requested_cpu:>9.1f}{n.requested_memory:>9.1f}{n.batch_allocatable_cpu:>10.1f}"
            f"{f'({n.batch_allocatable_cpu_min:.1f}..{n.batch_allocatable_cpu_max:.1f})':>13}"
            f"{n.batch_allocatable_memory:>10.1f}{n.requested_batch_cpu:>10.1f}"
            f"{n.requested_batch_cpu_peak:>6.1f}{_f(n.used_cpu, '{:.2f}'):>9}"
            f"{_f(n.used_cpu_avg):>6}{_f(n.used_cpu_peak):>6}{_f(n.used_memory):>9}"
            f"{n.pods:>6}{_f(n.be_cap_final, '{:.2f}'):>8}")
    flagged = [n for n in r.node_rows if n.metric_problems]
    for n in flagged:
        out.append(f"  ! {n.node}: NodeMetric usage clamped or ignored: "
                   + "; ".join(n.metric_problems[:3])
                   + (f" (and {len(n.metric_problems) - 3} more)"
                      if len(n.metric_problems) > 3 else ""))
    out.append("")
    out.append("Batch resources over the day (cluster totals, cores / GiB)")
    out.append(f"{'t s':>6}{'online used':>13}{'batch-cpu alloc':>17}{'requested':>11}"
               f"{'BE used':>9}{'batch-mem alloc':>17}{'requested':>11}")
    for row in r.batch_timeline:
        out.append(f"{row['t']:>6.0f}{row['online_used_cpu']:>13.1f}"
                   f"{row['batch_allocatable_cpu']:>17.1f}{row['requested_batch_cpu']:>11.1f}"
                   f"{row['be_used_cpu']:>9.1f}{row['batch_allocatable_memory']:>17.1f}"
                   f"{row['requested_batch_memory']:>11.1f}")
    out.append("")
    out.append(f"Where pods went (koord-scheduler: {r.scheduled_events} Scheduled, "
               f"{r.failed_scheduling_events} FailedScheduling events)")
    groups = sorted(r.placements)
    out.append(f"{'node':<10}" + "".join(f"{g:>12}" for g in groups))
    for node in [row.node for row in r.node_rows]:
        out.append(f"{node:<10}" + "".join(f"{r.placements[g].get(node, 0):>12}"
                                           for g in groups))
    out.append(f"{'total':<10}" + "".join(f"{sum(r.placements[g].values()):>12}"
                                          for g in groups))
    if r.failed_scheduling_reasons:
        out.append("Why pods waited (FailedScheduling messages, most frequent first):")
        for msg, count in r.failed_scheduling_reasons:
            out.append(f"  {count:>5} x {msg}")
    if r.pending:
        out.append(f"Never bound ({len(r.pending)}):")
        for p in r.pending[:8]:
            out.append(f"  {p['pod']}: {p['reason']}")
        if len(r.pending) > 8:
            out.append(f"  ... and {len(r.pending) - 8} more (placements.tsv)")
    out.extend(_render_gangs(r))
    out.extend(_render_reservations(r))
    out.extend(_render_quotas(r))
    out.extend(_render_descheduler(r))
    out.extend(_render_memory_qos(r))
    out.append("")
    supp = [n for n in r.node_rows if n.be_cap_min is not None]
    out.append("Suppression (koordlet cpusuppress: the BE cgroup's CPU cap is what the online "
               "load leaves under the threshold; BE cap above = the last one):")
    if not supp:
        out.append("  none (no node capped its BE pods)")
    for n in supp:
        out.append(f"  {n.node}: tightest {n.be_cap_min:.2f} cores at t={n.be_cap_min_at:.0f} s")
    out.append(f"Evictions (koordlet {EVICTED_REASON} events): {len(r.evictions)}")
    for e in r.evictions[:8]:
        out.append(f"  {e['pod']}: {e['message']}")
    out.append("")
    u = r.utilisation
    if u is None:
        out.append("Cluster CPU utilisation: no NodeMetric reported yet")
    else:
        out.append(f"Cluster CPU utilisation over {u.samples} samples with NodeMetrics:")
        out.append(f"  with co-location      avg {u.colocated_avg:5.1f} %   peak "
                   f"{u.colocated_peak:5.1f} %")
        out.append(f"  online services only  avg {u.online_only_avg:5.1f} %   peak "
                   f"{u.online_only_peak:5.1f} %")
        out.append(f"  co-location adds {u.colocated_avg - u.online_only_avg:+.1f} points "
                   "on average")
    if r.png:
        out.append(f"Plot: {r.png}")
    for what, path in r.files.items():
        out.append(f"{what}: {path}")
    return "\n".join(out) + "\n"


def render_png(r: Report, samples: list[Sample], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ts, co, online = utilisation(samples)
    quotas = sorted({n for s in samples for n in s.quotas}, key=natural_key)
    d = r.descheduler
    descheduling = d is not None and bool(d.jobs or d.pdbs)
    panels = 3 + bool(quotas) + descheduling
    fig, axes = plt.subplots(panels, 1, figsize=(10, 3.3 * panels), sharex=True)
    ax = axes[0]
    ax.plot(ts, co, label="with co-location", color="tab:blue")
    ax.plot(ts, online, label="online services only", color="tab:orange")
    ax.fill_between(ts, online, co, color="tab:blue", alpha=0.15)
    ax.set_ylabel("cluster CPU utilisation (%)")
    ax.set_ylim(0, 100)
    ax.legend(loc="upper left")
    ax.set_title(f"{r.scenario}: {r.nodes} nodes, a day in {r.day_length_seconds:g} s")
    t_all = [s.t for s in samples]

    def total(attr: str) -> list[float]:
        return [sum(getattr(n, attr) or 0.0 for n in s.nodes.values()) for s in samples]

    ax = axes[1]
    ax.plot(t_all, total("batch_allocatable_cpu"), label="batch-cpu allocatable")
    ax.plot(t_all, total("requested_batch_cpu"), label="batch-cpu requested")
    ax.plot(t_all, total("be_used_cpu"), label="BE used")
    caps = [(s.t, sum(n.be_suppress_cpu or 0.0 for n in s.nodes.values())) for s in samples
            if any(n.be_suppress_cpu for n in s.nodes.values())]
    if caps:
        ax.plot([c[0] for c in caps], [c[1] for c in caps], label="BE cap (cpusuppress)",
                linestyle="--")
    ax.set_ylabel("cores (cluster)")
    ax.legend(loc="best", fontsize="small")
    ax = axes[2]
    for name in sorted(samples[-1].nodes, key=natural_key) if samples else []:
        pts = [(s.t, s.nodes[name].used_cpu) for s in samples
               if name in s.nodes and s.nodes[name].used_cpu is not None]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], label=name, linewidth=1)
    ax.set_ylabel("node CPU used (cores)")
    if ax.get_legend_handles_labels()[0] and len(samples[-1].nodes) <= 10:
        ax.legend(loc="upper left", ncol=5, fontsize="small")
    if quotas:
        _quota_panel(axes[3], samples, quotas)
    if d is not None and descheduling:
        _descheduler_panel(axes[-1], samples, d)
    axes[-1].set_xlabel("seconds into the day")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def _descheduler_panel(ax: Any, samples: list[Sample], d: DeschedulerSection) -> None:
    """Each node's cpu usage (% of allocatable) with LowNodeLoad's cpu thresholds, and the
    PodMigrationJobs: created (dotted) and evicting (solid)."""
    for name in sorted(samples[-1].nodes, key=natural_key) if samples else []:
        pts = [(s.t, p) for s in samples if name in s.nodes and (p := _percent(
            s.nodes[name].used_cpu, s.nodes[name].allocatable_cpu)) is not None]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], label=name, linewidth=1.5)
    if d.thresholds is not None:
        for which, value in (("low", d.thresholds.low.get("cpu")),
                             ("high", d.thresholds.high.get("cpu"))):
            if value is not None:
                ax.axhline(value, color="tab:red" if which == "high" else "tab:green",
                           linestyle="--", linewidth=1, label=f"LowNodeLoad {which} {value:g} %")
    for attr, style, label in (("created_at", ":", "PodMigrationJob created"),
                               ("evicted_at", "-", "pod evicted")):
        for i, at in enumerate(at for j in d.jobs if (at := getattr(j, attr)) is not None):
            ax.axvline(at, color="grey" if style == ":" else "black", linestyle=style,
                       linewidth=1, label=label if i == 0 else None)
    ax.set_ylabel("node cpu used (% alloc)")
    ax.set_ylim(0, 100)
    ax.legend(loc="upper right", ncol=3, fontsize="small")


def _quota_panel(ax: Any, samples: list[Sample], quotas: list[str]) -> None:
    """Each quota's runtime (solid) and used (dotted) cores over time, its min dashed."""
    colours = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown"]
    top = 0.0
    for i, name in enumerate(quotas):
        colour = colours[i % len(colours)]
        for attr, style, label in (("runtime", "-", "runtime"), ("used", ":", "used"),
                                   ("min", "--", "min")):
            pts = [(s.t, getattr(s.quotas[name], attr).cpu) for s in samples
                   if name in s.quotas and getattr(s.quotas[name], attr).cpu is not None]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], linestyle=style,
                        color=colour, linewidth=2 if attr == "used" else 1,
                        label=f"{name} {label}")
                top = max(top, *(p[1] for p in pts))
    ax.set_ylabel("quota cpu (cores)")
    ax.set_ylim(0, top * 1.5 if top else 1)  # room above the lines for the legend
    ax.legend(loc="upper left", ncol=len(quotas), fontsize="small")


def write_placements(pods: list[Obj], events: list[Obj], path: Path) -> None:
    """Every workload pod: where it went and the scheduler's word on it."""
    scheduled = _events_by_pod(events, "Scheduled")
    failed = _events_by_pod(events, "FailedScheduling")
    lines = ["pod\tgroup\tnode\tphase\tscheduled\tfailed_attempts\tlast_failure"]
    for key, group, pod in _workload_pods(pods):
        fails = failed.get(key, [])
        lines.append("\t".join([
            "/".join(key), group, (pod.get("spec") or {}).get("nodeName") or "",
            (pod.get("status") or {}).get("phase") or "Pending",
            _last_message(scheduled[key]) if key in scheduled else "",
            str(_count(fails)), _last_message(fails) if fails else ""]))
    path.write_text("\n".join(lines) + "\n")


def save(r: Report, samples: list[Sample], path: Path) -> None:
    path.write_text(json.dumps({"report": r.to_json(),
                                "samples": [s.to_json() for s in samples]}, indent=1))
