"""resource-spec, resource-status, numa-topology-spec and node NUMA labels (upstream
`apis/extension/numa_aware.go`)."""

from api.extension.node_topology import KubeletCPUManagerPolicy
from api.extension.numa import (
    ANNOTATION_NUMA_TOPOLOGY_SPEC,
    ANNOTATION_RESOURCE_SPEC,
    ANNOTATION_RESOURCE_STATUS,
    LABEL_NODE_CPU_BIND_POLICY,
    LABEL_NODE_ENABLE_NUMA_RESERVATION,
    LABEL_NUMA_TOPOLOGY_POLICY,
    CPUBindPolicy,
    NodeCPUBindPolicy,
    NUMANodeResource,
    NUMATopologySpec,
    ResourceSpec,
    ResourceStatus,
    format_numa_topology_spec,
    format_resource_spec,
    format_resource_status,
    get_node_cpu_bind_policy,
    get_node_numa_topology_policy,
    is_numa_reservation_enabled,
    parse_numa_topology_spec,
    parse_resource_spec,
    parse_resource_status,
)


def test_resource_status_upstream_example():
    status = parse_resource_status({ANNOTATION_RESOURCE_STATUS: '{"cpuset":"0-3"}'})
    assert status.cpuset == "0-3"
    assert format_resource_status(status) == '{"cpuset":"0-3"}'
    assert format_resource_status(ResourceStatus(cpuset="0-3")) == '{"cpuset":"0-3"}'


def test_resource_status_numa_resources_always_write_node():
    status = ResourceStatus(numa_node_resources=[
        NUMANodeResource(node=0, resources={"memory": "1024Mi", "cpu": "4"}),
        NUMANodeResource(node=1)])
    value = format_resource_status(status)
    assert value == ('{"numaNodeResources":[{"node":0,"resources":{"cpu":"4","memory":"1Gi"}},'
                     '{"node":1}]}')
    assert parse_resource_status({ANNOTATION_RESOURCE_STATUS: value}).numa_node_resources[0] \
        .resources == {"cpu": "4", "memory": "1Gi"}


def test_missing_annotations_are_empty_structs():
    assert parse_resource_spec({}) == ResourceSpec()
    assert parse_resource_status(None) == ResourceStatus()
    assert parse_numa_topology_spec({}) == NUMATopologySpec()
    assert parse_resource_spec({ANNOTATION_RESOURCE_SPEC: "null"}) == ResourceSpec()


def test_resource_spec_round_trip_and_unknown_values_kept():
    raw = ('{"requiredCPUBindPolicy":"FullPCPUs","preferredCPUBindPolicy":"SpreadByPCPUs",'
           '"preferredCPUExclusivePolicy":"PCPULevel"}')
    spec = parse_resource_spec({ANNOTATION_RESOURCE_SPEC: raw})
    assert spec.required_cpu_bind_policy == CPUBindPolicy.FULL_PCPUS
    assert format_resource_spec(spec) == raw
    # Case-insensitive keys; Go does not check the value.
    spec = parse_resource_spec({ANNOTATION_RESOURCE_SPEC: '{"preferredcpubindpolicy":"Odd"}'})
    assert format_resource_spec(spec) == '{"preferredCPUBindPolicy":"Odd"}'


def test_numa_topology_spec_round_trip():
    raw = '{"numaTopologyPolicy":"SingleNUMANode","singleNUMANodeExclusive":"Preferred"}'
    spec = parse_numa_topology_spec({ANNOTATION_NUMA_TOPOLOGY_SPEC: raw})
    assert format_numa_topology_spec(spec) == raw


def test_node_cpu_bind_policy():
    static_full = KubeletCPUManagerPolicy(policy="static", options={"full-pcpus-only": "true"})
    assert get_node_cpu_bind_policy({}) is NodeCPUBindPolicy.NONE
    assert get_node_cpu_bind_policy({LABEL_NODE_CPU_BIND_POLICY: "FullPCPUsOnly"}) is (
        NodeCPUBindPolicy.FULL_PCPUS_ONLY)
    assert get_node_cpu_bind_policy({LABEL_NODE_CPU_BIND_POLICY: "SpreadByPCPUs"}) is (
        NodeCPUBindPolicy.SPREAD_BY_PCPUS)
    assert get_node_cpu_bind_policy({LABEL_NODE_CPU_BIND_POLICY: "bogus"}) is (
        NodeCPUBindPolicy.NONE)
    # kubelet's static policy with full-pcpus-only implies FullPCPUsOnly, even over SpreadByPCPUs.
    assert get_node_cpu_bind_policy({LABEL_NODE_CPU_BIND_POLICY: "SpreadByPCPUs"},
                                    static_full) is NodeCPUBindPolicy.FULL_PCPUS_ONLY
    assert get_node_cpu_bind_policy(
        {}, KubeletCPUManagerPolicy(policy="none", options={"full-pcpus-only": "true"})) is (
        NodeCPUBindPolicy.NONE)


def test_node_labels():
    assert get_node_numa_topology_policy({LABEL_NUMA_TOPOLOGY_POLICY: "Restricted"}) == (
        "Restricted")
    assert get_node_numa_topology_policy(None) == ""
    assert is_numa_reservation_enabled({LABEL_NODE_ENABLE_NUMA_RESERVATION: "true"})
    assert not is_numa_reservation_enabled({LABEL_NODE_ENABLE_NUMA_RESERVATION: "1"})
