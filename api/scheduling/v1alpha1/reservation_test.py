"""Reservation: upstream's sample round-trips, owners in every form, CRD defaults as accessors."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from api.loader import load_object, load_yaml_documents
from api.meta import OwnerReference
from api.scheduling.v1alpha1.reservation import (
    PreAllocationPolicy,
    Reservation,
    ReservationControllerReference,
    ReservationOwner,
    ReservationSpec,
    ReservationStatus,
)
from api.testing import json_differences
from pkg.util.testdata import upstream_data_dir


def test_upstream_sample_round_trips() -> None:
    path = upstream_data_dir() / "config/samples/scheduling_v1alpha1_reservation.yaml"
    (doc,) = load_yaml_documents(path.read_text())
    obj = load_object(doc)
    assert isinstance(obj, Reservation)
    assert json_differences(doc, obj.to_dict()) == []
    assert obj.spec.owners[0].object is not None
    assert obj.spec.owners[0].object.name == "reserve-demo-0"
    assert obj.spec.template is not None
    assert obj.spec.template["spec"]["schedulerName"] == "koord-scheduler"


def test_unset_fields_take_the_crd_defaults_only_through_accessors() -> None:
    obj = Reservation.model_validate({"metadata": {"name": "r"}, "spec": {"owners": []}})
    assert obj.spec.allocate_once_effective is True
    assert obj.spec.ttl_effective == "24h"
    assert obj.spec.ttl_seconds == 24 * 3600
    assert obj.spec.allocate_policy_effective == "Aligned"
    assert obj.spec.pre_allocation_policy_effective.mode_effective == "Default"
    assert obj.spec.pre_allocation_policy_effective.enable_multiple_effective is False
    assert obj.phase == "Pending"
    assert obj.spec.expires_at is None
    # Nothing the API server would default is written back.
    assert obj.to_dict()["spec"] == {"owners": []}
    assert "status" not in obj.to_dict()


def test_explicit_values_win_over_defaults() -> None:
    spec = ReservationSpec.model_validate({
        "owners": [{"object": {"name": "p"}}], "ttl": "0s", "allocateOnce": False,
        "allocatePolicy": "Restricted", "expires": "2024-03-05T08:00:00Z",
        "preAllocationPolicy": {"mode": "Cluster", "enableMultiple": True},
    })
    assert spec.allocate_once_effective is False
    assert spec.ttl_seconds == 0
    assert spec.allocate_policy_effective == "Restricted"
    assert spec.expires_at == datetime(2024, 3, 5, 8, tzinfo=UTC)
    assert spec.pre_allocation_policy_effective == PreAllocationPolicy(
        mode="Cluster", enable_multiple=True)
    assert spec.to_dict()["preAllocationPolicy"] == {"mode": "Cluster", "enableMultiple": True}


@pytest.mark.parametrize("bad", [{"allocatePolicy": "Default"},
                                 {"preAllocationPolicy": {"mode": "Node"}},
                                 {"ttl": "1 day"}])
def test_values_the_crd_rejects_are_rejected(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        ReservationSpec.model_validate({"owners": [], **bad})


OWNER_FORMS: list[dict[str, dict[str, object]]] = [
    {"object": {"kind": "Pod", "namespace": "default", "name": "web-0", "uid": "u1"}},
    {"controller": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                    "uid": "u2", "controller": True, "namespace": "default"}},
    {"labelSelector": {"matchLabels": {"app": "web"},
                       "matchExpressions": [{"key": "tier", "operator": "In",
                                             "values": ["a", "b"]}]}},
    {"object": {"name": "web-0"}, "labelSelector": {"matchLabels": {"app": "web"}}},
]


@pytest.mark.parametrize("owner", OWNER_FORMS)
def test_every_owner_form_round_trips(owner: dict[str, object]) -> None:
    assert ReservationOwner.model_validate(owner).to_dict() == owner


def test_controller_reference_is_an_owner_reference_plus_namespace() -> None:
    ref = ReservationControllerReference.model_validate(OWNER_FORMS[1]["controller"])
    assert isinstance(ref, OwnerReference)
    assert ref.namespace == "default"
    assert ref.owner_reference() == OwnerReference(
        api_version="apps/v1", kind="ReplicaSet", name="web", uid="u2", controller=True)
    with pytest.raises(ValueError):
        ReservationControllerReference.model_validate({"kind": "ReplicaSet", "name": "web"})


def test_status_round_trips_with_conditions_and_quantities() -> None:
    status = {
        "phase": "Available", "nodeName": "node-1",
        "allocatable": {"cpu": "2", "memory": "4Gi"}, "allocated": {"cpu": "500m"},
        "currentOwners": [{"namespace": "default", "name": "web-0", "uid": "u1"}],
        "conditions": [{"type": "Scheduled", "status": "True", "reason": "Scheduled",
                        "lastProbeTime": "2024-03-05T08:00:00Z",
                        "lastTransitionTime": "2024-03-05T08:00:00Z"}],
    }
    parsed = ReservationStatus.model_validate({**status, "allocatable": {"cpu": 2,
                                                                        "memory": "4Gi"}})
    assert parsed.to_dict() == status
    assert parsed.phase_effective == "Available"


def test_node_name_prefers_status_then_template() -> None:
    pinned = Reservation.model_validate(
        {"spec": {"template": {"spec": {"nodeName": "node-a"}}, "owners": []}})
    assert pinned.node_name == "node-a"
    pinned.status = ReservationStatus(node_name="node-b")
    assert pinned.node_name == "node-b"
    assert Reservation().node_name == ""


def test_kind_facts() -> None:
    assert Reservation.crd_name() == "reservations.scheduling.koordinator.sh"
    assert not Reservation.namespaced and Reservation.status_subresource
    assert [c["name"] for c in Reservation.printer_columns] == [
        "Phase", "Age", "Node", "TTL", "Expires"]
    assert Reservation().to_dict()["apiVersion"] == "scheduling.koordinator.sh/v1alpha1"
