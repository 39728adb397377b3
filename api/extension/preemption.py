"""Preemption labels on pods.

Corresponds to upstream `apis/extension/preemption.go`.
"""

from __future__ import annotations

from enum import StrEnum

from api.extension.constants import SCHEDULING_DOMAIN_PREFIX
from api.extension.objects import KubeDict, labels_of

# The pod's preemption policy when the feature PreemptionPolicyTransformer is on.
LABEL_POD_PREEMPTION_POLICY = SCHEDULING_DOMAIN_PREFIX + "/preemption-policy"
# "true": the pod cannot be a victim of reservation preemption.
LABEL_DISABLE_PREEMPTIBLE = SCHEDULING_DOMAIN_PREFIX + "/disable-preemptible"


class PreemptionPolicy(StrEnum):
    NEVER = "Never"
    PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"


# Used when the transformer is on and the pod has no valid label.
DEFAULT_PREEMPTION_POLICY = PreemptionPolicy.NEVER


def get_pod_koord_preemption_policy(pod: KubeDict | None) -> PreemptionPolicy | None:
    """The label's policy; None when absent or not one of the two values."""
    value = labels_of(pod).get(LABEL_POD_PREEMPTION_POLICY)
    if value == PreemptionPolicy.NEVER:
        return PreemptionPolicy.NEVER
    if value == PreemptionPolicy.PREEMPT_LOWER_PRIORITY:
        return PreemptionPolicy.PREEMPT_LOWER_PRIORITY
    return None


def is_pod_preemptible(pod: KubeDict | None) -> bool:
    """False only when the disable-preemptible label is exactly ``"true"``."""
    return labels_of(pod).get(LABEL_DISABLE_PREEMPTIBLE) != "true"


__all__ = [
    "DEFAULT_PREEMPTION_POLICY", "LABEL_DISABLE_PREEMPTIBLE", "LABEL_POD_PREEMPTION_POLICY",
    "PreemptionPolicy", "get_pod_koord_preemption_policy", "is_pod_preemptible",
]
