"""Reservation annotations and labels, and the exact-match rule (upstream
`apis/extension/reservation.go`)."""

import pytest

from api.core import ObjectReference
from api.extension.reservation import (
    ANNOTATION_EXACT_MATCH_RESERVATION_SPEC,
    ANNOTATION_RESERVATION_AFFINITY,
    ANNOTATION_RESERVATION_ALLOCATED,
    ANNOTATION_RESERVATION_CURRENT_OWNER,
    ANNOTATION_RESERVATION_OWNERS,
    ANNOTATION_RESERVATION_RESTRICTED_OPTIONS,
    LABEL_POD_OPERATING_MODE,
    LABEL_PRE_ALLOCATION_REQUIRED,
    LABEL_RESERVATION_IGNORED,
    LABEL_RESERVATION_ORDER,
    ExactMatchReservationSpec,
    ReservationAffinity,
    ReservationRestrictedOptions,
    exact_match_reservation,
    format_exact_match_reservation_spec,
    format_reservation_affinity,
    format_reservation_allocated,
    format_reservation_current_owner,
    format_reservation_owners,
    format_reservation_restricted_options,
    get_reservation_order,
    is_pre_allocation_required,
    is_reservation_ignored,
    is_reservation_operating_mode,
    parse_exact_match_reservation_spec,
    parse_reservation_affinity,
    parse_reservation_allocated,
    parse_reservation_current_owner,
    parse_reservation_order,
    parse_reservation_owners,
    parse_reservation_restricted_options,
)


def test_affinity_absent_empty_and_full():
    assert parse_reservation_affinity({}) is None
    assert parse_reservation_affinity({ANNOTATION_RESERVATION_AFFINITY: ""}) == (
        ReservationAffinity())
    raw = ('{"name":"r1","requiredDuringSchedulingIgnoredDuringExecution":{'
           '"reservationSelectorTerms":[{"matchExpressions":[{"key":"app","operator":"In",'
           '"values":["web"]}]}]},"reservationSelector":{"a":"1","b":"2"},'
           '"tolerations":[{"key":"k","operator":"Exists","effect":"NoSchedule"}]}')
    affinity = parse_reservation_affinity({ANNOTATION_RESERVATION_AFFINITY: raw})
    assert affinity.name == "r1"
    terms = affinity.required_during_scheduling_ignored_during_execution.reservation_selector_terms
    assert terms[0].match_expressions[0].values == ["web"]
    assert format_reservation_affinity(affinity) == raw
    assert format_reservation_affinity(ReservationAffinity()) == "{}"


def test_reservation_allocated_round_trip():
    value = format_reservation_allocated("r1", "5c6b4a3e")
    assert value == '{"name":"r1","uid":"5c6b4a3e"}'
    allocated = parse_reservation_allocated({ANNOTATION_RESERVATION_ALLOCATED: value})
    assert (allocated.name, allocated.uid) == ("r1", "5c6b4a3e")
    assert parse_reservation_allocated({}) is None


def test_restricted_options():
    raw = '{"resources":["cpu","memory"]}'
    options = parse_reservation_restricted_options({ANNOTATION_RESERVATION_RESTRICTED_OPTIONS: raw})
    assert options.resources == ["cpu", "memory"]
    assert format_reservation_restricted_options(options) == raw
    assert parse_reservation_restricted_options({}) == ReservationRestrictedOptions()


def test_exact_match_spec_round_trip():
    raw = '{"resourceNames":["cpu","nvidia.com/gpu"]}'
    spec = parse_exact_match_reservation_spec({ANNOTATION_EXACT_MATCH_RESERVATION_SPEC: raw})
    assert format_exact_match_reservation_spec(spec) == raw
    assert parse_exact_match_reservation_spec({ANNOTATION_EXACT_MATCH_RESERVATION_SPEC: ""}) is None


@pytest.mark.parametrize(("names", "requests", "allocatable", "expected"), [
    (None, {"cpu": "1"}, {"cpu": "2"}, True),  # no spec
    ([], {"cpu": "1"}, {"cpu": "2"}, True),  # empty list
    (["cpu"], {"cpu": "1"}, {"cpu": "1000m"}, True),  # equal quantities
    (["cpu"], {"cpu": "1"}, {"cpu": "2"}, False),
    (["cpu"], {"cpu": "1"}, {}, False),  # only in the pod
    (["cpu"], {}, {"cpu": "1"}, False),  # only in the reservation
    (["gpu", "cpu"], {"cpu": "1"}, {"cpu": "2"}, True),  # in neither: match at once
    (["cpu", "gpu"], {"cpu": "1"}, {"cpu": "2"}, False),  # cpu checked first
    (["cpu", "memory"], {"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1024Mi"}, True),
])
def test_exact_match_rule(names, requests, allocatable, expected):
    spec = None if names is None else ExactMatchReservationSpec(resource_names=names)
    assert exact_match_reservation(requests, allocatable, spec) is expected


def test_labels():
    assert is_reservation_ignored({"metadata": {"labels": {LABEL_RESERVATION_IGNORED: "true"}}})
    assert not is_reservation_ignored({"metadata": {"labels": {LABEL_RESERVATION_IGNORED: "1"}}})
    assert parse_reservation_order({LABEL_RESERVATION_ORDER: "1709280000000"}) == 1709280000000
    assert parse_reservation_order({}) == 0
    assert get_reservation_order({LABEL_RESERVATION_ORDER: "soon"}) == 0
    assert is_pre_allocation_required({LABEL_PRE_ALLOCATION_REQUIRED: "true"})
    assert is_reservation_operating_mode(
        {"metadata": {"labels": {LABEL_POD_OPERATING_MODE: "Reservation"}}})
    assert not is_reservation_operating_mode(
        {"metadata": {"labels": {LABEL_POD_OPERATING_MODE: "Runnable"}}})


def test_reservation_owners_round_trip():
    raw = ('[{"object":{"kind":"Pod","namespace":"default","name":"web-0","uid":"u1"}},'
           '{"controller":{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web","uid":"u2",'
           '"controller":true,"namespace":"default"}},'
           '{"labelSelector":{"matchLabels":{"app":"web"}}}]')
    owners = parse_reservation_owners({ANNOTATION_RESERVATION_OWNERS: raw})
    assert owners[0].object.name == "web-0"
    assert owners[1].controller.controller is True
    assert owners[2].label_selector.match_labels == {"app": "web"}
    assert format_reservation_owners(owners) == raw
    assert parse_reservation_owners({}) == []


def test_current_owner_written_in_go_field_order():
    owner = ObjectReference(api_version="v1", kind="Pod", name="web-0", namespace="default",
                            uid="u1")
    value = format_reservation_current_owner(owner)
    assert value == (
        '{"kind":"Pod","namespace":"default","name":"web-0","uid":"u1","apiVersion":"v1"}')
    assert parse_reservation_current_owner({ANNOTATION_RESERVATION_CURRENT_OWNER: value}) == owner
    assert parse_reservation_current_owner({ANNOTATION_RESERVATION_CURRENT_OWNER: ""}) is None
