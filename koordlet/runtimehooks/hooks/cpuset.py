"""CPUSetAllocator hook (upstream `pkg/koordlet/runtimehooks/hooks/cpuset`): container cpusets
from the scheduler's resource-status annotation, the share pools or the system-QoS cpuset;
quota −1 for pods with an allocated cpuset.

Its rule (`rule.go`: share pools and policies from the NodeResourceTopology) is not parsed
yet: without it, only the resource-status cpuset applies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from api.core import quantity_value
from api.extension.numa import parse_resource_status
from api.extension.qos import QoSClass, get_qos_class_by_labels
from api.extension.resource import BATCH_CPU
from koordlet.runtimehooks.hooks.hooks import RESOURCE_STAGES, Level, RuntimeHook
from koordlet.runtimehooks.protocol import HookRequest, Resources

if TYPE_CHECKING:
    from koordlet.runtimehooks.rule import Rules


@dataclass(slots=True, frozen=True)
class CPUSharePool:
    """A share pool from the node topology: the CPUs of one socket/NUMA node."""

    socket: int
    node: int
    cpuset: str


@dataclass(slots=True)
class CPUSetRule:
    """Share pools and policies from the NodeResourceTopology."""

    share_pools: list[CPUSharePool] = field(default_factory=list)
    be_share_pools: list[CPUSharePool] = field(default_factory=list)
    kubelet_policy: str = "none"
    system_qos_cpuset: str = ""


KUBELET_POLICY_STATIC = "static"


def _join(pools: list[CPUSharePool]) -> str:
    return ",".join(pool.cpuset for pool in pools)


def _container_cpuset(req: HookRequest, rules: Rules) -> str | None:
    status = parse_resource_status(req.annotations)
    if status.cpuset:
        return status.cpuset
    rule = rules.cpuset
    if rule is None:
        return None
    qos = get_qos_class_by_labels(req.labels)
    numa_nodes = [
        entry.node
        for entry in status.numa_node_resources or []
        if quantity_value((entry.resources or {}).get("cpu", "0")) != 0
        or quantity_value((entry.resources or {}).get(BATCH_CPU, "0")) > 0
    ]
    if numa_nodes and (qos is not QoSClass.BE or rules.be_cpu_manager_enabled):
        pools = rule.be_share_pools if qos is QoSClass.BE else rule.share_pools
        return _join([pool for node in numa_nodes for pool in pools if pool.node == node])
    if qos is QoSClass.SYSTEM and rule.system_qos_cpuset:
        return rule.system_qos_cpuset
    if qos is QoSClass.LS:
        return _join(rule.share_pools)
    if "besteffort" in req.cgroup_parent:
        return ""
    if rule.kubelet_policy == KUBELET_POLICY_STATIC:
        return None
    return _join(rule.share_pools)


def cpuset(req: HookRequest, rules: Rules) -> Resources:
    """Pods only get the quota unset; containers get their cpuset (and the quota unset)."""
    has_cpuset = bool(parse_resource_status(req.annotations).cpuset)
    quota = -1 if has_cpuset and not rules.disable_unset_cpu_quota else None
    if req.is_pod:
        return Resources(cfs_quota=quota)
    return Resources(cpuset=_container_cpuset(req, rules), cfs_quota=quota)


HOOK = RuntimeHook(
    name="CPUSetAllocator",
    fn=cpuset,
    stages=RESOURCE_STAGES,
    levels=frozenset({Level.POD, Level.CONTAINER}),
)
