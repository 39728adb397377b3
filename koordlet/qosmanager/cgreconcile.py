"""cgreconcile (memory QoS): upstream `pkg/koordlet/qosmanager/plugins/cgreconcile`
(`cgroup_reconcile.go`, gate `CgroupReconcile`).

Every reconcile interval, from NodeSLO `resourceQOSStrategy` and the node's pods, it writes the
memcg QoS files of three levels in one `LeveledUpdateBatch` (kube-QoS dirs, pod dirs, container
dirs), so that a parent's `memory.min`/`low`/`high` is widened before its children's and
narrowed after them:

* pod: `memory.min`/`memory.low` = request × min/lowLimitPercent / 100 (low raised to min when
  0 < low < min), the wmark ratio / scale factor / min adj, `memory.priority`,
  `memory.use_priority_oom`, `memory.oom.group` of the pod's config;
* container: min/low the same on the container request; `memory.high` = "max" when
  throttlingPercent is 0, else request + (limit − request) × throttlingPercent / 100 rounded
  down to a page, with the node's allocatable memory as the limit of an unlimited container,
  raised to min when below it;
* kube-QoS dir: Σ of its pods' min/low; the Guaranteed dir (kubepods root, the parent of the
  other two) carries the sum of all three; plus the class's priority / use-priority-oom /
  oom-group (Guaranteed → lsrClass, Burstable → lsClass, BestEffort → beClass).

A pod's config is its class's (`LSE`/`LSR` → lsrClass, `LS` → lsClass, `BE` → beClass,
`SYSTEM` → systemClass) merged with its `koordinator.sh/memoryQOS` annotation: policy `none`
uses the "none" values, `auto` the recommended ones of its class, and the annotation's fields
win. BE pods count `kubernetes.io/batch-memory`, others `memory`. A class whose `memoryQOS` has
`enable: false` uses the "none" values (upstream applies this when statesinformer merges the
NodeSLO; here it is applied where the config is read).

Most of these files exist only on Anolis/Alibaba Cloud Linux under cgroup v1 (and wmark and
priority files also on v2): a file the kernel lacks is left out (upstream's `IsSupported`
check), said once at info level per file and then at debug level.

A node's pods rarely change between two rounds, so each pod's values and updaters are kept
from one round to the next while what they are computed from stays the same (the NodeSLO
strategy object, which statesinformer replaces and never changes in place, the node's
allocatable memory, and the pod's kube-QoS class, QoS label, `memoryQOS` annotation, request
and containers' ids, requests and limits); the executor then skips the unchanged values it
wrote recently. Upstream recomputes every value every round.
"""

from __future__ import annotations

import logging
import mmap
from dataclasses import dataclass, fields

from api.errors import MalformedValueError
from api.extension.pod_qos import (
    ANNOTATION_POD_MEMORY_QOS,
    PodMemoryQOSPolicy,
    parse_pod_memory_qos,
)
from api.extension.qos import (
    KubeQoSClass,
    QoSClass,
    get_kube_qos_class,
    get_pod_qos_class_raw,
    get_pod_qos_class_with_default,
)
from api.extension.resource import BATCH_MEMORY
from api.slo.v1alpha1.defaults import default_memory_qos, none_memory_qos
from api.slo.v1alpha1.resource_qos import MemoryQOS, ResourceQOS, ResourceQOSStrategy
from koordlet.qosmanager.framework import Context, KubeDict
from koordlet.qosmanager.helpers import AnnotationWarnings, pod_name, pod_uid
from koordlet.resourceexecutor.updater import CgroupUpdater, new_cgroup_updater
from koordlet.util.system.cgroup import MAX_INT64, ResourceUnsupportedError
from pkg.features.koordlet_features import CGROUP_RECONCILE
from pkg.util.podresources import MEMORY, pod_requests, quantity_int, resource_list

logger = logging.getLogger(__name__)

PAGE_SIZE = mmap.PAGESIZE
_KUBE_QOS_ORDER = (KubeQoSClass.GUARANTEED, KubeQoSClass.BURSTABLE, KubeQoSClass.BEST_EFFORT)


@dataclass(slots=True)
class MemorySummary:
    """Values to write to one cgroup; None leaves the file alone. Fields are in upstream's
    write order; `_FILES` names each one's file."""

    min: int | None = None
    low: int | None = None
    high: int | None = None
    wmark_ratio: int | None = None
    wmark_scale_factor: int | None = None
    wmark_min_adj: int | None = None
    priority: int | None = None
    use_priority_oom: int | None = None
    oom_group: int | None = None

    def set_static(self, cfg: MemoryQOS) -> None:
        """The values a pod or container takes from its config as they are."""
        self.wmark_ratio = cfg.wmark_ratio
        self.wmark_scale_factor = cfg.wmark_scale_permill
        self.wmark_min_adj = cfg.wmark_min_adj
        self.set_oom(cfg)

    def set_oom(self, cfg: MemoryQOS) -> None:
        self.use_priority_oom = cfg.priority_enable
        self.priority = cfg.priority
        self.oom_group = cfg.oom_kill_group

    def writes(self, parent_dir: str) -> list[Write]:
        return [Write(_FILES[f.name], parent_dir, value) for f in fields(self)
                if (value := getattr(self, f.name)) is not None]


_FILES = {
    "min": "memory.min",
    "low": "memory.low",
    "high": "memory.high",
    "wmark_ratio": "memory.wmark_ratio",
    "wmark_scale_factor": "memory.wmark_scale_factor",
    "wmark_min_adj": "memory.wmark_min_adj",
    "priority": "memory.priority",
    "use_priority_oom": "memory.use_priority_oom",
    "oom_group": "memory.oom.group",
}


@dataclass(slots=True, frozen=True)
class Write:
    """One value for one cgroup file (a resource type of the registry and a layout dir)."""

    resource_type: str
    parent_dir: str
    value: int


@dataclass(slots=True)
class Levels:
    qos: list[Write]
    pod: list[Write]
    container: list[Write]


# What a pod's values are computed from, besides the strategy and the node's memory: its
# kube-QoS class, QoS label, memoryQOS annotation, request, and per created container its id,
# request and limit.
PodInputs = tuple[str, QoSClass, str | None, int, tuple[tuple[str, int, int], ...]]


@dataclass(slots=True)
class _PodPlan:
    """One pod's writes and its share of its kube-QoS dir's min/low, with their inputs; the
    updaters are made the first time the plan is applied and reused while it lasts."""

    inputs: PodInputs
    pod: list[Write]
    containers: list[Write]
    min: int | None
    low: int | None
    updaters: tuple[list[CgroupUpdater], list[CgroupUpdater]] | None = None


def class_config(strategy: ResourceQOSStrategy, qos: QoSClass) -> ResourceQOS | None:
    """Upstream `GetPodResourceQoSByQoSClass`: LSE pods share the LSR settings."""
    return {
        QoSClass.LSE: strategy.lsr_class,
        QoSClass.LSR: strategy.lsr_class,
        QoSClass.LS: strategy.ls_class,
        QoSClass.BE: strategy.be_class,
        QoSClass.SYSTEM: strategy.system_class,
    }.get(qos)


def kube_qos_config(strategy: ResourceQOSStrategy, kube_qos: str) -> ResourceQOS | None:
    """Upstream `GetKubeQoSResourceQoSByQoSClass`: the static mapping of the kube-QoS dirs."""
    return {
        KubeQoSClass.GUARANTEED: strategy.lsr_class,
        KubeQoSClass.BURSTABLE: strategy.ls_class,
        KubeQoSClass.BEST_EFFORT: strategy.be_class,
    }.get(KubeQoSClass(kube_qos))


def memory_qos_of(resource_qos: ResourceQOS | None) -> MemoryQOS | None:
    """The class's memory QoS in effect: the "none" values when it says `enable: false`."""
    cfg = None if resource_qos is None else resource_qos.memory_qos
    if cfg is None:
        return None
    if cfg.enable is False:
        return none_memory_qos()
    return MemoryQOS.model_validate(cfg.model_dump(exclude={"enable"}))


def pod_memory_qos(pod: KubeDict, strategy: ResourceQOSStrategy,
                   warnings: AnnotationWarnings | None = None) -> MemoryQOS:
    """The pod's class config merged with its annotation (upstream
    `mergePodResourceQoSForMemoryQoS`): annotation fields > policy template > node config. A
    malformed annotation is ignored (and reported once per value)."""
    cfg = memory_qos_of(class_config(strategy, get_pod_qos_class_with_default(pod)))
    cfg = cfg or MemoryQOS()
    try:
        override = parse_pod_memory_qos((pod.get("metadata") or {}).get("annotations"))
    except MalformedValueError as e:
        if warnings is not None:
            warnings.report(pod, "Pod", e)
        override = None
    if override is None:
        return cfg
    if override.policy == PodMemoryQOSPolicy.NONE:
        return none_memory_qos()
    if override.policy == PodMemoryQOSPolicy.AUTO:
        qos = get_pod_qos_class_with_default(pod)
        cfg = default_memory_qos("LSR" if qos is QoSClass.LSE else qos.value)
    # By field name: the payload's own dump is Go's JSON, which drops zero values.
    given = {name: value for name in MemoryQOS.model_fields
             if (value := getattr(override, name)) is not None}
    return cfg.model_copy(update=given)


def _is_be(pod: KubeDict) -> bool:
    return get_pod_qos_class_raw(pod) is QoSClass.BE


def pod_memory_request(pod: KubeDict) -> int:
    """Pod request in bytes: batch-memory for BE pods (containers without one count 0)."""
    return pod_requests(pod).get(BATCH_MEMORY if _is_be(pod) else MEMORY, 0)


def _percent_of(request: int, percent: int) -> int:
    return request * percent // 100


def pod_summary(request: int, cfg: MemoryQOS) -> MemorySummary:
    summary = MemorySummary()
    summary.set_static(cfg)
    if cfg.min_limit_percent is not None:
        summary.min = _percent_of(request, cfg.min_limit_percent)
    if cfg.low_limit_percent is not None:
        summary.low = _percent_of(request, cfg.low_limit_percent)
    _raise_low_to_min(summary)
    return summary


def memory_high(request: int, limit: int, node_allocatable: int, throttling_percent: int) -> int:
    """`memory.high` of a container: MaxInt64 ("max") when throttling is off, else the point
    at throttlingPercent between request and limit (the node's allocatable memory for an
    unlimited container), rounded down to a page."""
    if throttling_percent == 0:
        return MAX_INT64
    top = limit if limit > 0 else node_allocatable
    high = request + (top - request) * throttling_percent // 100
    return high // PAGE_SIZE * PAGE_SIZE


def container_summary(request: int, limit: int, node_allocatable: int,
                      cfg: MemoryQOS) -> MemorySummary:
    summary = pod_summary(max(request, 0), cfg)
    if cfg.throttling_percent is not None:
        summary.high = memory_high(max(request, 0), limit, node_allocatable,
                                   cfg.throttling_percent)
    if (summary.high is not None and summary.min is not None
            and 0 < summary.high < summary.min):
        summary.high = summary.min
    return summary


def _raise_low_to_min(summary: MemorySummary) -> None:
    if (summary.min is not None and summary.low is not None
            and 0 < summary.low < summary.min):
        summary.low = summary.min


def _container_request_limit(container: KubeDict, be: bool) -> tuple[int, int]:
    """Raises ValueError for a malformed quantity."""
    resources = container.get("resources") or {}
    name = BATCH_MEMORY if be else MEMORY
    request = resource_list(resources.get("requests")).get(name, 0)
    limit = resource_list(resources.get("limits")).get(name, 0)
    return request, limit


def _container_ids(pod: KubeDict) -> dict[str, str]:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return {s["name"]: s["containerID"] for s in statuses
            if s.get("name") and s.get("containerID")}


class CgroupReconcile:
    name = "CgroupReconcile"

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.warnings = AnnotationWarnings(ctx, "cgreconcile")
        self._unsupported_said: set[str] = set()
        # The last round's plans by pod uid, valid for this strategy object and node memory.
        self._strategy: ResourceQOSStrategy | None = None
        self._node_memory = 0
        self._plans: dict[str, _PodPlan] = {}

    def enabled(self) -> bool:
        return (self.ctx.feature_gate.enabled(CGROUP_RECONCILE)
                and self.ctx.config.reconcile_interval_seconds > 0)

    def interval_seconds(self) -> float:
        return float(self.ctx.config.reconcile_interval_seconds)

    def run_once(self) -> None:
        slo = self.ctx.states.get_node_slo()
        strategy = None if slo is None else slo.spec.resource_qos_strategy
        if strategy is None:
            logger.debug("cgreconcile: no NodeSLO resourceQOSStrategy yet")
            return
        node = self.ctx.states.get_node()
        allocatable = ((node or {}).get("status") or {}).get("allocatable")
        if not allocatable:
            logger.error("cgreconcile: node has no allocatable resources yet")
            return
        try:
            node_memory = quantity_int(MEMORY, allocatable.get(MEMORY, 0))
        except ValueError as e:
            logger.error("cgreconcile: node allocatable memory is malformed: %s", e)
            return
        qos_writes, plans = self._plan(strategy, node_memory, self.ctx.states.get_all_pods())
        pod_updaters: list[CgroupUpdater] = []
        container_updaters: list[CgroupUpdater] = []
        for plan in plans:
            if plan.updaters is None:
                plan.updaters = (self._updaters(plan.pod), self._updaters(plan.containers))
            pod_updaters += plan.updaters[0]
            container_updaters += plan.updaters[1]
        self.ctx.executor.leveled_update_batch(
            [self._updaters(qos_writes), pod_updaters, container_updaters])

    def calculate(self, strategy: ResourceQOSStrategy, node_memory: int,
                  pods: list[KubeDict]) -> Levels:
        """Upstream `calculateResources`: the writes of the kube-QoS, pod and container levels."""
        qos_writes, plans = self._plan(strategy, node_memory, pods)
        return Levels(qos_writes, [w for plan in plans for w in plan.pod],
                      [w for plan in plans for w in plan.containers])

    def _plan(self, strategy: ResourceQOSStrategy, node_memory: int,
              pods: list[KubeDict]) -> tuple[list[Write], list[_PodPlan]]:
        """The kube-QoS writes and the pods' plans, in the pods' order; a pod's plan of the
        last round is kept when its inputs are the same."""
        if strategy is not self._strategy or node_memory != self._node_memory:
            self._strategy, self._node_memory, self._plans = strategy, node_memory, {}
        env = self.ctx.env
        qos_summary = {qos: MemorySummary() for qos in _KUBE_QOS_ORDER}
        plans: list[_PodPlan] = []
        kept: dict[str, _PodPlan] = {}
        for pod in pods:
            # Pending pods too: their cgroups may exist before they run.
            if (pod.get("status") or {}).get("phase") not in ("Running", "Pending"):
                continue
            kube_qos = get_kube_qos_class(pod)
            uid = pod_uid(pod)
            try:
                inputs = self._inputs(pod, kube_qos)
            except ValueError as e:
                # Its annotation is still parsed, so that a malformed one is reported too.
                pod_memory_qos(pod, strategy, self.warnings)
                logger.warning("cgreconcile: pod %s has a malformed memory quantity: %s",
                               pod_name(pod), e)
                continue
            plan = self._plans.get(uid)
            if plan is None or plan.inputs != inputs:
                plan = self._pod_plan(pod, env.pod_dir(kube_qos, uid), inputs, strategy,
                                      node_memory)
            plans.append(plan)
            kept[uid] = plan
            summary = qos_summary[KubeQoSClass(kube_qos)]
            if plan.min is not None:
                summary.min = (summary.min or 0) + plan.min
            if plan.low is not None:
                summary.low = (summary.low or 0) + plan.low
        self._plans = kept  # gone pods' plans go
        _complete_guaranteed(qos_summary)
        qos_writes: list[Write] = []
        for kube_qos in _KUBE_QOS_ORDER:
            class_cfg = kube_qos_config(strategy, kube_qos)
            if class_cfg is None:
                continue  # as upstream: a class the strategy lacks leaves its dir alone
            summary = qos_summary[kube_qos]
            qos_cfg = memory_qos_of(class_cfg)
            if qos_cfg is not None:
                summary.set_oom(qos_cfg)
            qos_writes += summary.writes(env.kube_qos_dir(kube_qos))
        return qos_writes, plans

    @staticmethod
    def _inputs(pod: KubeDict, kube_qos: str) -> PodInputs:
        """Raises ValueError for a malformed memory quantity."""
        annotations = (pod.get("metadata") or {}).get("annotations") or {}
        be = _is_be(pod)
        ids = _container_ids(pod)
        containers = []
        for container in (pod.get("spec") or {}).get("containers") or []:
            cid = ids.get(container.get("name", ""))
            if cid is not None:  # else not created yet
                containers.append((cid, *_container_request_limit(container, be)))
        return (kube_qos, get_pod_qos_class_raw(pod), annotations.get(ANNOTATION_POD_MEMORY_QOS),
                pod_memory_request(pod), tuple(containers))

    def _pod_plan(self, pod: KubeDict, pod_dir: str, inputs: PodInputs,
                  strategy: ResourceQOSStrategy, node_memory: int) -> _PodPlan:
        cfg = pod_memory_qos(pod, strategy, self.warnings)
        request, containers = inputs[3], inputs[4]
        container_writes: list[Write] = []
        for cid, c_request, c_limit in containers:
            container_writes += container_summary(c_request, c_limit, node_memory, cfg).writes(
                self.ctx.env.container_dir(pod_dir, cid))
        return _PodPlan(
            inputs, pod_summary(request, cfg).writes(pod_dir), container_writes,
            None if cfg.min_limit_percent is None else _percent_of(request, cfg.min_limit_percent),
            None if cfg.low_limit_percent is None else _percent_of(request, cfg.low_limit_percent))

    def _updaters(self, writes: list[Write]) -> list[CgroupUpdater]:
        """The writes whose files this kernel has (upstream's updater factory checks
        `IsSupported`); a missing file is said once at info level, then at debug level."""
        env = self.ctx.env
        out = []
        for w in writes:
            try:
                updater = new_cgroup_updater(env, w.resource_type, w.parent_dir, w.value)
                env.check_supported(updater.resource, w.parent_dir)
            except ResourceUnsupportedError as e:
                if w.resource_type not in self._unsupported_said:
                    self._unsupported_said.add(w.resource_type)
                    logger.info("cgreconcile: skipping %s, this kernel lacks it (%s)",
                                w.resource_type, e)
                else:
                    logger.debug("cgreconcile: skipping unsupported %s", e)
                continue
            out.append(updater)
        return out


def _complete_guaranteed(qos_summary: dict[KubeQoSClass, MemorySummary]) -> None:
    """The Guaranteed dir is the kubepods root, the parent of the Burstable and BestEffort
    dirs: its min/low protect all of them, so they are the sum of the three."""
    mins = [s.min for s in qos_summary.values() if s.min is not None]
    lows = [s.low for s in qos_summary.values() if s.low is not None]
    guaranteed = qos_summary[KubeQoSClass.GUARANTEED]
    if mins:
        guaranteed.min = sum(mins)
    if lows:
        guaranteed.low = sum(lows)
