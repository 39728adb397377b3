"""Node-wide rules the hooks read (upstream `pkg/koordlet/runtimehooks/rule` and each hook's
`rule.go`): parsed from NodeSLO, node metadata and topology by the states-informer callbacks."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from api.errors import MalformedValueError
from api.extension.cpu_normalization import (
    ANNOTATION_CPU_NORMALIZATION_RATIO,
    NORMALIZATION_RATIO_DIFF_EPSILON,
)
from api.slo.v1alpha1 import NodeSLOSpec

logger = logging.getLogger(__name__)

CPU_SUPPRESS_POLICY_CFS_QUOTA = "cfsQuota"
CPU_POLICY_GROUP_IDENTITY = "groupIdentity"


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


@dataclass(slots=True, frozen=True)
class CPUSharePool:
    """A share pool from the node topology: the CPUs of one socket/NUMA node."""

    socket: int
    node: int
    cpuset: str


@dataclass(slots=True)
class CPUSetRule:
    """Share pools and policies from the NodeResourceTopology (upstream `cpuset/rule.go`)."""

    share_pools: list[CPUSharePool] = field(default_factory=list)
    be_share_pools: list[CPUSharePool] = field(default_factory=list)
    kubelet_policy: str = "none"
    system_qos_cpuset: str = ""


@dataclass(slots=True)
class GroupIdentityRule:
    """bvt values per QoS class; a disabled class gets 0 (upstream `groupidentity/rule.go`)."""

    lsr_value: int = 0
    ls_value: int = 0
    be_value: int = 0
    lsr_enabled: bool = False
    ls_enabled: bool = False
    be_enabled: bool = False

    @classmethod
    def from_node_slo(cls, spec: NodeSLOSpec) -> GroupIdentityRule | None:
        """The rule when `policies.cpuPolicy` is empty or `groupIdentity`, else None."""
        policies = getattr(spec.resource_qos_strategy, "policies", None)
        cpu_policy = getattr(policies, "cpu_policy", None) or ""
        if cpu_policy not in ("", CPU_POLICY_GROUP_IDENTITY):
            return None
        rule = cls()
        strategy = spec.resource_qos_strategy
        for name in ("lsr", "ls", "be"):
            qos = getattr(strategy, f"{name}_class", None) if strategy else None
            cpu_qos = getattr(qos, "cpu_qos", None)
            if cpu_qos is not None and cpu_qos.enable:
                setattr(rule, f"{name}_enabled", True)
                setattr(rule, f"{name}_value", cpu_qos.group_identity or 0)
        return rule


@dataclass(slots=True)
class Rules:
    """All rules, plus the node facts the hooks need."""

    batch_resource: BatchResourceRule = field(default_factory=BatchResourceRule)
    cpuset: CPUSetRule | None = None
    group_identity: GroupIdentityRule | None = None
    # cpu.bvt_warp_ns exists in the kubepods root (or the group-identity sysctl does).
    group_identity_supported: bool = False
    be_cpu_manager_enabled: bool = False
    disable_unset_cpu_quota: bool = False
