"""Eviction keys on pods: opt-in label, eviction cost, priority, policy and soft eviction.

Corresponds to upstream `apis/extension/evict.go`, `eviction.go` and the eviction keys of
`constants.go`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from enum import StrEnum

from pydantic import TypeAdapter

from api.errors import MalformedValueError
from api.extension.codec import (
    INT32_MAX,
    decode_model,
    decode_value,
    parse_int_value,
    require_str,
)
from api.extension.constants import DOMAIN_PREFIX, SCHEDULING_DOMAIN_PREFIX
from api.extension.objects import KubeDict, labels_of
from api.extension.payload import GoDeleteOptions, GoPayload, GoTime, dump_json

_log = logging.getLogger(__name__)

LABEL_POD_EVICT_ENABLED = DOMAIN_PREFIX + "eviction-enabled"
ANNOTATION_POD_EVICT_POLICY = DOMAIN_PREFIX + "eviction-policy"
ANNOTATION_POD_EVICTION_PRIORITY = DOMAIN_PREFIX + "eviction-priority"
ANNOTATION_EVICTION_COST = SCHEDULING_DOMAIN_PREFIX + "/eviction-cost"
ANNOTATION_SOFT_EVICTION = SCHEDULING_DOMAIN_PREFIX + "/soft-eviction"

# An eviction cost that means "never evict".
EVICTION_COST_NEVER = INT32_MAX


class EvictionFeature(StrEnum):
    """koordlet evictors a pod's ``eviction-policy`` may list."""

    BE_CPU_EVICT = "BECPUEvict"
    BE_MEMORY_EVICT = "BEMemoryEvict"
    CPU_EVICT = "CPUEvict"
    MEMORY_EVICT = "MemoryEvict"
    CPU_ALLOCATABLE_EVICT = "CPUAllocatableEvict"
    MEMORY_ALLOCATABLE_EVICT = "MemoryAllocatableEvict"


def pod_evict_enabled(pod: KubeDict | None) -> bool:
    """The pod opted in to CPUEvict/MemoryEvict and the allocatable evictors (exactly "true")."""
    return labels_of(pod).get(LABEL_POD_EVICT_ENABLED) == "true"


def parse_eviction_cost(annotations: Mapping[str, str] | None) -> int:
    """The int32 eviction cost; 0 when missing. ``+`` and leading zeros are invalid
    (``"0"`` and ``"-5"`` are fine, ``"008"`` and ``"+1"`` are not)."""
    raw = (annotations or {}).get(ANNOTATION_EVICTION_COST)
    if raw is None:
        return 0
    first = require_str(ANNOTATION_EVICTION_COST, raw)[:1]
    if not (first == "-" or raw == "0" or "1" <= first <= "9"):
        raise MalformedValueError(ANNOTATION_EVICTION_COST,
                                  f"{raw!r} must be a decimal integer without '+' or leading 0")
    return parse_int_value(ANNOTATION_EVICTION_COST, raw, bits=32)


def parse_eviction_priority(annotations: Mapping[str, str] | None) -> int:
    """The int32 koordlet eviction priority (plain base 10, negative allowed); 0 when missing."""
    raw = (annotations or {}).get(ANNOTATION_POD_EVICTION_PRIORITY)
    if raw is None:
        return 0
    return parse_int_value(ANNOTATION_POD_EVICTION_PRIORITY, raw, bits=32)


def get_eviction_priority(annotations: Mapping[str, str] | None) -> int:
    """The eviction priority, 0 when missing or invalid (the error is logged)."""
    try:
        return parse_eviction_priority(annotations)
    except MalformedValueError as exc:
        _log.warning("ignoring eviction priority: %s", exc)
        return 0


_FEATURES = TypeAdapter(list[str])


def parse_eviction_policy(annotations: Mapping[str, str] | None) -> list[str] | None:
    """The evictors allowed to evict the pod; None when the annotation is missing."""
    raw = (annotations or {}).get(ANNOTATION_POD_EVICT_POLICY)
    if raw is None:
        return None
    return decode_value(ANNOTATION_POD_EVICT_POLICY, raw, _FEATURES) or []


def format_eviction_policy(features: Iterable[str]) -> str:
    return dump_json(_FEATURES, list(features))


def is_eviction_allowed(annotations: Mapping[str, str] | None,
                        feature: EvictionFeature | str) -> bool:
    """Whether ``feature`` may evict the pod: all may without the annotation, only the listed
    ones with it, none when it cannot be parsed."""
    try:
        policy = parse_eviction_policy(annotations)
    except MalformedValueError:
        return False
    return policy is None or feature in policy


class SoftEvictionSpec(GoPayload):
    """Written by the descheduler's SoftEviction evictor instead of evicting the pod."""

    timestamp: GoTime | None = None
    delete_options: GoDeleteOptions | None = None
    initiator: str = ""
    reason: str = ""


def parse_soft_eviction(annotations: Mapping[str, str] | None) -> SoftEvictionSpec | None:
    """None when the annotation is missing."""
    raw = (annotations or {}).get(ANNOTATION_SOFT_EVICTION)
    if raw is None:
        return None
    return decode_model(ANNOTATION_SOFT_EVICTION, raw, SoftEvictionSpec)


def format_soft_eviction(spec: SoftEvictionSpec) -> str:
    return spec.to_go_json()


__all__ = [
    "ANNOTATION_EVICTION_COST", "ANNOTATION_POD_EVICTION_PRIORITY", "ANNOTATION_POD_EVICT_POLICY",
    "ANNOTATION_SOFT_EVICTION", "EVICTION_COST_NEVER", "LABEL_POD_EVICT_ENABLED",
    "EvictionFeature", "SoftEvictionSpec", "format_eviction_policy", "format_soft_eviction",
    "get_eviction_priority", "is_eviction_allowed", "parse_eviction_cost", "parse_eviction_policy",
    "parse_eviction_priority", "parse_soft_eviction", "pod_evict_enabled",
]
