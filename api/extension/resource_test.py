"""Batch/mid resource mapping, extended-resource-spec and replace-resources (upstream
`apis/extension/resource.go`)."""

import pytest

from api.extension.deprecated import (
    DEPRECATED_BATCH_RESOURCES_MAPPER,
    DEPRECATED_DEVICE_RESOURCES_MAPPER,
    translate_deprecated_resource_name,
)
from api.extension.priority import PriorityClass
from api.extension.resource import (
    ANNOTATION_EXTENDED_RESOURCE_SPEC,
    ANNOTATION_POD_REPLACE_RESOURCES,
    BATCH_CPU,
    BATCH_MEMORY,
    MID_CPU,
    MID_MEMORY,
    ExtendedResourceSpec,
    format_extended_resource_spec,
    format_replace_resources,
    parse_extended_resource_spec,
    parse_replace_resources,
    translate_resource_name_by_priority_class,
    translate_resource_quantity,
)


def test_resource_names():
    assert (BATCH_CPU, BATCH_MEMORY) == ("kubernetes.io/batch-cpu", "kubernetes.io/batch-memory")
    assert (MID_CPU, MID_MEMORY) == ("kubernetes.io/mid-cpu", "kubernetes.io/mid-memory")


@pytest.mark.parametrize(("priority_class", "name", "expected"), [
    (PriorityClass.BATCH, "cpu", BATCH_CPU), (PriorityClass.BATCH, "memory", BATCH_MEMORY),
    (PriorityClass.MID, "cpu", MID_CPU), (PriorityClass.MID, "memory", MID_MEMORY),
    (PriorityClass.PROD, "cpu", "cpu"), (PriorityClass.NONE, "memory", "memory"),
    (PriorityClass.FREE, "cpu", ""), (PriorityClass.FREE, "memory", ""),
    (PriorityClass.BATCH, "nvidia.com/gpu", ""), ("koord-batch", "cpu", BATCH_CPU),
])
def test_translate_resource_name_by_priority_class(priority_class, name, expected):
    assert translate_resource_name_by_priority_class(priority_class, name) == expected


@pytest.mark.parametrize(("name", "quantity", "expected"), [
    # Milli-cores as an integer quantity, written as Go's NewQuantity(milli, DecimalSI) is.
    (BATCH_CPU, "1", "1k"), (BATCH_CPU, "500m", "500"), (BATCH_CPU, "1.5", "1500"),
    (MID_CPU, 2, "2k"), (BATCH_CPU, "0.0001", "1"),  # milli-value rounds up
    (BATCH_MEMORY, "1024Mi", "1Gi"), (MID_MEMORY, "1Gi", "1Gi"),
])
def test_translate_resource_quantity(name, quantity, expected):
    assert translate_resource_quantity(name, quantity) == expected


EXAMPLE = ('{"containers":{"main":{"limits":{"kubernetes.io/batch-cpu":"500",'
           '"kubernetes.io/batch-memory":"1Gi"},"requests":{"kubernetes.io/batch-cpu":"500",'
           '"kubernetes.io/batch-memory":"1Gi"}}}}')


def test_extended_resource_spec_round_trip():
    spec = parse_extended_resource_spec({ANNOTATION_EXTENDED_RESOURCE_SPEC: EXAMPLE})
    assert spec.containers["main"].limits == {BATCH_CPU: "500", BATCH_MEMORY: "1Gi"}
    assert format_extended_resource_spec(spec) == EXAMPLE
    assert parse_extended_resource_spec(None) == ExtendedResourceSpec()
    assert parse_extended_resource_spec({ANNOTATION_EXTENDED_RESOURCE_SPEC: "null"}) == (
        ExtendedResourceSpec())
    assert format_extended_resource_spec(ExtendedResourceSpec()) == "{}"


def test_extended_resource_spec_sorts_containers_and_canonicalizes_quantities():
    raw = ('{"containers":{"b":{"requests":{"kubernetes.io/batch-memory":"1024Mi"}},'
           '"a":{"limits":{"kubernetes.io/batch-cpu":1000}}}}')
    spec = parse_extended_resource_spec({ANNOTATION_EXTENDED_RESOURCE_SPEC: raw})
    assert format_extended_resource_spec(spec) == (
        '{"containers":{"a":{"limits":{"kubernetes.io/batch-cpu":"1k"}},'
        '"b":{"requests":{"kubernetes.io/batch-memory":"1Gi"}}}}')


@pytest.mark.parametrize(("value", "erase", "replace"), [
    (None, [], {}), ("", [], {}),
    ("a:b", [], {"a": "b"}),
    ("nvidia.com/gpu:koordinator.sh/gpu, koordinator.sh/rdma: ", ["koordinator.sh/rdma"],
     {"nvidia.com/gpu": "koordinator.sh/gpu"}),
    (" x : y ,bad,a:b:c,,z:", ["z"], {"x": "y"}),
])
def test_replace_resources(value, erase, replace):
    annotations = {} if value is None else {ANNOTATION_POD_REPLACE_RESOURCES: value}
    assert parse_replace_resources(annotations) == (erase, replace)


def test_format_replace_resources_round_trips():
    value = format_replace_resources(["e"], {"a": "b"})
    assert value == "a:b,e:"
    assert parse_replace_resources({ANNOTATION_POD_REPLACE_RESOURCES: value}) == (
        ["e"], {"a": "b"})


def test_deprecated_mappers():
    assert DEPRECATED_BATCH_RESOURCES_MAPPER["koordinator.sh/batch-cpu"] == BATCH_CPU
    assert DEPRECATED_BATCH_RESOURCES_MAPPER["koordinator.sh/batch-memory"] == BATCH_MEMORY
    assert dict(DEPRECATED_DEVICE_RESOURCES_MAPPER) == {
        "kubernetes.io/rdma": "koordinator.sh/rdma", "kubernetes.io/fpga": "koordinator.sh/fpga",
        "kubernetes.io/gpu": "koordinator.sh/gpu",
        "kubernetes.io/gpu-core": "koordinator.sh/gpu-core",
        "kubernetes.io/gpu-memory": "koordinator.sh/gpu-memory",
        "kubernetes.io/gpu-memory-ratio": "koordinator.sh/gpu-memory-ratio",
    }
    assert translate_deprecated_resource_name("kubernetes.io/gpu") == "koordinator.sh/gpu"
    assert translate_deprecated_resource_name("cpu") == "cpu"
