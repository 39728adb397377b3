"""Whether a pod may migrate: the MigrationController's Filter, split as upstream splits it.

Corresponds to koordinator ``pkg/descheduler/controllers/migration/arbitrator/filter.go``.
``filter`` (what LowNodeLoad and ``Evict`` ask) = no active PodMigrationJob for the pod, the
scheduler check of ReservationFirst mode, then the **non-retryable** checks (namespaces, the
``eviction-cost`` veto, the evictor constraints, the workload's expected replicas: a job failing
them fails for good) and the **retryable** limits (migrations per node, per namespace,
globally, and per workload with its unavailable pods: a job failing them waits for the next
arbitration round). ``skipEvictionGates`` bypasses single checks; a pod annotated
``descheduler.alpha.kubernetes.io/evict`` passes both groups.

The retryable limits count pods with a Pending or Running job; during arbitration a Pending job
counts only once it passed arbitration. They are read from a ``MigratingPods`` snapshot built
from one pass over the jobs (pods resolved through the pod lister, keyed by node, namespace and
controller), so an arbitration round builds it once and adds each job it passes, and every check
is a few lookups rather than a list of all jobs and pods.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from api.extension.objects import annotations_of, metadata_of, namespaced_name, spec_of
from api.scheduling.v1alpha1.pod_migration_job import PodMigrationJobPhase
from descheduler.apis.config.args import (
    RESERVATION_FIRST,
    DefaultEvictorArgs,
    MigrationControllerArgs,
)
from descheduler.controllers.migration.controllerfinder import ControllerFinder, controller_of
from descheduler.controllers.migration.util import (
    ANNOTATION_EVICT,
    JOB_BY_POD_NAMESPACED_NAME,
    JOB_BY_POD_UID,
    filter_pod_with_max_eviction_cost,
    get_max_migrating,
    get_max_unavailable,
    is_job_active,
    job_phase,
    passed_arbitration,
)
from descheduler.framework.plugins.defaultevictor import EvictorFilter
from descheduler.framework.types import Obj, ObjectLister
from pkg.client.informers.store import NODE_NAME_INDEX

log = logging.getLogger(__name__)

# skipEvictionGates names.
GATE_MAX_UNAVAILABLE_PER_WORKLOAD = "MaxUnavailablePerWorkload"
GATE_MAX_MIGRATING_PER_WORKLOAD = "MaxMigratingPerWorkload"
GATE_MAX_MIGRATING_PER_NODE = "MaxMigratingPerNode"
GATE_MAX_MIGRATING_PER_NAMESPACE = "MaxMigratingPerNamespace"
GATE_MAX_MIGRATING_GLOBALLY = "MaxMigratingGlobally"
GATE_EXPECTED_REPLICAS = "ExpectedReplicas"
GATE_PVC = "PVC"
GATE_BARE_PODS = "BarePods"
GATE_LOCAL_STORAGE = "LocalStorage"
GATE_SYSTEM_CRITICAL = "SystemCritical"
GATE_PRIORITY_THRESHOLD = "PriorityThreshold"
GATE_LABEL_SELECTOR = "LabelSelector"
GATE_NAMESPACES = "Namespaces"
GATE_NODE_FIT = "NodeFit"


def _ref(job: Obj) -> Mapping[str, str]:
    return spec_of(job).get("podRef") or {}


def _uid(obj: Obj) -> str:
    return metadata_of(obj).get("uid") or ""


def is_pod_available(pod: Obj) -> bool:
    """Active (not terminated, not terminating) and Ready (``IsPodActive && IsPodReady``)."""
    status = pod.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed") or metadata_of(pod).get(
            "deletionTimestamp"):
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in status.get("conditions") or ())


@dataclass(slots=True)
class MigratingPods:
    """The jobs that count against the retryable limits, aggregated for lookups: jobs in
    total, per podRef UID and per namespace; pods with such a job per node and, per controller
    UID, pod key → the podRef UIDs of its jobs. ``unavailable`` caches each workload's
    unavailable pods for the snapshot's life."""

    pods: ObjectLister
    total: int = 0
    by_uid: Counter[str] = field(default_factory=Counter)
    by_namespace: Counter[str] = field(default_factory=Counter)
    by_namespace_uid: Counter[tuple[str, str]] = field(default_factory=Counter)
    by_node: dict[str, set[str]] = field(default_factory=dict)
    by_owner: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    unavailable: dict[str, frozenset[str]] = field(default_factory=dict)

    def add(self, job: Obj, pod: Obj | None = None) -> None:
        """Count ``job``; ``pod`` (read from the lister when not given) places it on a node
        and in a workload."""
        ref = _ref(job)
        uid, namespace = ref.get("uid") or "", ref.get("namespace") or ""
        self.total += 1
        self.by_uid[uid] += 1
        self.by_namespace[namespace] += 1
        self.by_namespace_uid[(namespace, uid)] += 1
        if pod is None and ref.get("name"):
            pod = self.pods.get(ref["name"], namespace)
        if pod is None:
            return
        key = namespaced_name(pod)
        node = spec_of(pod).get("nodeName")
        if node:
            self.by_node.setdefault(node, set()).add(key)
        owner = controller_of(pod)
        if owner is not None and owner.get("uid"):
            self.by_owner.setdefault(owner["uid"], {}).setdefault(key, set()).add(uid)


class MigrationFilter:
    def __init__(self, args: MigrationControllerArgs, jobs: ObjectLister,
                 finder: ControllerFinder, *, nodes: ObjectLister | None = None) -> None:
        """``nodes``: where ``nodeFit`` looks for another node (without, it passes every pod);
        the pod lister must then also carry the node-name index."""
        self.args = args
        self.jobs = jobs
        self.finder = finder
        self.pods = finder.listers.pods
        gates = self.gates = frozenset(args.skip_eviction_gates)
        threshold = args.priority_threshold
        self._evictor = EvictorFilter(DefaultEvictorArgs(
            node_fit=args.node_fit and GATE_NODE_FIT not in gates,
            evict_local_storage_pods=args.evict_local_storage_pods or GATE_LOCAL_STORAGE in gates,
            evict_system_critical_pods=(args.evict_system_critical_pods
                                        or GATE_SYSTEM_CRITICAL in gates),
            ignore_pvc_pods=args.ignore_pvc_pods and GATE_PVC not in gates,
            evict_failed_bare_pods=args.evict_failed_bare_pods,
            label_selector=None if GATE_LABEL_SELECTOR in gates else args.label_selector,
            priority_threshold=None if GATE_PRIORITY_THRESHOLD in gates else threshold,
        ), evict_all_bare_pods=args.evict_all_bare_pods or GATE_BARE_PODS in gates,
            nodes=nodes, pods_on_node=self._pods_on_node, node_selector=args.node_selector)
        namespaces = None if GATE_NAMESPACES in gates else args.namespaces
        self._include = frozenset(namespaces.include) if namespaces else frozenset()
        self._exclude = frozenset(namespaces.exclude) if namespaces else frozenset()

    def _pods_on_node(self, node: str) -> list[Obj]:
        return self.pods.by_index(NODE_NAME_INDEX, node)

    # --- Filter --------------------------------------------------------------------------

    def filter(self, pod: Obj) -> bool:
        """Upstream ``Filter``: may ``pod`` be handed to a new PodMigrationJob now."""
        if self.has_active_job(pod):
            log.debug("Pod %s fails the following checks: existing PodMigrationJob",
                      namespaced_name(pod))
            return False
        if not self.reservation_filter(pod):
            return False
        return self.non_retryable(pod) and self.retryable(pod)

    def pre_eviction_filter(self, pod: Obj) -> bool:
        """Upstream DefaultEvictor's PreEvictionFilter: with ``nodeFit`` (and no ``NodeFit``
        gate), another ready node matching ``nodeSelector`` must take the pod."""
        return self._evictor.pre_eviction_filter(pod)

    def has_active_job(self, pod: Obj) -> bool:
        """A Pending or Running job references ``pod`` by UID or by namespace/name."""
        return bool(self._active_jobs(pod))

    def reservation_filter(self, pod: Obj) -> bool:
        """ReservationFirst needs a pod of one of ``schedulerNames`` (the Reservation is
        scheduled by the same scheduler)."""
        if self.args.default_job_mode != RESERVATION_FIRST:
            return True
        scheduler = spec_of(pod).get("schedulerName")
        if scheduler in self.args.scheduler_names:
            return True
        log.error("Pod %s can not be migrated by ReservationFirst mode because "
                  "pod.schedulerName=%s but scheduler of pmj controller assigned is %s",
                  namespaced_name(pod), scheduler, self.args.scheduler_names)
        return False

    # --- non-retryable -------------------------------------------------------------------

    def non_retryable(self, pod: Obj) -> bool:
        if ANNOTATION_EVICT in annotations_of(pod):
            return True
        namespace = metadata_of(pod).get("namespace") or ""
        if (self._include and namespace not in self._include) or namespace in self._exclude:
            return False
        if not filter_pod_with_max_eviction_cost(pod) or not self._evictor.filter(pod):
            return False
        return GATE_EXPECTED_REPLICAS in self.gates or self._expected_replicas_ok(pod)

    def _limits(self, pod: Obj) -> tuple[int, int, int]:
        """The workload's expected replicas (0 when unknown), maxMigrating, maxUnavailable."""
        replicas = self.finder.expected_replicas(pod) or 0
        return (replicas, get_max_migrating(replicas, self.args.max_migrating_per_workload),
                get_max_unavailable(replicas, self.args.max_unavailable_per_workload))

    def _expected_replicas_ok(self, pod: Obj) -> bool:
        if controller_of(pod) is None or self.args.skip_check_expected_replicas:
            return True
        replicas, max_migrating, max_unavailable = self._limits(pod)
        if replicas in (1, max_migrating, max_unavailable):
            log.debug("Pod %s fails the following checks: expectedReplicas (replicas %d, "
                      "maxMigrating %d, maxUnavailable %d)", namespaced_name(pod), replicas,
                      max_migrating, max_unavailable)
            return False
        return True

    # --- retryable -----------------------------------------------------------------------

    def migrating(self, *, arbitrating: bool = False,
                  passed: Iterable[Obj] = ()) -> MigratingPods:
        """The snapshot of jobs counting against the limits: Pending and Running ones, or
        when ``arbitrating`` Running ones and Pending ones that passed arbitration (annotated,
        or among ``passed`` while the informer has not seen their annotation yet)."""
        passed_uids = {_uid(job) for job in passed}
        snapshot = MigratingPods(self.pods)
        for job in self.jobs.list():
            if not is_job_active(job):
                continue
            if (arbitrating and job_phase(job) == PodMigrationJobPhase.PENDING
                    and not passed_arbitration(job) and _uid(job) not in passed_uids):
                continue
            snapshot.add(job)
        return snapshot

    def retryable(self, pod: Obj, *, arbitrating: bool = False,
                  passed: Collection[Obj] = ()) -> bool:
        if ANNOTATION_EVICT in annotations_of(pod):
            return True
        if arbitrating or passed or self._counts_all_jobs():
            return self.retryable_with(pod,
                                       self.migrating(arbitrating=arbitrating, passed=passed))
        return self.retryable_with(pod, self._migrating_near(pod))

    def _counts_all_jobs(self) -> bool:
        """Whether a limit in force counts jobs beyond the pod's node and workload."""
        args, gates = self.args, self.gates
        return bool((args.max_migrating_globally and args.max_migrating_globally > 0
                     and GATE_MAX_MIGRATING_GLOBALLY not in gates)
                    or (args.max_migrating_per_namespace
                        and args.max_migrating_per_namespace > 0
                        and GATE_MAX_MIGRATING_PER_NAMESPACE not in gates))

    def _active_jobs(self, pod: Obj) -> list[Obj]:
        uid = _uid(pod)
        by_uid = self.jobs.by_index(JOB_BY_POD_UID, uid) if uid else []
        by_name = self.jobs.by_index(JOB_BY_POD_NAMESPACED_NAME, namespaced_name(pod))
        return [job for job in (*by_uid, *by_name) if is_job_active(job)]

    def _migrating_near(self, pod: Obj) -> MigratingPods:
        """The snapshot restricted to the jobs of the pods on ``pod``'s node and of its
        workload: all the per-node and per-workload limits look at, found through the pod and
        job indexes, so filtering the candidates of a cycle does not read every job for each
        (the node and workload counts equal those of the full snapshot)."""
        snapshot = MigratingPods(self.pods)
        seen: set[str] = set()
        node = spec_of(pod).get("nodeName")
        siblings = self.finder.workload_pods(pod)
        owner = controller_of(pod)
        if owner is not None and owner.get("uid"):
            snapshot.unavailable[owner["uid"]] = frozenset(
                namespaced_name(p) for p in siblings if not is_pod_available(p))
        for other in (*(self._pods_on_node(node) if node else ()), *siblings):
            # Only a job naming its pod places it on a node or in a workload (as in the full
            # snapshot), so the name index finds every job that counts here.
            for job in self.jobs.by_index(JOB_BY_POD_NAMESPACED_NAME, namespaced_name(other)):
                if is_job_active(job) and _uid(job) not in seen:
                    seen.add(_uid(job))
                    snapshot.add(job, other)
        return snapshot

    def retryable_with(self, pod: Obj, migrating: MigratingPods) -> bool:
        """The retryable limits against an existing snapshot (what arbitration uses)."""
        if ANNOTATION_EVICT in annotations_of(pod):
            return True
        return (self._globally_ok(pod, migrating) and self._per_node_ok(pod, migrating)
                and self._per_namespace_ok(pod, migrating)
                and self._per_workload_ok(pod, migrating))

    def _fails(self, pod: Obj, check: str, count: int, limit: int) -> bool:
        if count >= limit:
            log.debug("Pod %s fails the following checks: %s (%d >= %d)",
                      namespaced_name(pod), check, count, limit)
            return True
        return False

    def _globally_ok(self, pod: Obj, migrating: MigratingPods) -> bool:
        limit = self.args.max_migrating_globally
        if not limit or limit < 0 or GATE_MAX_MIGRATING_GLOBALLY in self.gates:
            return True
        others = migrating.total - migrating.by_uid[_uid(pod)]
        return not self._fails(pod, "maxMigratingGlobally", others, limit)

    def _per_node_ok(self, pod: Obj, migrating: MigratingPods) -> bool:
        limit = self.args.max_migrating_per_node
        node = spec_of(pod).get("nodeName")
        if not node or limit <= 0 or GATE_MAX_MIGRATING_PER_NODE in self.gates:
            return True
        pods = migrating.by_node.get(node, ())
        others = len(pods) - (namespaced_name(pod) in pods)
        return not self._fails(pod, "maxMigratingPerNode", others, limit)

    def _per_namespace_ok(self, pod: Obj, migrating: MigratingPods) -> bool:
        limit = self.args.max_migrating_per_namespace
        if not limit or limit < 0 or GATE_MAX_MIGRATING_PER_NAMESPACE in self.gates:
            return True
        namespace = metadata_of(pod).get("namespace") or ""
        others = (migrating.by_namespace[namespace]
                  - migrating.by_namespace_uid[(namespace, _uid(pod))])
        return not self._fails(pod, "maxMigratingPerNamespace", others, limit)

    def _per_workload_ok(self, pod: Obj, migrating: MigratingPods) -> bool:
        owner = controller_of(pod)
        owner_uid = owner.get("uid") if owner is not None else None
        if not owner_uid:
            return True
        _, max_migrating, max_unavailable = self._limits(pod)
        uid = _uid(pod)
        # Pods of the workload with a job other than this pod's own.
        pods = {key for key, uids in migrating.by_owner.get(owner_uid, {}).items()
                if uids - {uid}}
        if (pods and GATE_MAX_MIGRATING_PER_WORKLOAD not in self.gates
                and self._fails(pod, "maxMigratingPerWorkload", len(pods), max_migrating)):
            return False
        if GATE_MAX_UNAVAILABLE_PER_WORKLOAD in self.gates:
            return True
        unavailable = migrating.unavailable.get(owner_uid)
        if unavailable is None:
            unavailable = migrating.unavailable[owner_uid] = frozenset(
                namespaced_name(p) for p in self.finder.workload_pods(pod)
                if not is_pod_available(p))
        return not self._fails(pod, "maxUnavailablePerWorkload", len(unavailable | pods),
                               max_unavailable)
