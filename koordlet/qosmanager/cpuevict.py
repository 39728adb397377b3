"""cpuevict: upstream `pkg/koordlet/qosmanager/plugins/cpuevict/cpu_evict.go`, the `BECPUEvict`,
`CPUAllocatableEvict` and `CPUEvict` features. Each enabled feature is a task of the round, in
that order (`Evictor.evict_tasks`); a victim's eviction counts for every task it releases for.

BECPUEvict: BE pods are evicted when their CPU *satisfaction* (the BE real limit over the BE
CPU request) stays below `cpuEvictBESatisfactionLowerPercent` while they use most of what they
get (`cpuEvictBEUsageThresholdPercent`, default 90). Enough batch-cpu request is released, lowest
priority pods first, to lift the satisfaction to `cpuEvictBESatisfactionUpperPercent`. Inputs
are the `node_be` metrics (millicores; allocation `usage`, `request`, `realLimit`), averaged
over `max(collect interval, cpuEvictTimeWindowSeconds)` and confirmed by the last values. No
round runs within `--cpu-evict-cool-time-seconds` of the last eviction (or of start).

CPUEvict: when the node's CPU usage averaged over the same window reaches
`cpuEvictThresholdPercent` of its capacity, pods labelled `koordinator.sh/eviction-enabled:
"true"` with a priority at most `evictEnabledPriorityThreshold` are evicted in upstream's
priority order (`helpers.priority_order`, the larger CPU user first among equals) until the CPU
they use covers the way down to `cpuEvictLowerPercent` (default threshold − 2). Pods without a
CPU usage sample are no candidates, as upstream.

CPUAllocatableEvict: the CPU requested by pods with a priority at most
`allocatableEvictPriorityThreshold` (at most 7999, so never koord-prod) is summed per the
resource their priority class requests (`kubernetes.io/batch-cpu`, `kubernetes.io/mid-cpu`,
else `cpu`); where a sum exceeds `cpuAllocatableEvictThresholdPercent` of the node's allocatable
of that resource (or the node has none of it), the requests above `cpuAllocatableEvictLowerPercent`
are released. Victims are the same opted-in pods in priority order, the larger request first
among equals; a victim's request counts only when its class's resource is being released (so,
as upstream, a release of plain `cpu` is never covered and takes every candidate).
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass

from api.extension.eviction import EvictionFeature, is_eviction_allowed
from api.extension.priority import (
    PriorityClass,
    get_pod_priority_class_with_default,
)
from api.extension.resource import BATCH_CPU, RESOURCE_CPU
from api.slo.v1alpha1.strategies import CPUEvictPolicy, ResourceThresholdStrategy
from koordlet.metriccache import metric_types as mt
from koordlet.qosmanager.evictor import Evictor, EvictTask, evict_reason
from koordlet.qosmanager.framework import Context, KubeDict
from koordlet.qosmanager.helpers import (
    AnnotationWarnings,
    allocatable_evict_release,
    avg_over,
    checked_class_request,
    evictable_by_priority,
    is_active,
    is_labelled_be,
    last_value,
    pod_name,
    pod_uid,
    priority_order,
    released_classes,
    spec_priority,
)
from pkg.util.podresources import pod_requests, quantity_int

logger = logging.getLogger(__name__)

BE_FEATURE = EvictionFeature.BE_CPU_EVICT.value
FEATURE = EvictionFeature.CPU_EVICT.value
ALLOCATABLE_FEATURE = EvictionFeature.CPU_ALLOCATABLE_EVICT.value
DEFAULT_BE_USAGE_THRESHOLD_PERCENT = 90
BE_SATISFACTION_LOWER_MAX_PERCENT = 60
CPU_RELEASE_BUFFER_PERCENT = 2
# What the tasks release (upstream's release targets): BECPUEvict the batch-cpu the victims
# request, CPUAllocatableEvict the CPU their class requests, CPUEvict the CPU they use; an
# eviction counts for all of them.
REQUEST = "podResourceRequest/"
REQUEST_BATCH_CPU = REQUEST + BATCH_CPU
USED_CPU = "podUsed/cpu"


@dataclass(slots=True)
class BEUsage:
    """BE CPU figures in millicores."""

    usage: float
    request: float
    limit: float


def usage_high(be: BEUsage, threshold_percent: int) -> bool:
    """BE pods use (nearly) all they may: a limit under one core always counts as high."""
    return be.limit > 0 and (be.limit < 1000 or be.usage / be.limit >= threshold_percent / 100)


def release_milli(request: float, limit: float, lower: int, upper: int) -> int:
    """Request to evict so that limit / request reaches `upper` %; 0 while above `lower` %."""
    if request <= 0:
        return 0
    satisfaction = limit / request
    if satisfaction > lower / 100:
        return 0
    gap = upper / 100 - satisfaction
    return int(request * gap) if gap > 0 else 0


def used_release_milli(capacity_milli: int, used_cores: float, threshold: int,
                       lower: int | None) -> int | None:
    """CPUEvict's milli-CPU to release, 0 below the threshold; None when `lower` (default
    threshold − 2) is not below `threshold`."""
    lower = threshold - CPU_RELEASE_BUFFER_PERCENT if lower is None else lower
    if lower >= threshold:
        return None
    usage_pct = int(used_cores * 1000) * 100 // capacity_milli
    if usage_pct < threshold:
        return 0
    return capacity_milli * (usage_pct - lower) // 100


def valid_config(strategy: ResourceThresholdStrategy) -> tuple[int, int] | None:
    lower = strategy.cpu_evict_be_satisfaction_lower_percent
    upper = strategy.cpu_evict_be_satisfaction_upper_percent
    if lower is None or upper is None:
        return None
    if not (0 < lower <= BE_SATISFACTION_LOWER_MAX_PERCENT and 0 < upper < 100 and upper >= lower):
        return None
    return lower, upper


@dataclass(slots=True)
class Victim:
    pod: KubeDict
    used_milli: int
    request_milli: int

    def cpu_usage(self) -> float:
        return self.used_milli / self.request_milli if self.request_milli else 0.0


def _compare(a: Victim, b: Victim) -> int:
    """Lower priority first; otherwise the pod using more of its request first."""
    pa, pb = spec_priority(a.pod), spec_priority(b.pod)
    if pa is not None and pb is not None and pa != pb:
        return -1 if pa < pb else 1
    ua, ub = a.cpu_usage(), b.cpu_usage()
    return (ua < ub) - (ua > ub)


def sort_victims(victims: list[Victim]) -> list[Victim]:
    return sorted(victims, key=functools.cmp_to_key(_compare))


class CPUEvict:
    name = "CPUEvict"

    def __init__(self, ctx: Context, evictor: Evictor | None = None) -> None:
        self.ctx = ctx
        self.evictor = evictor or Evictor(ctx)
        self._last_evict = ctx.clock.monotonic()  # upstream starts the cool time at start
        self._warnings = AnnotationWarnings(ctx, self.name)

    def enabled(self) -> bool:
        gate = self.ctx.feature_gate
        return any(gate.enabled(f) for f in (BE_FEATURE, ALLOCATABLE_FEATURE, FEATURE)) and (
            self.ctx.config.cpu_evict_interval_seconds > 0)

    def interval_seconds(self) -> float:
        return float(self.ctx.config.cpu_evict_interval_seconds)

    def run_once(self) -> None:
        cool = self.ctx.config.cpu_evict_cool_time_seconds
        if self.ctx.clock.monotonic() - self._last_evict < cool:
            return
        slo = self.ctx.states.get_node_slo()
        strategy = slo.spec.resource_used_threshold_with_be if slo else None
        if strategy is None or strategy.enable is not True:
            return
        node = self.ctx.states.get_node()
        capacity = quantity_int(
            "cpu", ((node or {}).get("status") or {}).get("capacity", {}).get("cpu", 0))
        if node is None or capacity <= 0:
            return
        gate, tasks = self.ctx.feature_gate, []
        # Every task's victims credit what CPUAllocatableEvict releases for their class.
        allocatable = (self.allocatable_release(strategy, node)
                       if gate.enabled(ALLOCATABLE_FEATURE) else {})
        classes = released_classes(allocatable)
        if gate.enabled(BE_FEATURE):
            tasks += self.be_task(strategy, node, classes)
        limit = strategy.allocatable_evict_priority_threshold
        if allocatable and limit is not None:
            victims = self.priority_victims(ALLOCATABLE_FEATURE, limit, classes, by_request=True)
            release = {REQUEST + name: amount for name, amount in allocatable.items()}
            tasks.append(EvictTask(evict_reason(ALLOCATABLE_FEATURE), release, victims))
        if gate.enabled(FEATURE):
            tasks += self.used_task(strategy, capacity, classes)
        if tasks and self.evictor.evict_tasks(tasks, self.name):
            self._last_evict = self.ctx.clock.monotonic()

    def be_task(self, strategy: ResourceThresholdStrategy, node: KubeDict,
                classes: frozenset[PriorityClass]) -> list[EvictTask]:
        bounds = valid_config(strategy)
        if bounds is None:
            logger.warning(
                "cpuevict: NodeSLO cpuEvictBESatisfactionLowerPercent %s / UpperPercent %s "
                "invalid (need 0 < lower <= 60, lower <= upper < 100), %s skipped",
                strategy.cpu_evict_be_satisfaction_lower_percent,
                strategy.cpu_evict_be_satisfaction_upper_percent, BE_FEATURE,
            )
            return []
        release = self.release(strategy, node, *bounds)
        if release <= 0:
            return []
        logger.info("cpuevict: BE CPU satisfaction too low, release %dm %s request", release,
                    BATCH_CPU)
        victims = [(v.pod, self._amounts(v.pod, v.used_milli, classes)) for v in self.victims()]
        return [EvictTask(evict_reason(BE_FEATURE), {REQUEST_BATCH_CPU: release}, victims)]

    def used_task(self, strategy: ResourceThresholdStrategy, capacity: int,
                  classes: frozenset[PriorityClass]) -> list[EvictTask]:
        threshold = strategy.cpu_evict_threshold_percent
        limit = strategy.evict_enabled_priority_threshold
        if threshold is None or limit is None:
            logger.warning("cpuevict: NodeSLO has no cpuEvictThresholdPercent or "
                           "evictEnabledPriorityThreshold, %s skipped", FEATURE)
            return []
        interval = self.ctx.collect_res_used_interval_seconds
        window = max(interval, float(strategy.cpu_evict_time_window_seconds or 0))
        used = avg_over(self.ctx, mt.NODE_CPU_USAGE, {}, window)
        if not used.count:
            return []
        release = used_release_milli(capacity, used.value, threshold,
                                     strategy.cpu_evict_lower_percent)
        if release is None:
            logger.warning("cpuevict: NodeSLO cpuEvictLowerPercent %s is not below threshold "
                           "%d, %s skipped", strategy.cpu_evict_lower_percent, threshold,
                           FEATURE)
            return []
        if release <= 0:
            return []
        usage_pct = int(used.value * 1000) * 100 // capacity
        logger.info("cpuevict: node cpu usage %d%% >= threshold %d%%, release %dm cpu",
                    usage_pct, threshold, release)
        return [EvictTask(evict_reason(FEATURE), {USED_CPU: release},
                          self.priority_victims(FEATURE, limit, classes))]

    def allocatable_release(
        self, strategy: ResourceThresholdStrategy, node: KubeDict
    ) -> dict[str, int]:
        """CPUAllocatableEvict's release per resource; empty when nothing is over its threshold
        or the NodeSLO lacks a field it needs (logged)."""
        return allocatable_evict_release(
            self.ctx, node, RESOURCE_CPU, ALLOCATABLE_FEATURE, logger,
            strategy.cpu_allocatable_evict_threshold_percent,
            strategy.cpu_allocatable_evict_lower_percent,
            strategy.allocatable_evict_priority_threshold)

    def release(
        self, strategy: ResourceThresholdStrategy, node: KubeDict, lower: int, upper: int
    ) -> int:
        """Batch-cpu request (milli) to release, 0 when BE pods are satisfied enough."""
        interval = self.ctx.collect_res_used_interval_seconds
        window = max(interval, float(strategy.cpu_evict_time_window_seconds or 0))
        windows = {
            a: avg_over(self.ctx, mt.NODE_BE, _be_props(a), window)
            for a in ("usage", "request", "realLimit")
        }
        count = min(w.count for w in windows.values())
        if count * interval < int(window) // 3:
            logger.debug("cpuevict: %d BE samples in %ss window, too few", count, window)
            return 0
        alloc_limit = self._allocatable_limit(strategy, node)
        avg = BEUsage(
            windows["usage"].value,
            windows["request"].value,
            windows["realLimit"].value if alloc_limit is None else alloc_limit,
        )
        threshold = strategy.cpu_evict_be_usage_threshold_percent
        threshold = DEFAULT_BE_USAGE_THRESHOLD_PERCENT if threshold is None else threshold
        if not usage_high(avg, threshold):
            return 0
        released = release_milli(avg.request, avg.limit, lower, upper)
        if released <= 0:
            return 0
        usage, request, real_limit = (last_value(self.ctx, mt.NODE_BE, _be_props(a))
                                      for a in ("usage", "request", "realLimit"))
        if usage is None or request is None or real_limit is None:
            return 0
        limit = real_limit if alloc_limit is None else alloc_limit
        current = BEUsage(usage, request, limit)
        if not usage_high(current, threshold):
            return 0
        if current.request == avg.request and current.limit == avg.limit:
            return released
        now_release = release_milli(current.request, current.limit, lower, upper)
        return min(released, now_release) if now_release > 0 else 0

    def _allocatable_limit(
        self, strategy: ResourceThresholdStrategy, node: KubeDict
    ) -> float | None:
        """Under `evictByAllocatable` the node's batch-cpu allocatable replaces the real limit."""
        if strategy.cpu_evict_policy != CPUEvictPolicy.EVICT_BY_ALLOCATABLE:
            return None
        raw = ((node.get("status") or {}).get("allocatable") or {}).get(BATCH_CPU)
        try:
            value = quantity_int(BATCH_CPU, raw) if raw is not None else -1
        except ValueError:
            logger.warning("cpuevict: node %s has a malformed %s allocatable %r",
                           (node.get("metadata") or {}).get("name"), BATCH_CPU, raw)
            value = -1
        return 1.0 if value == 0 else float(value if value > 0 else -1)

    def victims(self) -> list[Victim]:
        out = []
        for pod in self.ctx.states.get_all_pods():
            annotations = (pod.get("metadata") or {}).get("annotations")
            if not is_labelled_be(pod) or not is_active(pod):
                continue
            if not is_eviction_allowed(annotations, BE_FEATURE):
                continue
            request = _batch_cpu_request(pod)
            if request is None:
                continue
            used = last_value(self.ctx, mt.POD_CPU_USAGE, {mt.POD_UID: pod_uid(pod)})
            out.append(Victim(pod, int((used or 0) * 1000), request))
        return sort_victims(out)

    def priority_victims(
        self, feature: str, priority_threshold: int, classes: frozenset[PriorityClass],
        by_request: bool = False,
    ) -> list[tuple[KubeDict, dict[str, int]]]:
        """The candidates of `feature` with a CPU usage sample, in eviction order: the larger
        CPU user first among equals, or with `by_request` the larger request."""
        used_milli, keyed = {}, []
        for pod in self.ctx.states.get_all_pods():
            if not evictable_by_priority(pod, feature, priority_threshold):
                continue
            used = last_value(self.ctx, mt.POD_CPU_USAGE, {mt.POD_UID: pod_uid(pod)})
            if used is None:
                continue
            used_milli[pod_uid(pod)] = int(used * 1000)
            if by_request:
                request = checked_class_request(pod, RESOURCE_CPU, logger)
                keyed.append((pod, request[1] if request else 0))
            else:
                keyed.append((pod, used_milli[pod_uid(pod)]))
        return [(pod, self._amounts(pod, used_milli[pod_uid(pod)], classes))
                for pod, _ in priority_order(keyed, self._warnings)]

    def _amounts(self, pod: KubeDict, used_milli: int,
                 classes: frozenset[PriorityClass]) -> dict[str, int]:
        """What evicting `pod` releases for each task of the round (upstream applies every
        task's measure to each victim): its batch-cpu request, its CPU usage and, when its
        class's resource is released by CPUAllocatableEvict, its class's request."""
        amounts = {REQUEST_BATCH_CPU: _batch_cpu_request(pod) or 0, USED_CPU: used_milli}
        if get_pod_priority_class_with_default(pod) in classes:
            request = checked_class_request(pod, RESOURCE_CPU, logger)
            if request is not None:
                name, value = request
                amounts[REQUEST + name] = max(value, amounts.get(REQUEST + name, 0))
        return amounts


def _batch_cpu_request(pod: KubeDict) -> int | None:
    """The batch-cpu the pod requests (milli); None, logged, when a request is malformed."""
    try:
        return pod_requests(pod).get(BATCH_CPU, 0)
    except ValueError as e:
        logger.warning("cpuevict: pod %s has a malformed request: %s", pod_name(pod), e)
        return None


def _be_props(allocation: str) -> dict[str, str]:
    return {mt.BE_RESOURCE: "cpu", mt.BE_ALLOCATION: allocation}
