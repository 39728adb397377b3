"""The order pods are given up in: the usage-free keys of the descheduler's pod comparator.

Corresponds to koordinator ``pkg/descheduler/utils/sorter`` (``PodSorter``'s chain without the
usage score): koord priority class, ``spec.priority``, Kubernetes QoS, koord QoS, the
``pod-deletion-cost`` and ``eviction-cost`` annotations, each lower first. LowNodeLoad adds its
usage score and creation time behind these keys; the migration arbitrator adds creation time.
"""

from __future__ import annotations

from api.errors import MalformedValueError
from api.extension.eviction import parse_eviction_cost
from api.extension.objects import KubeDict, annotations_of, spec_of
from api.extension.priority import PriorityClass, get_pod_priority_class_with_default
from api.extension.qos import QoSClass, get_kube_qos_class, get_pod_qos_class_with_default
from api.meta import parse_timestamp

ANNOTATION_POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"

_PRIORITY_CLASS_ORDER = {PriorityClass.FREE: 0, PriorityClass.BATCH: 1, PriorityClass.MID: 2,
                         PriorityClass.PROD: 3, PriorityClass.NONE: 4}
_KUBE_QOS_ORDER = {"BestEffort": 0, "Burstable": 1, "Guaranteed": 2}
_KOORD_QOS_ORDER = {QoSClass.BE: 0, QoSClass.LS: 1, QoSClass.LSR: 2, QoSClass.LSE: 3,
                    QoSClass.SYSTEM: 3, QoSClass.NONE: 4}

PodOrderKey = tuple[int, int, int, int, int, int]


def _deletion_cost(pod: KubeDict) -> int:
    try:
        return int(annotations_of(pod).get(ANNOTATION_POD_DELETION_COST, 0))
    except ValueError:
        return 0


def _eviction_cost(pod: KubeDict) -> int:
    try:
        return parse_eviction_cost(annotations_of(pod))
    except MalformedValueError:
        return 0


def pod_order_key(pod: KubeDict) -> PodOrderKey:
    """Ascending key, first to be given up first: koord priority class (free < batch < mid <
    prod < none), priority, Kubernetes QoS, koord QoS, deletion cost, eviction cost."""
    return (_PRIORITY_CLASS_ORDER[get_pod_priority_class_with_default(pod)],
            spec_of(pod).get("priority") or 0,
            _KUBE_QOS_ORDER.get(get_kube_qos_class(pod), 3),
            _KOORD_QOS_ORDER[get_pod_qos_class_with_default(pod)],
            _deletion_cost(pod), _eviction_cost(pod))


def creation_time(obj: KubeDict) -> float:
    """``metadata.creationTimestamp`` in seconds (0 when unset)."""
    return parse_timestamp((obj.get("metadata") or {}).get("creationTimestamp")) or 0.0
