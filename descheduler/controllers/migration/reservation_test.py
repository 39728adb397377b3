"""The Reservation a ReservationFirst job asks for: upstream reservation/util_test.go's cases
(the template made from the pod, the job's own template kept, the owners of a pending or a
controlled pod, the node affinity excluding the pod's node, the ttl rule, the
DisablePVCReservation gate) and the status questions the controller asks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from descheduler.controllers.migration import reservation as rsv
from pkg.features import default_feature_gate
from pkg.features.features import DISABLE_PVC_RESERVATION

NOW = 1_767_225_600.123  # 2026-01-01T00:00:00.123Z

RS_OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-rs", "uid": "rs-uid",
            "controller": True}


def _pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "web-1", "namespace": "default", "uid": "pod-uid",
                         "labels": {"app": "web"}, "ownerReferences": [RS_OWNER]},
            "spec": {"nodeName": "node-a", "containers": [{"name": "main"}], **spec},
            "status": {"phase": "Running"}}


def _job(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "job", "uid": "job-uid"},
            "spec": {"podRef": {"namespace": "default", "name": "web-1"}, "ttl": "5m0s",
                     **spec}}


def test_options_from_the_pod() -> None:
    options = rsv.reservation_options(_job(), _pod(), NOW)
    template = options["template"]
    assert template["metadata"] == {"name": "job-uid", "labels": {
        "app.kubernetes.io/created-by": "koord-descheduler",
        "scheduling.koordinator.sh/reservation-order": "1767225600123"}}
    spec = template["spec"]
    assert spec["owners"] == [{"controller": {**RS_OWNER, "namespace": "default"}}]
    assert spec["allocateOnce"] is True
    assert spec["ttl"] == "5m0s"
    pod_template = spec["template"]
    assert pod_template["metadata"]["labels"] == {"app": "web"}
    assert "nodeName" not in pod_template["spec"]
    assert pod_template["spec"]["affinity"] == {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "NotIn",
                              "values": ["node-a"]}]}]}}}


def test_existing_required_terms_each_exclude_the_node() -> None:
    terms = [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
             {"matchFields": [{"key": "metadata.name", "operator": "In",
                               "values": ["node-a", "node-b"]}]}]
    pod = _pod(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}})
    options = rsv.reservation_options(_job(), pod, NOW)
    got = options["template"]["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    skip = {"key": "metadata.name", "operator": "NotIn", "values": ["node-a"]}
    assert got == [{**terms[0], "matchFields": [skip]},
                   {"matchFields": [*terms[1]["matchFields"], skip]}]
    # The pod itself is left as it was.
    assert pod["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == terms


def test_the_jobs_own_template_is_kept() -> None:
    owners = [{"labelSelector": {"matchLabels": {"app": "web"}}}]
    job = _job(reservationOptions={"template": {
        "metadata": {"name": "mine", "labels": {"team": "a"}},
        "spec": {"owners": owners, "expires": "2026-01-02T00:00:00Z",
                 "template": {"spec": {"nodeName": "node-a", "containers": []}}}}})
    options = rsv.reservation_options(job, _pod(), NOW)
    template = options["template"]
    assert template["metadata"]["name"] == "mine"
    assert template["metadata"]["labels"]["team"] == "a"
    assert template["spec"]["owners"] == owners
    assert "ttl" not in template["spec"]  # expires is set
    assert template["spec"]["template"]["spec"]["containers"] == []
    assert "nodeName" not in template["spec"]["template"]["spec"]


@pytest.mark.parametrize("ttl", [None, "0s"])
def test_no_job_ttl_no_reservation_ttl(ttl: str | None) -> None:
    job = _job()
    job["spec"]["ttl"] = ttl
    assert "ttl" not in rsv.reservation_options(job, _pod(), NOW)["template"]["spec"]


def test_owners_of_a_pending_unschedulable_pod_and_a_bare_pod() -> None:
    pending = _pod()
    pending["spec"].pop("nodeName")
    pending["status"] = {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}
    assert rsv.reserve_resource_owners(pending) == [{"object": {
        "uid": "pod-uid", "kind": "Pod", "name": "web-1", "namespace": "default"}}]
    options = rsv.reservation_options(_job(), pending, NOW)
    assert "affinity" not in options["template"]["spec"]["template"]["spec"]

    bare = _pod()
    bare["metadata"].pop("ownerReferences")
    assert rsv.reserve_resource_owners(bare) == []


@pytest.fixture
def pvc_reservation_disabled() -> Iterator[None]:
    was = default_feature_gate.enabled(DISABLE_PVC_RESERVATION)
    default_feature_gate.set_enabled(DISABLE_PVC_RESERVATION, True)
    yield
    default_feature_gate.set_enabled(DISABLE_PVC_RESERVATION, was)


@pytest.mark.usefixtures("pvc_reservation_disabled")
def test_disable_pvc_reservation_drops_claims() -> None:
    volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
               {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}},
               {"name": "cache", "emptyDir": {}}]
    options = rsv.reservation_options(_job(), _pod(volumes=volumes), NOW)
    assert options["template"]["spec"]["template"]["spec"]["volumes"] == [volumes[2]]


def test_claims_are_kept_by_default() -> None:
    volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    options = rsv.reservation_options(_job(), _pod(volumes=volumes), NOW)
    assert options["template"]["spec"]["template"]["spec"]["volumes"] == volumes


def _reservation(phase: str, *conditions: dict[str, str], **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "r"}, "spec": {"owners": [{"object": {"name": "p"}}]},
            "status": {"phase": phase, "conditions": list(conditions), **status}}


SCHEDULED = {"type": "Scheduled", "status": "True", "reason": "Scheduled"}
UNSCHEDULABLE = {"type": "Scheduled", "status": "False", "reason": "Unschedulable",
                 "message": "no fit"}
EXPIRED = {"type": "Ready", "status": "False", "reason": "Expired"}


def test_status_questions() -> None:
    assert rsv.is_pending({"metadata": {"name": "r"}})
    assert rsv.is_pending(_reservation("Pending", UNSCHEDULABLE))
    assert rsv.unschedulable_condition(_reservation("Pending", UNSCHEDULABLE)) == UNSCHEDULABLE
    assert rsv.unschedulable_condition(_reservation("Available", SCHEDULED)) is None
    assert rsv.is_expired(_reservation("Failed", SCHEDULED, EXPIRED))
    assert not rsv.is_expired(_reservation("Available", EXPIRED))
    assert rsv.is_scheduled(_reservation("Available", SCHEDULED))
    assert not rsv.is_scheduled(_reservation("Failed", UNSCHEDULABLE))
    bound = _reservation("Succeeded", SCHEDULED, nodeName="n",
                         currentOwners=[{"name": "a"}, {"name": "b"}])
    assert rsv.is_succeeded(bound)
    assert rsv.scheduled_node(bound) == "n"
    assert rsv.bound_pod(bound) == {"name": "a"}
    assert rsv.bound_pod(_reservation("Available")) is None
    assert rsv.migrates_pending_pod(bound)
    assert not rsv.migrates_pending_pod({"spec": {"owners": [{"controller": {"uid": "x"}}]}})
    assert rsv.reservation_ref({"metadata": {"name": "r", "uid": "u"}}) == {
        "kind": "Reservation", "apiVersion": "v1alpha1", "name": "r", "uid": "u"}
