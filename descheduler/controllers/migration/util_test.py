"""Upstream util_test.go cases (GetMaxUnavailable, FilterPodWithMaxEvictionCost) plus the
defaults of GetMaxMigrating and the job helpers."""

from __future__ import annotations

from typing import Any

import pytest

from api.extension.eviction import ANNOTATION_EVICTION_COST
from descheduler.controllers.migration.util import (
    ANNOTATION_PASSED_ARBITRATION,
    JOB_BY_POD_NAMESPACED_NAME,
    JOB_BY_POD_UID,
    filter_pod_with_max_eviction_cost,
    get_max_migrating,
    get_max_unavailable,
    is_job_active,
    job_indexers,
    job_phase,
    passed_arbitration,
)


@pytest.mark.parametrize(("replicas", "value", "want"), [
    (6, "80%", 4), (6, "150%", 6), (6, 5, 5), (6, 7, 6),
    # 0 becomes 1; a percentage rounds down first.
    (6, 0, 1), (6, "10%", 1),
    # Unset: 10 % above ten replicas, 2 from four to ten, else 1; never above replicas.
    (20, None, 2), (11, None, 1), (10, None, 2), (4, None, 2), (3, None, 1), (0, None, 0),
])
def test_get_max_unavailable(replicas: int, value: int | str | None, want: int) -> None:
    assert get_max_unavailable(replicas, value) == want
    assert get_max_migrating(replicas, value) == want


@pytest.mark.parametrize(("cost", "want"), [
    (None, True), ("0", True), ("-100", True), ("100", True), ("2147483647", False),
    ("not-a-number", True),
])
def test_filter_pod_with_max_eviction_cost(cost: str | None, want: bool) -> None:
    annotations = {} if cost is None else {ANNOTATION_EVICTION_COST: cost}
    assert filter_pod_with_max_eviction_cost({"metadata": {"annotations": annotations}}) is want


def job(phase: str | None = None, annotations: dict[str, str] | None = None,
        **ref: str) -> dict[str, Any]:
    return {"metadata": {"name": "job", "annotations": annotations or {}},
            "spec": {"podRef": ref}, "status": {"phase": phase} if phase else {}}


def test_job_phase_and_activity() -> None:
    assert job_phase(job()) == "Pending"
    assert is_job_active(job()) and is_job_active(job("Running"))
    assert not any(is_job_active(job(p)) for p in ("Succeeded", "Failed", "Aborted"))
    assert passed_arbitration(job(annotations={ANNOTATION_PASSED_ARBITRATION: "true"}))
    assert not passed_arbitration(job(annotations={ANNOTATION_PASSED_ARBITRATION: "false"}))


def test_job_indexes() -> None:
    indexers = job_indexers()
    j = job(namespace="default", name="pod-1", uid="u1")
    assert indexers[JOB_BY_POD_UID](j) == ["u1"]
    assert indexers[JOB_BY_POD_NAMESPACED_NAME](j) == ["default/pod-1"]
    empty = job()
    assert indexers[JOB_BY_POD_UID](empty) == [] == indexers[JOB_BY_POD_NAMESPACED_NAME](empty)
