"""memoryevict: upstream `pkg/koordlet/qosmanager/plugins/memoryevict/memory_evict.go`, the
`BEMemoryEvict` and `MemoryEvict` features (`MemoryAllocatableEvict` is not implemented).

When the node's memory usage reaches `memoryEvictThresholdPercent` of its capacity, pods are
evicted until the memory they use covers the way down to `memoryEvictLowerPercent` (default
threshold − 2). Each enabled feature is a task of the round, in upstream's order, sharing what
was released (`Evictor.evict_tasks`):

* `BEMemoryEvict`: BE pods, lowest `spec.priority` first, then the largest memory user;
* `MemoryEvict`: pods labelled `koordinator.sh/eviction-enabled: "true"` with a priority at most
  `evictEnabledPriorityThreshold` (required), in upstream's priority order
  (`helpers.priority_order`) with the largest memory user first among equals.

After a round that evicted a pod, `--memory-evict-cool-time-seconds` pass before the next one,
so the node's usage can reflect the evictions first.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass

from api.extension.eviction import EvictionFeature, is_eviction_allowed
from api.slo.v1alpha1.strategies import ResourceThresholdStrategy
from koordlet.metriccache import metric_types as mt
from koordlet.qosmanager.evictor import Evictor, EvictTask, evict_reason
from koordlet.qosmanager.framework import Context, KubeDict
from koordlet.qosmanager.helpers import (
    AnnotationWarnings,
    evictable_by_priority,
    is_active,
    is_labelled_be,
    last_value,
    pod_name,
    pod_uid,
    priority_order,
    spec_priority,
)
from pkg.util.podresources import quantity_int

logger = logging.getLogger(__name__)

MEMORY_RELEASE_BUFFER_PERCENT = 2
BE_FEATURE = EvictionFeature.BE_MEMORY_EVICT.value
FEATURE = EvictionFeature.MEMORY_EVICT.value
# Upstream's MemoryEvict credits each victim with its memory usage × 1000 against a release in
# bytes (koordlet.md §7.4), so the first victim using any memory ends the round; the next one
# goes after the cool time if usage is still high. Kept so each round evicts what upstream's does.
MEMORY_EVICT_USED_CREDIT = 1000
# Both features release the memory pods use (upstream's `podUsed` target).
USED_MEMORY = "podUsed/memory"


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
        return (gate.enabled(BE_FEATURE) or gate.enabled(FEATURE)) and (
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
        threshold = strategy.memory_evict_threshold_percent
        if threshold is None:
            logger.warning("memoryevict: NodeSLO has no memoryEvictThresholdPercent, skipped")
            return
        node = self.ctx.states.get_node()
        capacity = quantity_int(
            "memory", ((node or {}).get("status") or {}).get("capacity", {}).get("memory", 0)
        )
        if node is None or capacity <= 0:
            return
        used = last_value(self.ctx, mt.NODE_MEMORY_USAGE)
        if used is None:
            return
        release = memory_release_bytes(
            capacity, int(used), threshold, strategy.memory_evict_lower_percent
        )
        if release is None:
            logger.warning(
                "memoryevict: NodeSLO memoryEvictLowerPercent %s is not below threshold %d",
                strategy.memory_evict_lower_percent, threshold,
            )
            return
        if release <= 0:
            return
        logger.info("memoryevict: node memory usage %d of %d, release %d bytes",
                    int(used), capacity, release)
        message = f"node memory usage({int(used) * 100 // capacity}%) >= threshold({threshold}%)"
        if self.evictor.evict_tasks(self.tasks(strategy, release, message), self.name):
            self._last_evict = self.ctx.clock.monotonic()

    def tasks(
        self, strategy: ResourceThresholdStrategy, release: int, message: str
    ) -> list[EvictTask]:
        """The round's task of each enabled feature, in upstream's order."""
        gate, tasks = self.ctx.feature_gate, []
        if gate.enabled(BE_FEATURE):
            victims = [(v.pod, {USED_MEMORY: v.memory_used}) for v in self.be_victims()]
            tasks.append(
                EvictTask(evict_reason(BE_FEATURE), message, USED_MEMORY, release, victims))
        if gate.enabled(FEATURE):
            limit = strategy.evict_enabled_priority_threshold
            if limit is None:
                logger.warning("memoryevict: NodeSLO has no evictEnabledPriorityThreshold, "
                               "%s skipped", FEATURE)
            else:
                victims = [(pod, {USED_MEMORY: used * MEMORY_EVICT_USED_CREDIT})
                           for pod, used in self.priority_victims(limit)]
                tasks.append(
                    EvictTask(evict_reason(FEATURE), message, USED_MEMORY, release, victims))
        return tasks

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

    def priority_victims(self, priority_threshold: int) -> list[tuple[KubeDict, int]]:
        """MemoryEvict's candidates with their memory usage in bytes, in eviction order."""
        victims = [(pod, self._memory_used(pod)) for pod in self.ctx.states.get_all_pods()
                   if evictable_by_priority(pod, FEATURE, priority_threshold)]
        return priority_order(victims, self._warnings)
