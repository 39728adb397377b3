"""GroupIdentity hook (upstream `pkg/koordlet/runtimehooks/hooks/groupidentity`): the
cpu.bvt_warp_ns of pods and host applications by QoS class and of the kube-QoS dirs (`kubepods`
0, `burstable` the LS value, `besteffort` the BE value), only where the kernel has group
identity.

Its rule (`rule.go`): the bvt value of each QoS class from NodeSLO's resourceQOSStrategy. Whether
the kernel has group identity (`bvt.go` `SystemSupported`: cpu.bvt_warp_ns in the kubepods dir,
or the sysctl `kernel.sched_group_identity_enabled`; Alibaba Cloud Linux / Anolis kernels only)
is probed once at startup by :func:`probe_supported`, which says so in one line when it does not.
Where the kernel has that sysctl, it is switched on (and Anolis' `kernel.sched_core` off) once
some class is enabled.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from api.extension.pod_qos import parse_pod_cpu_qos
from api.extension.qos import KubeQoSClass, QoSClass, get_qos_class_by_labels
from api.slo.v1alpha1 import NodeSLOSpec
from koordlet.runtimehooks.hooks.hooks import Level, RuntimeHook
from koordlet.runtimehooks.protocol import HookRequest, HostAppRequest, Resources, Stage
from koordlet.util.system.cgroup_env import CgroupEnv

if TYPE_CHECKING:
    from koordlet.runtimehooks.rule import Rules

logger = logging.getLogger(__name__)

CPU_POLICY_GROUP_IDENTITY = "groupIdentity"
BVT_FILE = "cpu.bvt_warp_ns"
# Relative to the proc root (upstream `KernelSchedGroupIdentityEnable`).
SYSCTL_GROUP_IDENTITY = "sys/kernel/sched_group_identity_enabled"


@dataclass(slots=True)
class GroupIdentityRule:
    """bvt values per QoS class; a disabled class gets 0."""

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


def _update_rule_from_node_slo(rules: Rules, spec: NodeSLOSpec) -> bool:
    rule = GroupIdentityRule.from_node_slo(spec)
    if rule == rules.group_identity:
        return False
    rules.group_identity = rule
    return True


def _value_by_kube_qos(cgroup_parent: str, rule: GroupIdentityRule) -> int:
    if "besteffort" in cgroup_parent:
        return rule.be_value
    if "burstable" in cgroup_parent:
        return rule.ls_value
    if rule.lsr_enabled:
        return rule.lsr_value
    return rule.ls_value if rule.ls_enabled else 0


def bvt_value(req: HookRequest, rule: GroupIdentityRule) -> int:
    qos = get_qos_class_by_labels(req.labels)
    if qos in (QoSClass.LSE, QoSClass.LSR):
        return rule.lsr_value if rule.lsr_enabled else 0
    if qos is QoSClass.LS:
        pod_cpu_qos = parse_pod_cpu_qos(req.annotations)
        if pod_cpu_qos is not None:
            return (pod_cpu_qos.group_identity or 0) if pod_cpu_qos.enable else 0
        return rule.ls_value if rule.ls_enabled else 0
    if qos is QoSClass.BE:
        return rule.be_value if rule.be_enabled else 0
    return _value_by_kube_qos(req.cgroup_parent, rule)


def kube_qos_bvt_value(qos: KubeQoSClass, rule: GroupIdentityRule) -> int:
    """The kube-QoS dir's bvt: the kubepods root (Guaranteed) stays 0 until the kernel handles
    a non-zero root, as upstream; burstable and besteffort take the LS and BE values."""
    if qos is KubeQoSClass.BURSTABLE:
        return rule.ls_value
    if qos is KubeQoSClass.BEST_EFFORT:
        return rule.be_value
    return 0


def probe_supported(env: CgroupEnv, proc_root: str) -> bool:
    """Whether the kernel has group identity; logs once when it does not."""
    kubepods = env.kube_qos_dir(KubeQoSClass.GUARANTEED)
    bvt = env.path(BVT_FILE, kubepods)
    sysctl = os.path.join(proc_root, SYSCTL_GROUP_IDENTITY)
    if os.path.exists(bvt) or os.path.exists(sysctl):
        return True
    logger.info("GroupIdentity: the kernel has no group identity (neither %s nor %s), "
                "bvt is left as it is", bvt, sysctl)
    return False


def sysctl_if_present(proc_root: str) -> str:
    """The path of `kernel.sched_group_identity_enabled`, "" where the kernel has none (older
    Anolis kernels have group identity always on)."""
    path = os.path.join(proc_root, SYSCTL_GROUP_IDENTITY)
    return path if os.path.exists(path) else ""


def _enable_kernel(rules: Rules, rule: GroupIdentityRule) -> None:
    """Upstream `initialize`: once some class is enabled, switch the kernel's group identity on
    through its sysctl, first switching core scheduling off (the kernel runs one of the two)."""
    sysctl = rules.group_identity_sysctl
    if rules.group_identity_kernel_enabled or not sysctl or not (
            rule.lsr_enabled or rule.ls_enabled or rule.be_enabled):
        return
    sched_core = os.path.join(os.path.dirname(sysctl), "sched_core")
    writes = [(sched_core, "0")] if os.path.exists(sched_core) else []
    try:
        for path, value in [*writes, (sysctl, "1")]:
            with open(path, "r+") as f:
                if f.read().strip() != value:
                    f.seek(0)
                    f.write(value)
    except OSError as e:
        logger.warning("GroupIdentity: cannot switch on %s: %s", sysctl, e)
        return
    rules.group_identity_kernel_enabled = True
    logger.info("GroupIdentity: group identity switched on by %s", sysctl)


def group_identity(req: HookRequest, rules: Rules) -> Resources:
    if not rules.group_identity_supported:
        logger.debug("group identity unsupported by the kernel (no cpu.bvt_warp_ns), "
                     "pod %s/%s left as it is", req.pod_namespace, req.pod_name)
        return Resources()
    if rules.group_identity is None or not req.is_pod:
        return Resources()
    _enable_kernel(rules, rules.group_identity)
    return Resources(cpu_bvt=bvt_value(req, rules.group_identity))


def host_app_bvt_value(qos: str, rule: GroupIdentityRule) -> int:
    """Upstream `getHostQOSBvtValue`: the value of the application's QoS class; 0 for a class
    without one (SYSTEM, none, unknown)."""
    if qos in (QoSClass.LSE, QoSClass.LSR):
        return rule.lsr_value if rule.lsr_enabled else 0
    if qos == QoSClass.LS:
        return rule.ls_value if rule.ls_enabled else 0
    if qos == QoSClass.BE:
        return rule.be_value if rule.be_enabled else 0
    return 0


def host_app_group_identity(req: HostAppRequest, rules: Rules) -> Resources:
    """Upstream `SetHostAppBvtValue`."""
    if not rules.group_identity_supported:
        logger.debug("group identity unsupported by the kernel (no cpu.bvt_warp_ns), host "
                     "application %s left as it is", req.name)
        return Resources()
    if rules.group_identity is None:
        return Resources()
    _enable_kernel(rules, rules.group_identity)
    return Resources(cpu_bvt=host_app_bvt_value(req.qos, rules.group_identity))


def group_identity_kube_qos(qos: KubeQoSClass, rules: Rules) -> Resources:
    if not rules.group_identity_supported or rules.group_identity is None:
        return Resources()
    _enable_kernel(rules, rules.group_identity)
    return Resources(cpu_bvt=kube_qos_bvt_value(qos, rules.group_identity))


HOOK = RuntimeHook(
    name="GroupIdentity",
    fn=group_identity,
    stages=frozenset({Stage.PRE_RUN_POD_SANDBOX}),
    levels=frozenset({Level.KUBE_QOS, Level.POD}),
    host_app=host_app_group_identity,
    on_node_slo=_update_rule_from_node_slo,
    kube_qos=group_identity_kube_qos,
)
