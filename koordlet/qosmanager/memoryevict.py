"""memoryevict: upstream `pkg/koordlet/qosmanager/plugins/memoryevict/memory_evict.go`, the
`BEMemoryEvict`, `MemoryAllocatableEvict` and `MemoryEvict` features. Each enabled feature is a
task of the round, in that order, sharing what was released (`Evictor.evict_tasks`): a victim's
eviction counts for every task it releases for.

When the node's memory usage reaches `memoryEvictThresholdPercent` of its capacity, pods are
evicted until the memory they use covers the way down to `memoryEvictLowerPercent` (default
threshold − 2), by BEMemoryEvict and MemoryEvict:

* `BEMemoryEvict`: BE pods, lowest `spec.priority` first, then the largest memory user;
* `MemoryEvict`: pods labelled `koordinator.sh/eviction-enabled: "true"` with a priority at most
  `evictEnabledPriorityThreshold` (required), in upstream's priority order
  (`helpers.priority_order`) with the largest memory user first among equals; pods without
  a memory usage sample are no candidates.

MemoryAllocatableEvict does not look at usage: the memory requested by pods with a priority at
most `allocatableEvictPriorityThreshold` (at most 7999, so never koord-prod) is summed per the
resource their priority class requests (`kubernetes.io/batch-memory`,
`kubernetes.io/mid-memory`, else `memory`); where a sum exceeds
`memoryAllocatableEvictThresholdPercent` of the node's allocatable of that resource (or the node
has none of it), the requests above `memoryAllocatableEvictLowerPercent` are released. Victims
are MemoryEvict's candidates, the larger request first among equals; a victim's request counts
only when the priority class of its `koordinator.sh/priority-class` label or `spec.priority`
(upstream's raw class, no QoS default) has its resource released.

After a round that evicted a pod, `--memory-evict-cool-time-seconds` pass before the next one,
so the node's usage can reflect the evictions first.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass

from api.extension.eviction import EvictionFeature, is_eviction_allowed
from api.extension.priority import (
    PriorityClass,
    get_pod_priority_class_raw,
)
from api.extension.resource import RESOURCE_MEMORY
from api.slo.v1alpha1.strategies import ResourceThresholdStrategy
from koordlet.metriccache import metric_types as mt
from koordlet.qosmanager.evictor import Evictor, EvictTask, evict_reason
from koordlet.qosmanager.framework import Context, KubeDict
from koordlet.qosmanager.helpers import (
    AnnotationWarnings,
    allocatable_evict_release,
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
from pkg.util.podresources import quantity_int

logger = logging.getLogger(__name__)

MEMORY_RELEASE_BUFFER_PERCENT = 2
BE_FEATURE = EvictionFeature.BE_MEMORY_EVICT.value
FEATURE = EvictionFeature.MEMORY_EVICT.value
ALLOCATABLE_FEATURE = EvictionFeature.MEMORY_ALLOCATABLE_EVICT.value
# Upstream's MemoryEvict credits each victim with its memory usage × 1000 against a release in
# bytes (koordlet.md §7.4), so the first victim using any memory ends the round; the next one
# goes after the cool time if usage is still high. Kept so each round evicts what upstream's does.
MEMORY_EVICT_USED_CREDIT = 1000
# BEMemoryEvict and MemoryEvict release the memory pods use (upstream's `podUsed` target),
# MemoryAllocatableEvict the memory their class requests (`podResourceRequest`).
USED_MEMORY = "podUsed/memory"
REQUEST = "podResourceRequest/"


def memory_release_bytes(
    capacity: int, used: int, threshold: int, lower: int | None
) -> int | None:
    """Bytes to release, 0 below the threshold; None when `lower` is not below `threshold`."""
    lower = threshold - MEMORY_RELEASE_BUFFER_PERCENT if lower is None else lower
    if lower >= threshold:
        return None
    usage_pct = used * 100 // capacity
    if usage_pct < threshold:
        return 0
    return capacity * (usage_pct - lower) // 100


@dataclass(slots=True)
class Victim:
    pod: KubeDict
    memory_used: int


def _compare(a: Victim, b: Victim) -> int:
    """Lower priority first; then larger usage; pods without usage last, by name descending."""
    pa, pb = spec_priority(a.pod), spec_priority(b.pod)
    if pa is not None and pb is not None and pa != pb:
        return -1 if pa < pb else 1
    if a.memory_used and b.memory_used:
        return (a.memory_used < b.memory_used) - (a.memory_used > b.memory_used)
    if not a.memory_used and not b.memory_used:
        na, nb = pod_name(a.pod), pod_name(b.pod)
        return (na < nb) - (na > nb)
    return -1 if a.memory_used else 1


def sort_victims(victims: list[Victim]) -> list[Victim]:
    return sorted(victims, key=functools.cmp_to_key(_compare))


class MemoryEvict:
    name = "memoryEvict"

    def __init__(self, ctx: Context, evictor: Evictor | None = None) -> None:
        self.ctx = ctx
        self.evictor = evictor or Evictor(ctx)
        self._last_evict: float | None = None  # monotonic time of the last round that evicted
        self._warnings = AnnotationWarnings(ctx, self.name)

    def enabled(self) -> bool:
        gate = self.ctx.feature_gate
        return any(gate.enabled(f) for f in (BE_FEATURE, ALLOCATABLE_FEATURE, FEATURE)) and (
            self.ctx.config.memory_evict_interval_seconds > 0)

    def interval_seconds(self) -> float:
        return float(self.ctx.config.memory_evict_interval_seconds)

    def run_once(self) -> None:
        cool = self.ctx.config.memory_evict_cool_time_seconds
        if self._last_evict is not None and self.ctx.clock.monotonic() - self._last_evict < cool:
            return
        slo = self.ctx.states.get_node_slo()
        strategy = slo.spec.resource_used_threshold_with_be if slo else None
        if strategy is None or strategy.enable is not True:
            return
        node = self.ctx.states.get_node()
        capacity = quantity_int(
            "memory", ((node or {}).get("status") or {}).get("capacity", {}).get("memory", 0)
        )
        if node is None or capacity <= 0:
            return
        if self.evictor.evict_tasks(self.tasks(strategy, node, capacity), self.name):
            self._last_evict = self.ctx.clock.monotonic()

    def used_release(self, strategy: ResourceThresholdStrategy, capacity: int) -> int:
        """Bytes BEMemoryEvict and MemoryEvict release, 0 below the threshold or when the NodeSLO
        lacks a valid threshold (logged)."""
        threshold = strategy.memory_evict_threshold_percent
        if threshold is None:
            logger.warning("memoryevict: NodeSLO has no memoryEvictThresholdPercent, skipped")
            return 0
        used = last_value(self.ctx, mt.NODE_MEMORY_USAGE)
        if used is None:
            return 0
        release = memory_release_bytes(
            capacity, int(used), threshold, strategy.memory_evict_lower_percent
        )
        if release is None:
            logger.warning(
                "memoryevict: NodeSLO memoryEvictLowerPercent %s is not below threshold %d",
                strategy.memory_evict_lower_percent, threshold,
            )
            return 0
        if release > 0:
            logger.info("memoryevict: node memory usage(%d%%) >= threshold(%d%%), release %d "
                        "bytes", int(used) * 100 // capacity, threshold, release)
        return release

    def allocatable_release(
        self, strategy: ResourceThresholdStrategy, node: KubeDict
    ) -> dict[str, int]:
        """MemoryAllocatableEvict's release per resource; empty when nothing is over its
        threshold or the NodeSLO lacks a field it needs (logged)."""
        return allocatable_evict_release(
            self.ctx, node, RESOURCE_MEMORY, ALLOCATABLE_FEATURE, logger,
            strategy.memory_allocatable_evict_threshold_percent,
            strategy.memory_allocatable_evict_lower_percent,
            strategy.allocatable_evict_priority_threshold)

    def tasks(
        self, strategy: ResourceThresholdStrategy, node: KubeDict, capacity: int
    ) -> list[EvictTask]:
        """The round's task of each enabled feature with something to release, in upstream's
        order."""
        gate, tasks = self.ctx.feature_gate, []
        used = (self.used_release(strategy, capacity)
                if gate.enabled(BE_FEATURE) or gate.enabled(FEATURE) else 0)
        allocatable = (self.allocatable_release(strategy, node)
                       if gate.enabled(ALLOCATABLE_FEATURE) else {})
        # Every task's victims credit what MemoryAllocatableEvict releases for their class.
        classes = released_classes(allocatable)
        if used > 0 and gate.enabled(BE_FEATURE):
            victims = [(v.pod, self._amounts(v.pod, v.memory_used, classes))
                       for v in self.be_victims()]
            tasks.append(EvictTask(evict_reason(BE_FEATURE), {USED_MEMORY: used}, victims))
        limit = strategy.allocatable_evict_priority_threshold
        if allocatable and limit is not None:
            victims = self.priority_victims(ALLOCATABLE_FEATURE, limit, classes,
                                            by_request=True)
            release = {REQUEST + name: amount for name, amount in allocatable.items()}
            tasks.append(EvictTask(evict_reason(ALLOCATABLE_FEATURE), release, victims))
        if used > 0 and gate.enabled(FEATURE):
            limit = strategy.evict_enabled_priority_threshold
            if limit is None:
                logger.warning("memoryevict: NodeSLO has no evictEnabledPriorityThreshold, "
                               "%s skipped", FEATURE)
            else:
                victims = self.priority_victims(FEATURE, limit, classes)
                tasks.append(EvictTask(evict_reason(FEATURE), {USED_MEMORY: used}, victims))
        return tasks

    def _amounts(self, pod: KubeDict, used_credit: int,
                 classes: frozenset[PriorityClass]) -> dict[str, int]:
        """What evicting `pod` releases for each task of the round (upstream applies every
        task's measure to each victim): its memory usage as its task counts it and, when its
        raw class's resource is released by MemoryAllocatableEvict, its class's request."""
        amounts = {USED_MEMORY: used_credit}
        if get_pod_priority_class_raw(pod) in classes:
            request = checked_class_request(pod, RESOURCE_MEMORY, logger)
            if request is not None:
                amounts[REQUEST + request[0]] = request[1]
        return amounts

    def _memory_used(self, pod: KubeDict) -> int:
        return int(last_value(self.ctx, mt.POD_MEMORY_USAGE, {mt.POD_UID: pod_uid(pod)}) or 0)

    def be_victims(self) -> list[Victim]:
        out = []
        for pod in self.ctx.states.get_all_pods():
            annotations = (pod.get("metadata") or {}).get("annotations")
            if not is_labelled_be(pod) or not is_active(pod):
                continue
            if not is_eviction_allowed(annotations, BE_FEATURE):
                continue
            out.append(Victim(pod, self._memory_used(pod)))
        return sort_victims(out)

    def priority_victims(
        self, feature: str, priority_threshold: int, classes: frozenset[PriorityClass],
        by_request: bool = False,
    ) -> list[tuple[KubeDict, dict[str, int]]]:
        """The candidates of `feature` with a memory usage sample, in eviction order: the larger
        memory user first among equals, or with `by_request` the larger request."""
        used, keyed = {}, []
        for pod in self.ctx.states.get_all_pods():
            if not evictable_by_priority(pod, feature, priority_threshold):
                continue
            sample = last_value(self.ctx, mt.POD_MEMORY_USAGE, {mt.POD_UID: pod_uid(pod)})
            if sample is None:
                continue
            used[pod_uid(pod)] = int(sample)
            if by_request:
                request = checked_class_request(pod, RESOURCE_MEMORY, logger)
                keyed.append((pod, request[1] if request else 0))
            else:
                keyed.append((pod, int(sample)))
        return [(pod, self._amounts(pod, used[pod_uid(pod)] * MEMORY_EVICT_USED_CREDIT, classes))
                for pod, _ in priority_order(keyed, self._warnings)]
