"""Pod keys of the pod webhook and of reservation pre-allocation.

Corresponds to the ``pod.koordinator.sh`` keys of upstream `apis/extension/constants.go`.
"""

from __future__ import annotations

from collections.abc import Mapping

from api.extension.codec import parse_int_value
from api.extension.constants import POD_DOMAIN_PREFIX
from api.extension.objects import KubeDict, labels_of

# "true": the webhook also mutates the pod on UPDATE.
LABEL_POD_MUTATING_UPDATE = POD_DOMAIN_PREFIX + "/mutating-update"
# "true": the enhanced pod validator skips the pod.
LABEL_POD_SKIP_ENHANCED_VALIDATION = POD_DOMAIN_PREFIX + "/skip-enhanced-validation"
# "true": the pod is a pre-allocation candidate in the reservation's Cluster mode.
LABEL_POD_PRE_ALLOCATABLE = POD_DOMAIN_PREFIX + "/is-pre-allocatable"
# Numeric string; higher values are pre-allocated first.
ANNOTATION_POD_PRE_ALLOCATABLE_PRIORITY = POD_DOMAIN_PREFIX + "/pre-allocatable-priority"


def is_pod_mutating_update(pod: KubeDict | None) -> bool:
    return labels_of(pod).get(LABEL_POD_MUTATING_UPDATE) == "true"


def is_pod_skip_enhanced_validation(pod: KubeDict | None) -> bool:
    return labels_of(pod).get(LABEL_POD_SKIP_ENHANCED_VALIDATION) == "true"


def is_pod_pre_allocatable(pod: KubeDict | None) -> bool:
    return labels_of(pod).get(LABEL_POD_PRE_ALLOCATABLE) == "true"


def parse_pre_allocatable_priority(annotations: Mapping[str, str] | None) -> int:
    """The int64 pre-allocation priority; 0 when missing or empty."""
    raw = (annotations or {}).get(ANNOTATION_POD_PRE_ALLOCATABLE_PRIORITY)
    return parse_int_value(ANNOTATION_POD_PRE_ALLOCATABLE_PRIORITY, raw) if raw else 0


__all__ = [
    "ANNOTATION_POD_PRE_ALLOCATABLE_PRIORITY", "LABEL_POD_MUTATING_UPDATE",
    "LABEL_POD_PRE_ALLOCATABLE", "LABEL_POD_SKIP_ENHANCED_VALIDATION", "is_pod_mutating_update",
    "is_pod_pre_allocatable", "is_pod_skip_enhanced_validation", "parse_pre_allocatable_priority",
]
