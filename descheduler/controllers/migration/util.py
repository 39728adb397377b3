"""Keys and small rules the MigrationController's parts share.

Corresponds to koordinator ``pkg/descheduler/controllers/migration/util`` (``GetMaxMigrating``,
``GetMaxUnavailable``, ``FilterPodWithMaxEvictionCost``, the job annotations) and the
PodMigrationJob indexes the controller's informer keeps (upstream's field indexes on
``spec.podRef``), so "is this pod migrating" is a lookup, never a list.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from api.errors import MalformedValueError
from api.extension.constants import DOMAIN_PREFIX
from api.extension.eviction import EVICTION_COST_NEVER, parse_eviction_cost
from api.extension.objects import annotations_of
from api.scheduling.v1alpha1.pod_migration_job import PodMigrationJobPhase

Obj = Mapping[str, Any]

ANNOTATION_EVICT_REASON = DOMAIN_PREFIX + "evict-reason"
ANNOTATION_EVICT_TRIGGER = DOMAIN_PREFIX + "evict-trigger"
ANNOTATION_JOB_CREATED_BY = DOMAIN_PREFIX + "job-created-by"
ANNOTATION_PASSED_ARBITRATION = "descheduler.koordinator.sh/passed-arbitration"
# A pod carrying it passes the migration filters unconditionally (sigs.k8s.io/descheduler's key).
ANNOTATION_EVICT = "descheduler.alpha.kubernetes.io/evict"
LABEL_EVICT_POLICY = DOMAIN_PREFIX + "evict-policy"

# PodMigrationJob indexes: the pod a job migrates, by UID and by "namespace/name".
JOB_BY_POD_UID = "spec.podRef.uid"
JOB_BY_POD_NAMESPACED_NAME = "spec.podRef.namespacedName"


def _pod_ref(job: Obj) -> Mapping[str, Any]:
    return (job.get("spec") or {}).get("podRef") or {}


def _by_pod_uid(job: Obj) -> list[str]:
    uid = _pod_ref(job).get("uid")
    return [uid] if uid else []


def _by_pod_name(job: Obj) -> list[str]:
    ref = _pod_ref(job)
    return [f"{ref.get('namespace')}/{ref['name']}"] if ref.get("name") else []


def job_indexers() -> dict[str, Callable[[Obj], list[str]]]:
    """The indexes to add to the PodMigrationJob informer."""
    return {JOB_BY_POD_UID: _by_pod_uid, JOB_BY_POD_NAMESPACED_NAME: _by_pod_name}


def job_phase(job: Obj) -> str:
    """The job's phase; an empty one is Pending."""
    return (job.get("status") or {}).get("phase") or PodMigrationJobPhase.PENDING


def is_job_active(job: Obj) -> bool:
    """Pending or Running: the job still holds its pod."""
    return job_phase(job) in (PodMigrationJobPhase.PENDING, PodMigrationJobPhase.RUNNING)


def passed_arbitration(job: Obj) -> bool:
    annotations = (job.get("metadata") or {}).get("annotations") or {}
    return annotations.get(ANNOTATION_PASSED_ARBITRATION) == "true"


def filter_pod_with_max_eviction_cost(pod: Obj) -> bool:
    """False for a pod whose ``scheduling.koordinator.sh/eviction-cost`` is the int32 maximum
    (never evict); an unparsable cost counts as 0."""
    try:
        return parse_eviction_cost(annotations_of(pod)) != EVICTION_COST_NEVER
    except MalformedValueError:
        return True


def scaled_value(value: int | str, total: int, round_up: bool = False) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``: an int as is, ``"N%"`` of ``total``."""
    if isinstance(value, int):
        return value
    percent = int(value.removesuffix("%"))
    scaled = percent * total / 100
    return math.ceil(scaled) if round_up else math.floor(scaled)


def get_max_unavailable(replicas: int, value: int | str | None) -> int:
    """How many of a workload's ``replicas`` may be unavailable (upstream
    ``GetMaxUnavailable``): the configured int or percent (0 → 1); unset: 10 % above ten
    replicas, 2 from four to ten, else 1; never more than ``replicas``."""
    if value is not None:
        result = scaled_value(value, replicas) or 1
    elif replicas > 10:
        result = scaled_value("10%", replicas)
    elif replicas >= 4:
        result = 2
    else:
        result = 1
    return min(result, replicas)


def get_max_migrating(replicas: int, value: int | str | None) -> int:
    """How many of a workload's pods may migrate at once (upstream ``GetMaxMigrating``, the
    same rule as ``get_max_unavailable``)."""
    return get_max_unavailable(replicas, value)
