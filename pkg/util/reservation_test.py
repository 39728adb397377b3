"""Tests of the reserve pod and owner matching, after upstream's
``pkg/util/reservation/reservation_test.go`` (``TestNewReservePod``,
``TestMatchReservationOwners``, ``TestValidateReservation``)."""

from __future__ import annotations

from typing import Any

import pytest

from api.scheduling.v1alpha1.reservation import Reservation, ReservationOwner
from pkg.util.podresources import pod_requests
from pkg.util.reservation import (
    ANNOTATION_PRE_ALLOCATION,
    ANNOTATION_RESERVATION_NAME,
    ANNOTATION_RESERVATION_NODE,
    ANNOTATION_RESERVATION_RESIZE_ALLOCATABLE,
    ANNOTATION_RESERVE_POD,
    DEFAULT_RESERVE_POD_PRIORITY,
    FAKE_CONTAINER,
    allocatable_at_bind,
    is_reserve_pod,
    is_unassigned_active,
    match_reservation_owners,
    new_reserve_pod,
    reservation_name_of,
    template_requests_quantities,
    validate_reservation,
)


def reservation(**extra: Any) -> Reservation:
    spec: dict[str, Any] = {
        "template": {"metadata": {"namespace": "team", "labels": {"t": "1"}},
                     "spec": {"schedulerName": "koord-scheduler", "containers": [
                         {"name": "main", "resources": {"requests": {"cpu": "1500m",
                                                                     "memory": "1Gi"}}}]}},
        "owners": [{"object": {"name": "owner"}}], "ttl": "1h"}
    status = extra.pop("status", None)
    labels = extra.pop("labels", {"r": "2"})
    spec.update(extra)
    obj: dict[str, Any] = {"metadata": {"name": "r1", "uid": "uid-r1", "labels": labels,
                                        "annotations": {"a": "b"}}, "spec": spec}
    if status is not None:
        obj["status"] = status
    return Reservation.model_validate(obj)


def test_the_reserve_pod_stands_for_its_reservation() -> None:
    pod = new_reserve_pod(reservation())
    meta, spec = pod["metadata"], pod["spec"]
    assert (meta["name"], meta["namespace"], meta["uid"]) == ("uid-r1", "team", "uid-r1")
    assert meta["labels"] == {"t": "1", "r": "2"}
    assert meta["annotations"] == {"a": "b", ANNOTATION_RESERVE_POD: "true",
                                   ANNOTATION_RESERVATION_NAME: "r1"}
    assert spec["priority"] == DEFAULT_RESERVE_POD_PRIORITY
    assert spec["schedulerName"] == "koord-scheduler"
    assert spec["nodeName"] == ""
    assert is_reserve_pod(pod) and reservation_name_of(pod) == "r1"
    assert pod_requests(pod) == {"cpu": 1500, "memory": 1024**3}


def test_reserve_pod_priority_node_and_pre_allocation() -> None:
    r = reservation(labels={"koordinator.sh/priority": "9000"}, preAllocation=True)
    r.spec.template["spec"]["nodeName"] = "n1"  # type: ignore[index]
    pod = new_reserve_pod(r)
    assert pod["spec"]["priority"] == 9000
    assert pod["spec"]["nodeName"] == ""
    assert pod["metadata"]["annotations"][ANNOTATION_RESERVATION_NODE] == "n1"
    assert pod["metadata"]["annotations"][ANNOTATION_PRE_ALLOCATION] == "true"
    r.spec.template["spec"]["priority"] = 5  # type: ignore[index]
    assert new_reserve_pod(r)["spec"]["priority"] == 5


def test_an_available_reserve_pod_requests_its_allocatable() -> None:
    same = new_reserve_pod(reservation(status={
        "phase": "Available", "nodeName": "n1",
        "allocatable": {"cpu": "1500m", "memory": "1Gi"}}))
    assert [c["name"] for c in same["spec"]["containers"]] == ["main"]
    assert same["spec"]["nodeName"] == "n1"
    resized = new_reserve_pod(reservation(status={
        "phase": "Available", "nodeName": "n1", "allocatable": {"cpu": "2", "memory": "1Gi"}}))
    containers = resized["spec"]["containers"]
    assert [c["name"] for c in containers] == ["main", FAKE_CONTAINER]
    assert containers[0]["resources"] == {}
    assert pod_requests(resized) == {"cpu": 2000, "memory": 1024**3}


@pytest.mark.parametrize(("phase", "pod_phase"), [("Succeeded", "Succeeded"),
                                                   ("Failed", "Failed")])
def test_finished_reservations_are_finished_pods(phase: str, pod_phase: str) -> None:
    r = reservation(status={"phase": phase})
    assert new_reserve_pod(r)["status"] == {"phase": pod_phase}
    assert not is_unassigned_active(r)


def test_unassigned_active() -> None:
    assert is_unassigned_active(reservation())
    assert not is_unassigned_active(reservation(status={"phase": "Available",
                                                        "nodeName": "n1"}))


def test_template_requests_keep_their_format() -> None:
    assert template_requests_quantities(reservation()) == {"cpu": "1500m", "memory": "1Gi"}


def test_validate_reservation() -> None:
    assert validate_reservation(reservation()) is None
    assert validate_reservation(reservation(owners=[])) == "the reservation misses the owner spec"
    no_expiry = reservation()
    no_expiry.spec.ttl = None
    assert validate_reservation(no_expiry) == "the reservation misses the expiration spec"


POD = {"apiVersion": "v1", "metadata": {
    "name": "web-0", "namespace": "default", "uid": "pod-uid", "labels": {"app": "web"},
    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-rs",
                         "uid": "rs-uid", "controller": True}]}}


@pytest.mark.parametrize(("owners", "expected"), [
    ([{"object": {"name": "web-0", "namespace": "default"}}], True),
    ([{"object": {"uid": "pod-uid"}}], True),
    ([{"object": {"name": "web-0", "namespace": "other"}}], False),
    ([{"controller": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-rs",
                      "uid": "rs-uid", "controller": True}}], True),
    ([{"controller": {"apiVersion": "", "kind": "", "name": "web-rs", "uid": "",
                      "namespace": "other"}}], False),
    ([{"controller": {"apiVersion": "", "kind": "Deployment", "name": "web-rs",
                      "uid": ""}}], False),
    ([{"labelSelector": {"matchLabels": {"app": "web"}}}], True),
    ([{"labelSelector": {"matchExpressions": [{"key": "app", "operator": "NotIn",
                                               "values": ["web"]}]}}], False),
    # All set parts of one owner must match; any owner may.
    ([{"object": {"name": "web-0"}, "labelSelector": {"matchLabels": {"app": "db"}}}], False),
    ([{"object": {"name": "nope"}}, {"labelSelector": {"matchLabels": {"app": "web"}}}], True),
])
def test_match_reservation_owners(owners: list[dict[str, Any]], expected: bool) -> None:
    parsed = [ReservationOwner.model_validate(o) for o in owners]
    assert match_reservation_owners(POD, parsed) is expected


def test_allocatable_at_bind_is_resized_by_the_annotation() -> None:
    r = reservation()
    assert allocatable_at_bind(r) == {"cpu": "1500m", "memory": "1Gi"}
    r.metadata.annotations = {ANNOTATION_RESERVATION_RESIZE_ALLOCATABLE:
                              '{"resources":{"cpu":"2","nvidia.com/gpu":"1"}}'}
    assert allocatable_at_bind(r) == {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1"}
    r.metadata.annotations = {ANNOTATION_RESERVATION_RESIZE_ALLOCATABLE: "{"}
    with pytest.raises(ValueError, match="reservation-resize-allocatable"):
        allocatable_at_bind(r)
