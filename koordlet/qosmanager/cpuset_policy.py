"""The BE CPU choice of cpusuppress's `cpuset` policy: upstream
`pkg/koordlet/qosmanager/plugins/cpusuppress/cpu_suppress.go` (`calculateBESuppressCPUSetPolicy`).

Processors are grouped per (NUMA node, socket); whole physical cores (both hyper-threads) are
taken round-robin over the groups first, then single CPUs, so BE pods share as few cores with
LS pods as possible and spread over the sockets.
"""

from __future__ import annotations

import math
from collections import defaultdict

from koordlet.metricsadvisor.nodeinfo import ProcessorInfo

# The BE cpuset grows by at most 10 % of the node's processors per round.
CPUSET_SCALE_UP_RATIO = 0.1
BE_CPUSET_MIN_CPUS = 2


def be_cpuset_size(suppress_milli: int, old_size: int, num_processors: int) -> int:
    """max(ceil(suppress / 1000), 2), capped at old + ceil(10 % of the processors)."""
    cpus = max(math.ceil(suppress_milli / 1000), BE_CPUSET_MIN_CPUS)
    return min(cpus, old_size + math.ceil(num_processors * CPUSET_SCALE_UP_RATIO))


def _buckets(processors: list[ProcessorInfo]) -> list[list[ProcessorInfo]]:
    n = len(processors)
    by_key: dict[int, list[ProcessorInfo]] = defaultdict(list)
    for p in processors:
        by_key[(p.node_id + n) * (p.socket_id + 1)].append(p)
    buckets = [sorted(b, key=lambda p: (p.core_id, p.cpu_id)) for b in by_key.values()]
    buckets.sort(key=lambda b: (-len(b), b[0].cpu_id))
    return buckets


def select_be_cpus(need: int, processors: list[ProcessorInfo]) -> list[int]:
    """`need` CPUs out of `processors`, sorted; empty when there are not enough."""
    if need <= 0 or len(processors) < need:
        return []
    buckets = _buckets(processors)
    used: set[int] = set()
    chosen: list[int] = []
    at = 0  # the bucket the round-robin continues with
    while need - len(chosen) > 1:  # pass 1: pairs of hyper-threads of one core
        added, start = False, at
        for step in range(len(buckets)):
            if need - len(chosen) <= 1:
                break
            i = (start + step) % len(buckets)
            bucket = buckets[i]
            for a, b in zip(bucket, bucket[1:], strict=False):
                if a.cpu_id in used or b.cpu_id in used or a.core_id != b.core_id:
                    continue
                chosen += [a.cpu_id, b.cpu_id]
                used.update((a.cpu_id, b.cpu_id))
                added, at = True, (i + 1) % len(buckets)
                break
        if not added:
            break
    while len(chosen) < need:  # pass 2: single CPUs
        i = at
        free = next((p for p in buckets[i] if p.cpu_id not in used), None)
        at = (i + 1) % len(buckets)
        if free is not None:
            chosen.append(free.cpu_id)
            used.add(free.cpu_id)
    return sorted(chosen)
