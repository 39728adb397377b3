"""BatchResource hook (upstream `pkg/koordlet/runtimehooks/hooks/batchresource`): BE pods'
batch-cpu / batch-memory become cpu.shares, cpu.cfs_quota_us and memory.limit_in_bytes, with
upstream's formulas (`MilliCPUToShares`, `MilliCPUToQuota` in koordlet.util.system.cgroup).

Its rule: whether cfsQuota suppression owns the BE quota (`rule.go`, from NodeSLO), and the
node's CPU normalization ratio annotation (upstream the rule of the CPUNormalization hook, whose
quota scaling this hook does).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from api.errors import MalformedValueError
from api.extension.cpu_normalization import (
    ANNOTATION_CPU_NORMALIZATION_RATIO,
    NORMALIZATION_RATIO_DIFF_EPSILON,
)
from api.extension.objects import KubeDict
from api.extension.qos import QoSClass, get_qos_class_by_labels
from api.extension.resource import BATCH_CPU, BATCH_MEMORY
from api.slo.v1alpha1 import NodeSLOSpec
from koordlet.runtimehooks.hooks.hooks import RESOURCE_STAGES, Level, RuntimeHook
from koordlet.runtimehooks.protocol import HookRequest, Resources
from koordlet.util.system.cgroup import milli_cpu_to_quota, milli_cpu_to_shares

if TYPE_CHECKING:
    from koordlet.runtimehooks.rule import Rules

logger = logging.getLogger(__name__)

CPU_SUPPRESS_POLICY_CFS_QUOTA = "cfsQuota"


@dataclass(slots=True)
class BatchResourceRule:
    """Whether BE pods get a CFS quota, and the node's CPU normalization ratio (−1: none)."""

    enable_cfs_quota: bool = True
    cpu_normalization_ratio: float = -1.0

    def update_node_slo(self, spec: NodeSLOSpec) -> bool:
        """cfsQuota suppression owns the BE quota, so the hook leaves it at −1. True if changed."""
        threshold = spec.resource_used_threshold_with_be
        suppress_by_quota = bool(
            threshold is not None
            and threshold.enable
            and threshold.cpu_suppress_policy == CPU_SUPPRESS_POLICY_CFS_QUOTA
        )
        changed = self.enable_cfs_quota == suppress_by_quota
        self.enable_cfs_quota = not suppress_by_quota
        return changed

    def update_node_annotations(self, annotations: Mapping[str, str]) -> bool:
        """The ratio from the node annotation; missing → −1, ≤ 0 or unparsable → error.
        "Changed" only when it moves by at least 0.01, as upstream."""
        raw = annotations.get(ANNOTATION_CPU_NORMALIZATION_RATIO)
        ratio = -1.0
        if raw is not None:
            try:
                ratio = float(raw)
            except ValueError:
                raise MalformedValueError(ANNOTATION_CPU_NORMALIZATION_RATIO, raw) from None
            if ratio <= 0:
                raise MalformedValueError(ANNOTATION_CPU_NORMALIZATION_RATIO, f"{raw} <= 0")
        changed = abs(ratio - self.cpu_normalization_ratio) >= NORMALIZATION_RATIO_DIFF_EPSILON
        self.cpu_normalization_ratio = ratio
        return changed


def _update_rule_from_node_slo(rules: Rules, spec: NodeSLOSpec) -> bool:
    return rules.batch_resource.update_node_slo(spec)


def _update_rule_from_node(rules: Rules, node: KubeDict) -> bool:
    """A malformed ratio is logged naming the node, and the previous ratio is kept."""
    meta = node.get("metadata") or {}
    try:
        return rules.batch_resource.update_node_annotations(meta.get("annotations") or {})
    except MalformedValueError as e:
        logger.error("node %s: %s; keeping cpu normalization ratio %s", meta.get("name"),
                     e, rules.batch_resource.cpu_normalization_ratio)
        return False


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


HOOK = RuntimeHook(
    name="BatchResource",
    fn=batch_resource,
    stages=RESOURCE_STAGES,
    levels=frozenset({Level.POD, Level.CONTAINER}),
    on_node_slo=_update_rule_from_node_slo,
    on_node_metadata=_update_rule_from_node,
)
