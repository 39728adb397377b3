"""Device annotations (upstream `apis/extension/device_share.go`) round-trip byte for byte."""

import pytest

from api.errors import MalformedValueError
from api.extension.device_share import (
    ANNOTATION_DEVICE_ALLOCATE_HINT,
    ANNOTATION_DEVICE_ALLOCATED,
    ANNOTATION_DEVICE_JOINT_ALLOCATE,
    ANNOTATION_GPU_PARTITION_SPEC,
    ANNOTATION_GPU_PARTITIONS,
    DEVICE_TOPOLOGY_SCOPE_LEVEL,
    LABEL_GPU_PARTITION_POLICY,
    LABEL_SECONDARY_DEVICE_WELL_PLANNED,
    DeviceAllocation,
    DeviceAllocationExtension,
    DeviceTopologyScope,
    GPUPartitionPolicy,
    VirtualFunction,
    format_device_allocate_hints,
    format_device_allocations,
    format_device_joint_allocate,
    format_gpu_partition_spec,
    format_gpu_partition_table,
    get_gpu_partition_policy,
    is_secondary_device_well_planned,
    parse_device_allocate_hints,
    parse_device_allocations,
    parse_device_joint_allocate,
    parse_gpu_partition_spec,
    parse_gpu_partition_table,
)

# The exact upstream output for one GPU.
ONE_GPU = ('{"gpu":[{"minor":1,"resources":{"koordinator.sh/gpu-core":"100",'
           '"koordinator.sh/gpu-memory":"16Gi","koordinator.sh/gpu-memory-ratio":"100"}}]}')


def test_device_allocated_upstream_example_round_trips():
    allocations = parse_device_allocations({ANNOTATION_DEVICE_ALLOCATED: ONE_GPU})
    assert allocations["gpu"][0].minor == 1
    assert allocations["gpu"][0].resources["koordinator.sh/gpu-memory"] == "16Gi"
    assert format_device_allocations(allocations) == ONE_GPU


def test_device_allocated_is_written_as_go_writes_it():
    # Numbers become canonical quantity strings, keys are sorted, minor 0 and a nil resources
    # map are still written.
    raw = ('{"rdma":[{"minor":0,"id":"0000:09:00.0","resources":{"koordinator.sh/rdma":100},'
           '"extension":{"vfs":[{"busID":"0000:09:00.2","minor":2}]}}],'
           '"gpu":[{"minor":0,"resources":{"koordinator.sh/gpu-memory":"16384Mi",'
           '"koordinator.sh/gpu-core":100}}],"fpga":[{}]}')
    allocations = parse_device_allocations({ANNOTATION_DEVICE_ALLOCATED: raw})
    assert format_device_allocations(allocations) == (
        '{"fpga":[{"minor":0,"resources":null}],'
        '"gpu":[{"minor":0,"resources":{"koordinator.sh/gpu-core":"100",'
        '"koordinator.sh/gpu-memory":"16Gi"}}],'
        '"rdma":[{"minor":0,"resources":{"koordinator.sh/rdma":"100"},"id":"0000:09:00.0",'
        '"extension":{"vfs":[{"minor":2,"busID":"0000:09:00.2"}]}}]}')


def test_device_allocation_built_in_python():
    allocation = DeviceAllocation(
        minor=3, resources={"koordinator.sh/gpu-core": "50"},
        extension=DeviceAllocationExtension(vfs=[VirtualFunction(bus_id="0000:1f:00.1")],
                                            gpu_shared_resource_template="1g.10gb"))
    assert format_device_allocations({"gpu": [allocation]}) == (
        '{"gpu":[{"minor":3,"resources":{"koordinator.sh/gpu-core":"50"},"extension":'
        '{"vfs":[{"busID":"0000:1f:00.1"}],"gpuSharedResourceTemplate":"1g.10gb"}}]}')


def test_device_allocated_missing_or_null_is_none():
    assert parse_device_allocations({}) is None
    assert parse_device_allocations(None) is None
    assert parse_device_allocations({ANNOTATION_DEVICE_ALLOCATED: "null"}) is None


def test_keys_match_case_insensitively():
    allocations = parse_device_allocations(
        {ANNOTATION_DEVICE_ALLOCATED: '{"gpu":[{"MINOR":2,"Resources":{"cpu":"1"},"ID":"x"}]}'})
    assert (allocations["gpu"][0].minor, allocations["gpu"][0].id) == (2, "x")


def test_device_allocate_hint_round_trip():
    raw = ('{"gpu":{"selector":{"matchLabels":{"model":"A100"}},"allocateStrategy":"ApplyForAll",'
           '"requiredTopologyScope":"PCIe","exclusivePolicy":"DeviceLevel"},'
           '"rdma":{"vfSelector":{},"allocateStrategy":"RequestsAsCount"}}')
    hints = parse_device_allocate_hints({ANNOTATION_DEVICE_ALLOCATE_HINT: raw})
    assert hints["gpu"].selector.match_labels == {"model": "A100"}
    assert hints["rdma"].vf_selector is not None
    assert format_device_allocate_hints(hints) == raw
    assert parse_device_allocate_hints({}) is None


def test_topology_scope_levels():
    assert DEVICE_TOPOLOGY_SCOPE_LEVEL[DeviceTopologyScope.DEVICE] == 4
    assert DEVICE_TOPOLOGY_SCOPE_LEVEL[DeviceTopologyScope.NODE] == 1


def test_device_joint_allocate_round_trip():
    raw = '{"deviceTypes":["gpu","rdma"],"requiredScope":"SamePCIe"}'
    joint = parse_device_joint_allocate({ANNOTATION_DEVICE_JOINT_ALLOCATE: raw})
    assert joint.device_types == ["gpu", "rdma"]
    assert format_device_joint_allocate(joint) == raw
    assert parse_device_joint_allocate({}) is None


def test_gpu_partition_spec():
    spec = parse_gpu_partition_spec({ANNOTATION_GPU_PARTITION_SPEC: "{}"})
    assert spec.allocate_policy == "BestEffort"  # empty policy reads as BestEffort
    raw = '{"allocatePolicy":"Restricted","ringBusBandwidth":"200Gi"}'
    spec = parse_gpu_partition_spec({ANNOTATION_GPU_PARTITION_SPEC: raw})
    assert format_gpu_partition_spec(spec) == raw
    assert parse_gpu_partition_spec({}) is None


def test_gpu_partition_table_upstream_example():
    example = ('{"0": [{"minors": [0,1], "gpuLinkType": "NVLink", "ringBusBandwidth": "200Gi", '
               '"allocationScore": 10}]}')
    table = parse_gpu_partition_table({ANNOTATION_GPU_PARTITIONS: example})
    assert list(table) == [0]
    assert table[0][0].minors == [0, 1]
    assert format_gpu_partition_table(table) == (
        '{"0":[{"minors":[0,1],"gpuLinkType":"NVLink","ringBusBandwidth":"200Gi",'
        '"allocationScore":10}]}')


def test_gpu_partition_table_keys_sort_as_strings_and_minors_are_always_written():
    table = parse_gpu_partition_table(
        {ANNOTATION_GPU_PARTITIONS: '{"2":[{"minors":[0,1]}],"10":[],"1":[{}]}'})
    assert format_gpu_partition_table(table) == (
        '{"1":[{"minors":null}],"10":[],"2":[{"minors":[0,1]}]}')


def test_gpu_partition_table_rejects_null_and_ignores_empty():
    with pytest.raises(MalformedValueError):
        parse_gpu_partition_table({ANNOTATION_GPU_PARTITIONS: "null"})
    assert parse_gpu_partition_table({ANNOTATION_GPU_PARTITIONS: ""}) is None
    assert parse_gpu_partition_table({}) is None


def test_labels():
    assert get_gpu_partition_policy({LABEL_GPU_PARTITION_POLICY: "Honor"}) is (
        GPUPartitionPolicy.HONOR)
    for other in ("honor", "Prefer", "", None):
        labels = {} if other is None else {LABEL_GPU_PARTITION_POLICY: other}
        assert get_gpu_partition_policy(labels) is GPUPartitionPolicy.PREFER
    assert is_secondary_device_well_planned({LABEL_SECONDARY_DEVICE_WELL_PLANNED: "true"})
    assert not is_secondary_device_well_planned({LABEL_SECONDARY_DEVICE_WELL_PLANNED: "True"})
