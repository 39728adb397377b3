"""A Reservation the scheduler could not place or match as written is refused with 422, naming
the Reservation and the field; upstream's sample and a full valid Reservation pass, and status
writes and spec-preserving updates of a stored bad one are let through."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from api.extension.reservation import ANNOTATION_RESERVATION_AFFINITY
from api.loader import load_yaml_documents
from manager.webhook.admission import AdmissionRequest
from manager.webhook.reservation.validating import ReservationValidatingHandler
from pkg.util.testdata import upstream_data_dir

Obj = dict[str, Any]
HANDLER = ReservationValidatingHandler()


def reservation(name: str = "r", **spec: Any) -> Obj:
    base: Obj = {"template": {"spec": {"containers": [{"name": "main", "resources": {
                     "requests": {"cpu": "1", "memory": "1Gi"}}}]}},
                 "owners": [{"object": {"namespace": "default", "name": "web-0"}}],
                 "ttl": "1h"}
    for key, value in spec.items():
        if value is None:
            base.pop(key, None)
        else:
            base[key] = value
    return {"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Reservation",
            "metadata": {"name": name}, "spec": base}


def review(obj: Obj, op: str = "CREATE", old: Obj | None = None,
           sub_resource: str = "") -> AdmissionRequest:
    return AdmissionRequest(uid="u", operation=op, resource="reservations",
                            group="scheduling.koordinator.sh", version="v1alpha1", object=obj,
                            old_object=old, sub_resource=sub_resource,
                            name=obj["metadata"]["name"])


def pod_spec(**resources: Any) -> Obj:
    return {"spec": {"containers": [{"name": "main", "resources": resources}]}}


NODE_AFFINITY_IN_LOWER = {"spec": {
    "containers": [{"name": "main"}],
    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "pool", "operator": "in", "values": ["a"]}]}]}}}}}

# (case, spec overrides or metadata annotations, the message after 'Reservation "r" is invalid: ')
CASES: list[tuple[str, Obj, str]] = [
    ("no template", {"template": None},
     "spec.template: Required value: the pod the reservation holds resources for"),
    ("no owners", {"owners": []},
     "spec.owners: Required value: at least one owner: the pods that may use the reservation"),
    ("no ttl or expires", {"ttl": None},
     "spec.ttl: Required value: ttl or expires"),
    ("an owner with no part", {"owners": [{}]},
     "spec.owners[0]: Required value: one of object, controller or labelSelector"),
    ("an empty object part", {"owners": [{"object": {}}]},
     "spec.owners[0].object: Required value: must not be empty: it would match every pod"),
    ("an empty label selector", {"owners": [{"object": {"name": "a"}}, {"labelSelector": {}}]},
     "spec.owners[1].labelSelector: Required value: must not be empty: it would match every "
     "pod"),
    ("a bad label selector", {"owners": [{"labelSelector": {"matchExpressions": [
        {"key": "app", "operator": "in", "values": ["web"]}]}}]},
     'spec.owners[0].labelSelector.matchExpressions[0].operator: Unsupported value: "in": '
     'supported values: "In", "NotIn", "Exists", "DoesNotExist"'),
    ("a negative request", {"template": pod_spec(requests={"cpu": "-1"})},
     'spec.template.spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be '
     "greater than or equal to 0"),
    ("a malformed limit", {"template": pod_spec(limits={"memory": "lots"})},
     'spec.template.spec.containers[0].resources.limits[memory]: Invalid value: "lots": must '
     "be a quantity (like '500m', '2', '16Gi')"),
    ("a bad node affinity operator", {"template": NODE_AFFINITY_IN_LOWER},
     "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
     '.nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: "in": supported '
     'values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"'),
]


@pytest.mark.parametrize(("case", "spec", "message"), CASES, ids=[c[0] for c in CASES])
def test_bad_reservation_is_refused_naming_the_field(case: str, spec: Obj, message: str) -> None:
    resp = HANDLER(review(reservation(**spec)))
    assert (resp.allowed, resp.code, resp.reason) == (False, 422, "Invalid"), case
    assert resp.message == f'Reservation "r" is invalid: {message}'


def test_malformed_reservation_affinity_annotation_is_refused() -> None:
    obj = reservation()
    obj["metadata"]["annotations"] = {ANNOTATION_RESERVATION_AFFINITY: "{not json"}
    resp = HANDLER(review(obj))
    assert not resp.allowed
    assert resp.message.startswith(
        'Reservation "r" is invalid: metadata.annotations[scheduling.koordinator.sh/'
        'reservation-affinity]: Invalid value: "{not json": ')

    obj = reservation()
    obj["spec"]["template"]["metadata"] = {"annotations": {
        ANNOTATION_RESERVATION_AFFINITY: json.dumps({
            "requiredDuringSchedulingIgnoredDuringExecution": {"reservationSelectorTerms": [
                {"matchExpressions": [{"key": "tier", "operator": "Gt", "values": ["x"]}]}]}})}}
    resp = HANDLER(review(obj))
    assert resp.message == (
        'Reservation "r" is invalid: spec.template.metadata.annotations[scheduling.koordinator'
        ".sh/reservation-affinity].requiredDuringSchedulingIgnoredDuringExecution."
        "reservationSelectorTerms[0].matchExpressions[0].values[0]: for 'Gt', 'Lt' operators, "
        "the value must be an integer")


def test_every_error_is_reported_at_once() -> None:
    resp = HANDLER(review(reservation(template=None, owners=[{}])))
    assert resp.message == (
        'Reservation "r" is invalid: [spec.template: Required value: the pod the reservation '
        "holds resources for, spec.owners[0]: Required value: one of object, controller or "
        "labelSelector]")


def test_upstream_sample_and_a_full_reservation_pass() -> None:
    [sample] = load_yaml_documents(
        (upstream_data_dir() / "config/samples/scheduling_v1alpha1_reservation.yaml").read_text())
    sample = copy.deepcopy(sample)
    sample["spec"]["ttl"] = "24h"  # the CRD's default, applied before validation
    assert HANDLER(review(sample)).allowed

    full = reservation(
        owners=[{"controller": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                                "controller": True, "namespace": "default"}},
                {"labelSelector": {"matchLabels": {"app": "web"}}}],
        expires="2030-01-01T00:00:00Z", allocatePolicy="Restricted",
        template={"metadata": {"annotations": {ANNOTATION_RESERVATION_AFFINITY: "{}"}},
                  "spec": {"containers": [{"name": "main", "resources": {
                      "requests": {"cpu": "500m", "memory": "1Gi"},
                      "limits": {"cpu": 1, "memory": "1Gi"}}}],
                      "overhead": {"cpu": "0"}}})
    assert HANDLER(review(full)).allowed


def test_status_writes_and_spec_preserving_updates_are_not_checked() -> None:
    bad = reservation(owners=[{}])
    assert HANDLER(review(bad, "UPDATE", old=bad, sub_resource="status")).allowed
    relabelled = copy.deepcopy(bad)
    relabelled["metadata"]["labels"] = {"a": "b"}
    assert HANDLER(review(relabelled, "UPDATE", old=bad)).allowed
    worse = reservation(owners=[{}], template=None)
    assert not HANDLER(review(worse, "UPDATE", old=bad)).allowed
    assert HANDLER(review(bad, "DELETE")).allowed
