"""Koordinator priority classes, their numeric bands, and how a pod's class is derived.

Corresponds to upstream `apis/extension/priority.go` and `priority_utils.go`.
The label ``koordinator.sh/priority-class`` overrides ``spec.priority`` whenever it is present,
even with an invalid value; ``koordinator.sh/priority`` is the sub-priority within a class.
"""

from __future__ import annotations

from enum import StrEnum
from types import MappingProxyType

from api.extension.codec import parse_int_value
from api.extension.constants import DOMAIN_PREFIX
from api.extension.objects import KubeDict, labels_of, spec_of
from api.extension.qos import QoSClass, get_pod_qos_class_with_default

LABEL_POD_PRIORITY_CLASS = DOMAIN_PREFIX + "priority-class"
LABEL_POD_PRIORITY = DOMAIN_PREFIX + "priority"


class PriorityClass(StrEnum):
    """A Koordinator priority class; ``NONE`` when the pod has none."""

    PROD = "koord-prod"
    MID = "koord-mid"
    BATCH = "koord-batch"
    FREE = "koord-free"
    NONE = ""


PRIORITY_PROD_VALUE_MIN, PRIORITY_PROD_VALUE_MAX = 9000, 9999
PRIORITY_MID_VALUE_MIN, PRIORITY_MID_VALUE_MAX = 7000, 7999
PRIORITY_BATCH_VALUE_MIN, PRIORITY_BATCH_VALUE_MAX = 5000, 5999
PRIORITY_FREE_VALUE_MIN, PRIORITY_FREE_VALUE_MAX = 3000, 3999

PRIORITY_PROD_VALUE_DEFAULT = 9500
PRIORITY_MID_VALUE_DEFAULT = 7500
PRIORITY_BATCH_VALUE_DEFAULT = 5500
PRIORITY_FREE_VALUE_DEFAULT = 3500
PRIORITY_NONE_VALUE_DEFAULT = 0

# Inclusive numeric band of each class; values in the gaps belong to no class.
PRIORITY_BANDS = MappingProxyType({
    PriorityClass.PROD: (PRIORITY_PROD_VALUE_MIN, PRIORITY_PROD_VALUE_MAX),
    PriorityClass.MID: (PRIORITY_MID_VALUE_MIN, PRIORITY_MID_VALUE_MAX),
    PriorityClass.BATCH: (PRIORITY_BATCH_VALUE_MIN, PRIORITY_BATCH_VALUE_MAX),
    PriorityClass.FREE: (PRIORITY_FREE_VALUE_MIN, PRIORITY_FREE_VALUE_MAX),
})

DEFAULT_PRIORITY_VALUES = MappingProxyType({
    PriorityClass.PROD: PRIORITY_PROD_VALUE_DEFAULT,
    PriorityClass.MID: PRIORITY_MID_VALUE_DEFAULT,
    PriorityClass.BATCH: PRIORITY_BATCH_VALUE_DEFAULT,
    PriorityClass.FREE: PRIORITY_FREE_VALUE_DEFAULT,
    PriorityClass.NONE: PRIORITY_NONE_VALUE_DEFAULT,
})

# The class of a pod whose QoS is known but whose priority is not (upstream DefaultPriorityClass
# covers QoS none).
DEFAULT_PRIORITY_CLASS = PriorityClass.NONE

_BY_NAME = {p.value: p for p in PriorityClass if p is not PriorityClass.NONE}


def priority_class_by_name(name: str | None) -> PriorityClass:
    """One of the four class names exactly, anything else ``NONE``."""
    return _BY_NAME.get(name or "", PriorityClass.NONE)


def priority_class_by_value(priority: int | None) -> PriorityClass:
    """The class whose band holds ``priority``; ``NONE`` for None or a value between bands."""
    if priority is None:
        return PriorityClass.NONE
    for priority_class, (low, high) in PRIORITY_BANDS.items():
        if low <= priority <= high:
            return priority_class
    return PriorityClass.NONE


def get_pod_priority_class_raw(pod: KubeDict | None) -> PriorityClass:
    """The class from the label when it exists (invalid → ``NONE``), else from
    ``spec.priority`` (upstream ``GetPodPriorityClassRaw``)."""
    labels = labels_of(pod)
    if LABEL_POD_PRIORITY_CLASS in labels:
        return priority_class_by_name(labels[LABEL_POD_PRIORITY_CLASS])
    priority = spec_of(pod).get("priority")
    return priority_class_by_value(priority if isinstance(priority, int) else None)


def priority_class_for_qos(qos: QoSClass | str) -> PriorityClass:
    """SYSTEM, LSE, LSR, LS → prod; BE → batch; none → ``DEFAULT_PRIORITY_CLASS``."""
    if qos in (QoSClass.SYSTEM, QoSClass.LSE, QoSClass.LSR, QoSClass.LS):
        return PriorityClass.PROD
    if qos == QoSClass.BE:
        return PriorityClass.BATCH
    return DEFAULT_PRIORITY_CLASS


def get_pod_priority_class_with_default(pod: KubeDict | None) -> PriorityClass:
    """The raw class, or when that is ``NONE`` the class implied by the pod's QoS
    (``get_pod_qos_class_with_default``; upstream ``GetPodPriorityClassWithDefault``)."""
    priority_class = get_pod_priority_class_raw(pod)
    if priority_class is not PriorityClass.NONE:
        return priority_class
    return priority_class_for_qos(get_pod_qos_class_with_default(pod))


def default_priority_value(priority_class: PriorityClass | str) -> int:
    """9500 / 7500 / 5500 / 3500, or 0 for none."""
    return DEFAULT_PRIORITY_VALUES.get(priority_class_by_name(priority_class), 0)


def get_pod_priority_value_with_default(pod: KubeDict | None) -> int:
    """A non-zero ``spec.priority`` as is; otherwise the default value of the derived class
    (0 for a missing pod)."""
    if pod is None:
        return PRIORITY_NONE_VALUE_DEFAULT
    priority = spec_of(pod).get("priority")
    if isinstance(priority, int) and priority != PRIORITY_NONE_VALUE_DEFAULT:
        return priority
    return default_priority_value(get_pod_priority_class_with_default(pod))


def parse_sub_priority(value: str | None) -> int:
    """A ``koordinator.sh/priority`` label value: Go ``strconv.ParseInt(s, 0, 32)``.

    ``0x``/``0o``/``0b`` prefixes, a leading ``0`` for octal (``"010"`` = 8), ``_`` between
    digits; missing or empty is 0; anything else raises MalformedValueError.
    """
    if not value:
        return 0
    return parse_int_value(LABEL_POD_PRIORITY, value, base=0, bits=32)


def get_pod_sub_priority(pod: KubeDict | None) -> int:
    """The pod's sub-priority (higher is more important within a class)."""
    return parse_sub_priority(labels_of(pod).get(LABEL_POD_PRIORITY))


def format_sub_priority(value: int) -> str:
    """The label value as the colocation profile webhook writes it: plain decimal."""
    return str(value)


__all__ = [
    "DEFAULT_PRIORITY_CLASS", "DEFAULT_PRIORITY_VALUES", "LABEL_POD_PRIORITY",
    "LABEL_POD_PRIORITY_CLASS", "PRIORITY_BANDS", "PRIORITY_BATCH_VALUE_DEFAULT",
    "PRIORITY_BATCH_VALUE_MAX", "PRIORITY_BATCH_VALUE_MIN", "PRIORITY_FREE_VALUE_DEFAULT",
    "PRIORITY_FREE_VALUE_MAX", "PRIORITY_FREE_VALUE_MIN", "PRIORITY_MID_VALUE_DEFAULT",
    "PRIORITY_MID_VALUE_MAX", "PRIORITY_MID_VALUE_MIN", "PRIORITY_NONE_VALUE_DEFAULT",
    "PRIORITY_PROD_VALUE_DEFAULT", "PRIORITY_PROD_VALUE_MAX", "PRIORITY_PROD_VALUE_MIN",
    "PriorityClass", "default_priority_value", "format_sub_priority", "get_pod_priority_class_raw",
    "get_pod_priority_class_with_default", "get_pod_priority_value_with_default",
    "get_pod_sub_priority", "parse_sub_priority", "priority_class_by_name",
    "priority_class_by_value", "priority_class_for_qos",
]
