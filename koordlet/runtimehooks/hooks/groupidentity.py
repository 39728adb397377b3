"""GroupIdentity hook (upstream `hooks/groupidentity`): the pod's cpu.bvt_warp_ns by QoS class,
only where the kernel has group identity."""

from __future__ import annotations

import logging

from api.extension.pod_qos import parse_pod_cpu_qos
from api.extension.qos import QoSClass, get_qos_class_by_labels
from koordlet.runtimehooks.protocol import HookRequest, Resources
from koordlet.runtimehooks.rule import GroupIdentityRule, Rules

logger = logging.getLogger(__name__)

NAME = "GroupIdentity"


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


def group_identity(req: HookRequest, rules: Rules) -> Resources:
    if not rules.group_identity_supported:
        logger.debug("group identity unsupported by the kernel (no cpu.bvt_warp_ns), "
                     "pod %s/%s left as it is", req.pod_namespace, req.pod_name)
        return Resources()
    if rules.group_identity is None or not req.is_pod:
        return Resources()
    return Resources(cpu_bvt=bvt_value(req, rules.group_identity))
