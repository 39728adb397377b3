import os

from koordlet.metriccache import metric_types as mt
from koordlet.metriccache.metric_cache import MetricCache
from koordlet.metricsadvisor.nodeinfo import (
    NodeInfoCollector,
    NUMAInfo,
    parse_cpu_list,
    read_cpu_basic_info,
    read_cpu_topology,
    read_numa_info,
)


def _w(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def _fake_sysfs(root):
    # 2 sockets x 2 cores x 2 threads, one NUMA node and one L3 per socket
    for cpu in range(8):
        socket, core = cpu // 4, (cpu % 4) // 2
        d = f"{root}/devices/system/cpu/cpu{cpu}"
        _w(f"{d}/topology/core_id", f"{core}\n")
        _w(f"{d}/topology/physical_package_id", f"{socket}\n")
        _w(f"{d}/cache/index0/level", "1\n")
        _w(f"{d}/cache/index0/id", f"{cpu // 2}\n")
        _w(f"{d}/cache/index2/level", "2\n")
        _w(f"{d}/cache/index2/id", f"{cpu // 2}\n")
        _w(f"{d}/cache/index3/level", "3\n")
        _w(f"{d}/cache/index3/id", f"{socket}\n")
    _w(f"{root}/devices/system/cpu/cpu8/online", "0\n")  # offline: ignored
    _w(f"{root}/devices/system/node/node0/cpulist", "0-3\n")
    _w(f"{root}/devices/system/node/node1/cpulist", "4-7\n")


def test_parse_cpu_list():
    assert parse_cpu_list("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]


def test_topology_on_fake_sysfs(tmp_path):
    _fake_sysfs(tmp_path)
    topo = read_cpu_topology(str(tmp_path))
    assert [p.cpu_id for p in topo.processors] == list(range(8))
    assert topo.sockets() == {0, 1}
    assert topo.numa_nodes() == {0, 1}
    assert len(topo.cores()) == 4
    assert topo.llcs() == {(0, 0), (1, 1)}
    p5 = topo.processors[5]
    # lscpu's logical core id: the kernel's core_id 0 of socket 1 is the system's third core
    assert (p5.socket_id, p5.core_id, p5.node_id, p5.l3) == (1, 2, 1, 1)


def test_numa_info_and_basic_info_on_fake_sysfs(tmp_path):
    _fake_sysfs(tmp_path)
    _w(f"{tmp_path}/devices/system/node/node0/meminfo", "Node 0 MemTotal:   1024 kB\n")
    _w(f"{tmp_path}/devices/system/node/node1/meminfo", "Node 1 MemTotal:   4194304 kB\n")
    _w(f"{tmp_path}/devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages", "3\n")
    _w(f"{tmp_path}/devices/system/node/node1/hugepages/hugepages-1048576kB/nr_hugepages",
       "1\n")
    assert read_numa_info(str(tmp_path)) == [
        NUMAInfo(0, 1 << 20), NUMAInfo(1, 4 << 30, 3 * (2 << 20), 1 << 30)]
    _w(f"{tmp_path}/proc/cpuinfo", "processor\t: 0\nvendor_id\t: AuthenticAMD\n"
                                   "model name\t: EPYC\n\nprocessor\t: 1\nmodel name\t: other\n")
    topo = read_cpu_topology(str(tmp_path))
    info = read_cpu_basic_info(str(tmp_path), f"{tmp_path}/proc", topo)
    # no smt/active: two threads on a core mean hyper-threading
    assert (info.cpu_model, info.vendor_id, info.hyper_thread_enabled) == (
        "EPYC", "AuthenticAMD", True)
    _w(f"{tmp_path}/devices/system/cpu/smt/active", "0\n")
    assert not read_cpu_basic_info(str(tmp_path), f"{tmp_path}/proc", topo).hyper_thread_enabled


def test_topology_on_this_machine_is_stored_in_kv():
    cache = MetricCache()
    NodeInfoCollector(cache).collect(0.0)
    topo = cache.get(mt.NODE_CPU_INFO_KEY)
    assert len(topo.processors) == os.cpu_count()
    assert topo.sockets() and topo.numa_nodes() and topo.cores() and topo.llcs()
    numa = cache.get(mt.NODE_NUMA_INFO_KEY)
    assert {i.node_id for i in numa} == topo.numa_nodes()
    assert all(i.mem_total_bytes > 0 for i in numa)
