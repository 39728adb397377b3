"""Koordinator QoS classes and how a pod's QoS class is derived.

Corresponds to upstream `apis/extension/qos.go` and `qos_utils.go`, plus the
Kubernetes QoS computation they call (`k8s.io/kubernetes/pkg/apis/core/v1/helper/qos`).
Pods are parsed-JSON dicts; the label lookup comes first so the common case stays cheap.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from enum import StrEnum
from functools import lru_cache
from typing import Any

from kubernetes.utils import parse_quantity

from api.core import QUANTITY_PATTERN
from api.errors import MalformedValueError
from api.extension.constants import DOMAIN_PREFIX
from api.extension.objects import KubeDict, labels_of, spec_of

LABEL_POD_QOS = DOMAIN_PREFIX + "qosClass"


class QoSClass(StrEnum):
    """Value of the ``koordinator.sh/qosClass`` label; ``NONE`` means no Koordinator QoS."""

    SYSTEM = "SYSTEM"
    LSE = "LSE"
    LSR = "LSR"
    LS = "LS"
    BE = "BE"
    NONE = ""


class KubeQoSClass(StrEnum):
    """Kubernetes ``status.qosClass``."""

    GUARANTEED = "Guaranteed"
    BURSTABLE = "Burstable"
    BEST_EFFORT = "BestEffort"


# The Koordinator QoS of a Guaranteed pod without the label (upstream QoSClassForGuaranteed).
QOS_CLASS_FOR_GUARANTEED = QoSClass.LSR

_BY_NAME = {q.value: q for q in QoSClass if q is not QoSClass.NONE}
_FOR_KUBE_QOS: Mapping[str, QoSClass] = {
    KubeQoSClass.GUARANTEED: QOS_CLASS_FOR_GUARANTEED,
    KubeQoSClass.BURSTABLE: QoSClass.LS,
    KubeQoSClass.BEST_EFFORT: QoSClass.BE,
}
# Resources that count for the Kubernetes QoS class.
_QOS_COMPUTE_RESOURCES = ("cpu", "memory")


def qos_class_by_name(name: str | None) -> QoSClass:
    """One of the five names exactly (case-sensitive), anything else ``NONE``."""
    return _BY_NAME.get(name or "", QoSClass.NONE)


def get_qos_class_by_labels(labels: Mapping[str, str] | None) -> QoSClass:
    """The QoS named by the ``koordinator.sh/qosClass`` label; ``NONE`` if absent or invalid."""
    if not labels:
        return QoSClass.NONE
    return qos_class_by_name(labels.get(LABEL_POD_QOS))


def get_pod_qos_class_raw(pod: KubeDict | None) -> QoSClass:
    """The label's QoS, or ``NONE`` (upstream ``GetPodQoSClassRaw``: the first step of
    ``GetPodQoSClassWithDefault``)."""
    return get_qos_class_by_labels(labels_of(pod))


def qos_class_for_kube_qos(kube_qos: str) -> QoSClass:
    """Guaranteed → LSR, Burstable → LS, BestEffort → BE; anything else ``NONE``."""
    return _FOR_KUBE_QOS.get(kube_qos, QoSClass.NONE)


def get_kube_qos_class(pod: KubeDict | None) -> str:
    """``status.qosClass`` when set, else computed from the containers (kubelet's rules)."""
    status = pod.get("status") if pod else None
    reported = status.get("qosClass") if status else None
    return reported or compute_kube_qos_class(pod)


def get_pod_qos_class_with_default(pod: KubeDict | None) -> QoSClass:
    """The pod's Koordinator QoS: a valid label wins, else derived from the Kubernetes QoS."""
    qos = get_pod_qos_class_raw(pod)
    if qos is not QoSClass.NONE:
        return qos
    return qos_class_for_kube_qos(get_kube_qos_class(pod))


# --- the Kubernetes QoS class ----------------------------------------------------------------

_QUANTITY_CHECK = re.compile(QUANTITY_PATTERN)


def _parse(value: str | int | float) -> Decimal:
    if isinstance(value, str) and not _QUANTITY_CHECK.match(value):
        raise ValueError(f"{value!r} is not a resource quantity")
    return parse_quantity(value)


# Every pod of a workload repeats the same few strings; a str's Decimal never changes
# (a failed parse raises and is not cached).
_parse_str = lru_cache(maxsize=4096)(_parse)


def _quantity(value: Any, where: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise MalformedValueError(where, f"{value!r} is not a resource quantity")
    try:
        return _parse_str(value) if isinstance(value, str) else _parse(value)
    except (ValueError, ArithmeticError) as exc:
        raise MalformedValueError(where, str(exc)) from None


def compute_kube_qos_class(pod: KubeDict | None) -> KubeQoSClass:
    """Kubernetes' ``GetPodQOS`` over containers and init containers (cpu and memory only).

    BestEffort: no positive request or limit. Guaranteed: every container limits both cpu and
    memory, and the summed requests equal the summed limits. Otherwise Burstable.
    A malformed quantity raises MalformedValueError naming its path in the pod.
    """
    spec = spec_of(pod)
    requests: dict[str, Decimal] = {}
    limits: dict[str, Decimal] = {}
    guaranteed = True
    for field in ("containers", "initContainers"):
        for index, container in enumerate(spec.get(field) or ()):
            resources = (container or {}).get("resources") or {}
            where = f"spec.{field}[{index}].resources"
            for name, value in (resources.get("requests") or {}).items():
                if name in _QOS_COMPUTE_RESOURCES:
                    amount = _quantity(value, f"{where}.requests.{name}")
                    if amount > 0:
                        requests[name] = requests.get(name, Decimal(0)) + amount
            limited = set()
            for name, value in (resources.get("limits") or {}).items():
                if name in _QOS_COMPUTE_RESOURCES:
                    amount = _quantity(value, f"{where}.limits.{name}")
                    if amount > 0:
                        limited.add(name)
                        limits[name] = limits.get(name, Decimal(0)) + amount
            if not limited.issuperset(_QOS_COMPUTE_RESOURCES):
                guaranteed = False
    if not requests and not limits:
        return KubeQoSClass.BEST_EFFORT
    if guaranteed and len(requests) == len(limits) and all(
            name in limits and limits[name] == amount for name, amount in requests.items()):
        return KubeQoSClass.GUARANTEED
    return KubeQoSClass.BURSTABLE


__all__ = [
    "LABEL_POD_QOS", "QOS_CLASS_FOR_GUARANTEED", "KubeQoSClass", "QoSClass",
    "compute_kube_qos_class", "get_kube_qos_class", "get_pod_qos_class_raw",
    "get_pod_qos_class_with_default", "get_qos_class_by_labels", "qos_class_by_name",
    "qos_class_for_kube_qos",
]
