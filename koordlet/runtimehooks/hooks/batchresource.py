"""BatchResource hook (upstream `hooks/batchresource`): BE pods' batch-cpu / batch-memory
become cpu.shares, cpu.cfs_quota_us and memory.limit_in_bytes, with upstream's formulas
(`MilliCPUToShares`, `MilliCPUToQuota` in koordlet.util.system.cgroup)."""

from __future__ import annotations

import math

from api.extension.qos import QoSClass, get_qos_class_by_labels
from api.extension.resource import BATCH_CPU, BATCH_MEMORY
from koordlet.runtimehooks.protocol import HookRequest, Resources
from koordlet.runtimehooks.rule import Rules
from koordlet.util.system.cgroup import milli_cpu_to_quota, milli_cpu_to_shares

NAME = "BatchResource"


def _scaled_quota(quota: int, rules: Rules) -> int:
    ratio = rules.batch_resource.cpu_normalization_ratio
    if ratio > 1 and quota > 0:
        return math.ceil(quota / ratio)
    return quota


def batch_resource(req: HookRequest, rules: Rules) -> Resources:
    """Pod values sum over all containers; containers without a limit leave the pod unlimited."""
    if get_qos_class_by_labels(req.labels) is not QoSClass.BE or not req.extended_resources:
        return Resources()
    quota_enabled = rules.batch_resource.enable_cfs_quota
    if not req.is_pod:
        container = req.extended_resources.get(req.container_name or "")
        if container is None:
            return Resources()
        limits = container.limits or {}
        quota = milli_cpu_to_quota(limits.get(BATCH_CPU, 0)) if quota_enabled else -1
        memory = limits.get(BATCH_MEMORY, 0)
        return Resources(
            cpu_shares=milli_cpu_to_shares(container.requests.get(BATCH_CPU, 0)),
            cfs_quota=_scaled_quota(quota, rules),
            memory_limit=memory if memory > 0 else -1,
        )
    containers = req.extended_resources.values()
    shares = milli_cpu_to_shares(
        sum(max(c.requests.get(BATCH_CPU, 0), 0) for c in containers)
    )
    cpu_limits = [(c.limits or {}).get(BATCH_CPU, 0) for c in containers]
    memory_limits = [(c.limits or {}).get(BATCH_MEMORY, 0) for c in containers]
    quota = -1
    if quota_enabled and all(limit > 0 for limit in cpu_limits):
        quota = _scaled_quota(milli_cpu_to_quota(sum(cpu_limits)), rules)
    memory = sum(memory_limits) if all(limit > 0 for limit in memory_limits) else -1
    return Resources(cpu_shares=shares, cfs_quota=quota, memory_limit=memory)
