"""Arbitration order: upstream sort_test.go's cases for each stable sort (creation time, pod
order with missing pods first, same batch Job adjacent, more migrating jobs of the batch Job
first) and their composition (the last sort is the primary key)."""

from __future__ import annotations

from typing import Any

from descheduler.controllers.migration.arbitrator.sort import (
    by_batch_job,
    by_creation_time,
    by_migrating_count,
    by_pod,
    sort_jobs,
)
from descheduler.controllers.migration.testing import job, owner, pod
from descheduler.framework.types import Obj

Dict = dict[str, Any]


def names(jobs: list[Obj]) -> list[str]:
    return [j["metadata"]["name"] for j in jobs]


def uid(j: Obj) -> str:
    return str(j["metadata"]["uid"])


def test_by_creation_time_newer_first() -> None:
    p = pod("p")
    jobs: list[Obj] = [job(p, "a", created=100), job(p, "b", created=300), job(p, "c", created=200),
            job(p, "d", created=300)]
    by_creation_time(jobs, {})
    assert names(jobs) == ["b", "d", "c", "a"]


def test_by_pod_order_missing_pods_first() -> None:
    low = pod("low", priority=10)
    high = pod("high", priority=1000)
    # Koord priority class first: a batch pod goes before a prod one whatever its priority.
    batch = pod("batch", priority=5500)
    prod = pod("prod", priority=9500)
    old, new = pod("old", created=100), pod("new", created=200)
    jobs: list[Obj] = [job(high, "high"), job(low, "low"), job(pod("gone"), "gone"),
                       job(prod, "prod"), job(batch, "batch"), job(old, "old"), job(new, "new")]
    pod_of: dict[str, Dict | None] = {uid(j): p for j, p in zip(
        jobs, [high, low, None, prod, batch, old, new], strict=True)}
    by_pod(jobs, pod_of)
    assert names(jobs) == ["gone", "new", "old", "low", "high", "batch", "prod"]


X = owner("Job", "x", api_version="batch/v1")
Y = owner("Job", "y", api_version="batch/v1")


def test_by_batch_job_keeps_a_job_together() -> None:
    pods = [pod("a", owners=[X]), pod("b"), pod("c", owners=[Y]), pod("d", owners=[X]),
            pod("e", owners=[Y]), pod("f", owners=[owner("ReplicaSet", "rs")])]
    jobs: list[Obj] = [job(p, p["metadata"]["name"]) for p in pods]
    pod_of: dict[str, Dict | None] = {uid(j): p for j, p in zip(jobs, pods, strict=True)}
    by_batch_job(jobs, pod_of)
    assert names(jobs) == ["a", "d", "b", "c", "e", "f"]


def test_by_migrating_count_more_first() -> None:
    pods = [pod("a", owners=[X]), pod("b"), pod("c", owners=[Y])]
    jobs: list[Obj] = [job(p, p["metadata"]["name"]) for p in pods]
    pod_of: dict[str, Dict | None] = {uid(j): p for j, p in zip(jobs, pods, strict=True)}
    counts = {X["uid"]: 1, Y["uid"]: 3}
    asked: list[str] = []

    def migrating(owner_uid: str) -> int:
        asked.append(owner_uid)
        return counts[owner_uid]

    by_migrating_count(migrating)(jobs, pod_of)
    assert names(jobs) == ["c", "a", "b"]
    assert sorted(asked) == sorted(counts)  # once per batch Job


def test_sort_jobs_last_sort_is_primary() -> None:
    newest = pod("newest")
    in_x = [pod(f"x{i}", owners=[X]) for i in range(2)]
    jobs: list[Obj] = [job(in_x[0], "x0", created=100), job(newest, "newest", created=900),
            job(in_x[1], "x1", created=50)]
    pod_of: dict[str, Dict | None] = {uid(j): p for j, p in zip(
        jobs, [in_x[0], newest, in_x[1]], strict=True)}
    assert names(sort_jobs(jobs, pod_of, lambda _: 0)) == ["newest", "x0", "x1"]
    assert names(sort_jobs(jobs, pod_of, lambda _: 2)) == ["x0", "x1", "newest"]
