"""Node reservation, system QoS resource, bandwidth and third-party allocations (upstream
`apis/extension/node_reservation.go`, `system_qos.go`)."""

import pytest

from api.errors import MalformedValueError
from api.extension.node import (
    ANNOTATION_NODE_NETWORK_BANDWIDTH,
    ANNOTATION_NODE_ORIGIN_EXTENDED_ALLOCATABLE,
    ANNOTATION_NODE_RESERVATION,
    ANNOTATION_NODE_SYSTEM_QOS_RESOURCE,
    ANNOTATION_NODE_THIRD_PARTY_ALLOCATIONS,
    NodeReservation,
    OriginAllocatable,
    SystemQOSResource,
    ThirdPartyAllocation,
    ThirdPartyAllocations,
    format_node_reservation,
    format_origin_extended_allocatable,
    format_system_qos_resource,
    format_third_party_allocations,
    get_reserved_cpus,
    parse_network_bandwidth,
    parse_node_reservation,
    parse_origin_extended_allocatable,
    parse_system_qos_resource,
    parse_third_party_allocations,
    third_party_allocated_by_priority,
)


def test_node_reservation_round_trip():
    raw = '{"resources":{"cpu":"2","memory":"4Gi"},"reservedCPUs":"0-1","applyPolicy":"Default"}'
    reservation = parse_node_reservation({ANNOTATION_NODE_RESERVATION: raw})
    assert format_node_reservation(reservation) == raw
    assert parse_node_reservation({}) == NodeReservation()
    assert parse_node_reservation({ANNOTATION_NODE_RESERVATION: ""}) == NodeReservation()


@pytest.mark.parametrize(("value", "expected"), [
    (None, ("", 0)), ("", ("", 0)),
    ('{"reservedCPUs":"0-5"}', ("0-5", 0)),
    ('{"resources":{"cpu":"4"},"reservedCPUs":"0-5"}', ("0-5", 0)),  # the list wins, count 0
    ('{"resources":{"cpu":"2500m"}}', ("", 3)),
    ('{"resources":{"cpu":"2"}}', ("", 2)),
    ('{"resources":{"cpu":"1m"}}', ("", 1)),
    ('{"resources":{"cpu":"-2"}}', ("", 0)),
    ('{"resources":{"memory":"1Gi"}}', ("", 0)),
    ("not json", ("", 0)),  # invalid: logged, ("", 0)
])
def test_get_reserved_cpus(value, expected):
    annotations = {} if value is None else {ANNOTATION_NODE_RESERVATION: value}
    assert get_reserved_cpus(annotations) == expected


def test_system_qos_resource():
    resource = parse_system_qos_resource({ANNOTATION_NODE_SYSTEM_QOS_RESOURCE: '{"cpuset":"0-1"}'})
    assert resource.cpuset == "0-1"
    assert resource.is_cpuset_exclusive  # default true
    raw = '{"cpuset":"0-1","cpusetExclusive":false}'
    resource = parse_system_qos_resource({ANNOTATION_NODE_SYSTEM_QOS_RESOURCE: raw})
    assert not resource.is_cpuset_exclusive
    assert format_system_qos_resource(resource) == raw  # false is written (a pointer)
    assert parse_system_qos_resource(None) is None
    assert parse_system_qos_resource({}) == SystemQOSResource()


def test_network_bandwidth():
    assert parse_network_bandwidth({ANNOTATION_NODE_NETWORK_BANDWIDTH: "25G"}) == "25G"
    assert parse_network_bandwidth({}) is None
    with pytest.raises(MalformedValueError):
        parse_network_bandwidth({ANNOTATION_NODE_NETWORK_BANDWIDTH: "25 Gbit"})


def test_origin_extended_allocatable_round_trip():
    raw = '{"resources":{"kubernetes.io/batch-cpu":"20k","kubernetes.io/batch-memory":"40Gi"}}'
    origin = parse_origin_extended_allocatable({ANNOTATION_NODE_ORIGIN_EXTENDED_ALLOCATABLE: raw})
    assert format_origin_extended_allocatable(origin) == raw
    assert format_origin_extended_allocatable(OriginAllocatable()) == "{}"
    assert parse_origin_extended_allocatable({}) is None


def test_third_party_allocations():
    raw = ('{"allocations":[{"name":"hadoop-yarn","priority":"koord-batch","resources":'
           '{"kubernetes.io/batch-cpu":"1k","kubernetes.io/batch-memory":"1Gi"}},'
           '{"name":"other","priority":"koord-batch","resources":{"kubernetes.io/batch-cpu":"500"}},'
           '{"name":"mid","priority":"koord-mid"}]}')
    annotations = {ANNOTATION_NODE_THIRD_PARTY_ALLOCATIONS: raw}
    allocations = parse_third_party_allocations(annotations)
    assert format_third_party_allocations(allocations) == raw
    assert third_party_allocated_by_priority(annotations, "koord-batch") == {
        "kubernetes.io/batch-cpu": "1500", "kubernetes.io/batch-memory": "1Gi"}
    assert third_party_allocated_by_priority(annotations, "koord-prod") == {}
    assert third_party_allocated_by_priority({}, "koord-batch") is None
    # name and priority are always written.
    assert format_third_party_allocations(ThirdPartyAllocations(
        allocations=[ThirdPartyAllocation()])) == '{"allocations":[{"name":"","priority":""}]}'
