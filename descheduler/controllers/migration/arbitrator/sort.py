"""The order an arbitration round looks at waiting PodMigrationJobs in.

Corresponds to koordinator ``pkg/descheduler/controllers/migration/arbitrator/sort.go``: stable
sorts applied one after the other, so the last is the primary key: creation time (newer first,
whole seconds); the pods' order (``descheduler.utils.sorter`` then newer pods first; jobs whose
pod could not be read first); jobs of the same batch ``Job`` moved next to the first of them;
jobs whose batch ``Job`` has more migrating jobs first.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from api.extension.objects import metadata_of
from descheduler.controllers.migration.controllerfinder import controller_of
from descheduler.framework.types import Obj
from descheduler.utils.sorter import PodOrderKey, creation_time, pod_order_key

JOB_KIND = "Job"

# Jobs by UID → their pod (None: not found).
PodOfJob = Mapping[str, Obj | None]


def _uid(obj: Obj) -> str:
    return metadata_of(obj).get("uid") or ""


def batch_job_of(pod: Obj | None) -> str | None:
    """UID of the batch ``Job`` controlling ``pod``."""
    ref = controller_of(pod)
    return ref.get("uid") if ref is not None and ref.get("kind") == JOB_KIND else None


def by_creation_time(jobs: list[Obj], pod_of: PodOfJob) -> None:
    jobs.sort(key=lambda job: -math.floor(creation_time(job)))


def by_pod(jobs: list[Obj], pod_of: PodOfJob) -> None:
    def key(job: Obj) -> tuple[int, PodOrderKey, float] | tuple[int]:
        pod = pod_of.get(_uid(job))
        return (0,) if pod is None else (1, pod_order_key(pod), -creation_time(pod))

    jobs.sort(key=key)


def by_batch_job(jobs: list[Obj], pod_of: PodOfJob) -> None:
    first: dict[str, int] = {}
    rank: dict[str, int] = {}
    for i, job in enumerate(jobs):
        owner = batch_job_of(pod_of.get(_uid(job)))
        rank[_uid(job)] = i if owner is None else first.setdefault(owner, i)
    jobs.sort(key=lambda job: rank[_uid(job)])


def by_migrating_count(migrating_jobs: Callable[[str], int]
                       ) -> Callable[[list[Obj], PodOfJob], None]:
    """Jobs whose batch ``Job`` has more migrating jobs (``migrating_jobs(job UID)``) first."""
    def sort(jobs: list[Obj], pod_of: PodOfJob) -> None:
        counts: dict[str, int] = {}
        for job in jobs:
            owner = batch_job_of(pod_of.get(_uid(job)))
            if owner is not None and owner not in counts:
                counts[owner] = migrating_jobs(owner)

        def key(job: Obj) -> int:
            owner = batch_job_of(pod_of.get(_uid(job)))
            return -counts[owner] if owner is not None else 0

        jobs.sort(key=key)
    return sort


def sort_jobs(jobs: Sequence[Obj], pod_of: PodOfJob,
              migrating_jobs: Callable[[str], int]) -> list[Obj]:
    """``jobs`` in arbitration order."""
    ordered = list(jobs)
    for step in (by_creation_time, by_pod, by_batch_job, by_migrating_count(migrating_jobs)):
        step(ordered, pod_of)
    return ordered
