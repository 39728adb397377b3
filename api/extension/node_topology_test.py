"""NodeResourceTopology annotations written by koordlet (upstream
`apis/extension/numa_aware.go`)."""

from api.extension.node_topology import (
    ANNOTATION_KUBELET_CPU_MANAGER_POLICY,
    ANNOTATION_NODE_BE_CPU_SHARED_POOLS,
    ANNOTATION_NODE_CPU_ALLOCS,
    ANNOTATION_NODE_CPU_SHARED_POOLS,
    ANNOTATION_NODE_CPU_TOPOLOGY,
    CPUInfo,
    CPUSharedPool,
    CPUTopology,
    KubeletCPUManagerPolicy,
    format_cpu_shared_pools,
    format_cpu_topology,
    format_kubelet_cpu_manager_policy,
    format_pod_cpu_allocs,
    parse_be_cpu_shared_pools,
    parse_cpu_shared_pools,
    parse_cpu_topology,
    parse_kubelet_cpu_manager_policy,
    parse_pod_cpu_allocs,
)


def test_cpu_topology_writes_every_field():
    topology = CPUTopology(detail=[CPUInfo(), CPUInfo(id=1, core=0, socket=0, node=0)])
    value = format_cpu_topology(topology)
    assert value == ('{"detail":[{"id":0,"core":0,"socket":0,"node":0},'
                     '{"id":1,"core":0,"socket":0,"node":0}]}')
    assert parse_cpu_topology({ANNOTATION_NODE_CPU_TOPOLOGY: value}) == topology
    assert parse_cpu_topology({}) == CPUTopology()


def test_pod_cpu_allocs_round_trip():
    raw = ('[{"namespace":"default","name":"web","uid":"u-1","cpuset":"2-3",'
           '"managedByKubelet":true},{"name":"x"}]')
    allocs = parse_pod_cpu_allocs({ANNOTATION_NODE_CPU_ALLOCS: raw})
    assert allocs[0].managed_by_kubelet is True
    assert format_pod_cpu_allocs(allocs) == raw
    assert parse_pod_cpu_allocs({}) == []


def test_shared_pools_always_write_socket_and_node():
    pools = [CPUSharedPool(cpuset="0-7"), CPUSharedPool(socket=1, node=1, cpuset="8-15")]
    value = format_cpu_shared_pools(pools)
    assert value == ('[{"socket":0,"node":0,"cpuset":"0-7"},'
                     '{"socket":1,"node":1,"cpuset":"8-15"}]')
    assert parse_cpu_shared_pools({ANNOTATION_NODE_CPU_SHARED_POOLS: value}) == pools
    assert parse_be_cpu_shared_pools({ANNOTATION_NODE_BE_CPU_SHARED_POOLS: value}) == pools
    assert parse_be_cpu_shared_pools({ANNOTATION_NODE_CPU_SHARED_POOLS: value}) == []


def test_kubelet_cpu_manager_policy_round_trip():
    raw = ('{"policy":"static","options":{"distribute-cpus-across-numa":"true",'
           '"full-pcpus-only":"true"},"reservedCPUs":"0-1"}')
    policy = parse_kubelet_cpu_manager_policy({ANNOTATION_KUBELET_CPU_MANAGER_POLICY: raw})
    assert policy.reserved_cpus == "0-1"
    assert format_kubelet_cpu_manager_policy(policy) == raw
    assert parse_kubelet_cpu_manager_policy({}) == KubeletCPUManagerPolicy()
