"""NodeInfoCollector (upstream ``pkg/koordlet/metricsadvisor/collectors/nodeinfo``,
``koordlet/util/cpuinfo.go`` and ``meminfo.go``): CPU topology — sockets, NUMA nodes, cores and
cache ids — read from ``/sys/devices/system/cpu`` and ``/sys/devices/system/node``, with the CPU
basic info (model and vendor from ``/proc/cpuinfo``, hyper-threading), stored in the cache's KV
map under ``node_cpu_info``; each NUMA node's memory and huge pages under ``node_numa_info``.

Core and socket ids are lscpu's logical ids, as upstream reads them from ``lscpu -e``: numbered
in order of first appearance by CPU id, a core's id unique across sockets (the kernel's
``core_id`` repeats in every socket). NUMA node ids are the kernel's.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from api.extension.cpu_normalization import CPUBasicInfo
from koordlet.metriccache import metric_types as mt
from koordlet.metriccache.metric_cache import MetricCache, MetricSample

_CPU_DIR = re.compile(r"^cpu(\d+)$")
_NODE_DIR = re.compile(r"^node(\d+)$")


@dataclass(slots=True, frozen=True)
class ProcessorInfo:
    """Upstream ``koordlet/util.ProcessorInfo``: one logical CPU."""

    cpu_id: int
    core_id: int
    socket_id: int
    node_id: int
    l1dl1il2: str  # upstream's combined L1d/L1i/L2 cache id
    l3: int


@dataclass(slots=True)
class CPUTopology:
    processors: list[ProcessorInfo] = field(default_factory=list)
    basic_info: CPUBasicInfo = field(default_factory=CPUBasicInfo)

    def sockets(self) -> set[int]:
        return {p.socket_id for p in self.processors}

    def numa_nodes(self) -> set[int]:
        return {p.node_id for p in self.processors}

    def cores(self) -> set[tuple[int, int]]:
        """Physical cores: core ids are only unique within a socket."""
        return {(p.socket_id, p.core_id) for p in self.processors}

    def llcs(self) -> set[tuple[int, int]]:
        return {(p.socket_id, p.l3) for p in self.processors}


def parse_cpu_list(text: str) -> list[int]:
    """Linux CPU list format: ``0-3,8,10-11``."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


def _read_int(path: str, default: int) -> int:
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return default


def _cache_ids(cpu_dir: str, cpu_id: int) -> tuple[str, int]:
    """L1/L2 id and L3 id: a cache's ``id`` file, else the first CPU sharing it."""
    ids: dict[int, int] = {}
    cache_root = os.path.join(cpu_dir, "cache")
    try:
        indexes = sorted(os.listdir(cache_root))
    except OSError:
        indexes = []
    for index in indexes:
        d = os.path.join(cache_root, index)
        level = _read_int(os.path.join(d, "level"), -1)
        cid = _read_int(os.path.join(d, "id"), -1)
        if cid < 0:
            try:
                with open(os.path.join(d, "shared_cpu_list")) as f:
                    cid = parse_cpu_list(f.read())[0]
            except (OSError, ValueError, IndexError):
                cid = cpu_id
        ids[level] = cid
    l2 = ids.get(2, ids.get(1, cpu_id))
    # without an L3 the LLC is the L2 (upstream treats the last level as the LLC)
    return f"{l2}", ids.get(3, l2)


def read_cpu_topology(sys_root: str = "/sys") -> CPUTopology:
    cpu_root = os.path.join(sys_root, "devices", "system", "cpu")
    node_root = os.path.join(sys_root, "devices", "system", "node")
    cpu_node: dict[int, int] = {}
    if os.path.isdir(node_root):
        for name in os.listdir(node_root):
            m = _NODE_DIR.match(name)
            if m:
                with open(os.path.join(node_root, name, "cpulist")) as f:
                    for cpu in parse_cpu_list(f.read()):
                        cpu_node[cpu] = int(m.group(1))
    online = []
    for name in os.listdir(cpu_root):
        m = _CPU_DIR.match(name)
        if m and _read_int(os.path.join(cpu_root, name, "online"), 1) != 0:
            online.append(int(m.group(1)))  # offline CPUs have no topology
    topo = CPUTopology()
    sockets: dict[int, int] = {}  # kernel physical_package_id → logical socket id
    cores: dict[tuple[int, int], int] = {}  # (package, kernel core_id) → logical core id
    for cpu_id in sorted(online):
        cpu_dir = os.path.join(cpu_root, f"cpu{cpu_id}")
        package = _read_int(os.path.join(cpu_dir, "topology", "physical_package_id"), 0)
        core = _read_int(os.path.join(cpu_dir, "topology", "core_id"), cpu_id)
        l1l2, l3 = _cache_ids(cpu_dir, cpu_id)
        topo.processors.append(
            ProcessorInfo(
                cpu_id=cpu_id,
                core_id=cores.setdefault((package, core), len(cores)),
                socket_id=sockets.setdefault(package, len(sockets)),
                node_id=cpu_node.get(cpu_id, 0),
                l1dl1il2=l1l2,
                l3=l3,
            )
        )
    return topo


def _hyper_thread_enabled(sys_root: str, topo: CPUTopology) -> bool:
    """``smt/active`` where the kernel has it, else more than one thread on some core."""
    active = _read_int(os.path.join(sys_root, "devices", "system", "cpu", "smt", "active"), -1)
    if active >= 0:
        return active == 1
    return len(topo.cores()) < len(topo.processors)


def read_cpu_basic_info(sys_root: str, proc_root: str, topo: CPUTopology) -> CPUBasicInfo:
    """Model and vendor of the first processor in ``cpuinfo`` (absent fields stay empty)."""
    fields: dict[str, str] = {}
    try:
        with open(os.path.join(proc_root, "cpuinfo")) as f:
            for line in f:
                if not line.strip():
                    break  # the first processor's block is enough
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return CPUBasicInfo(cpu_model=fields.get("model name", ""),
                        vendor_id=fields.get("vendor_id", ""),
                        hyper_thread_enabled=_hyper_thread_enabled(sys_root, topo))


@dataclass(slots=True, frozen=True)
class NUMAInfo:
    """Upstream ``koordlet/util.NUMAInfo``: one NUMA node's memory and huge pages (bytes)."""

    node_id: int
    mem_total_bytes: int
    hugepages_2mi_bytes: int = 0
    hugepages_1gi_bytes: int = 0


_MEM_TOTAL = re.compile(r"^Node\s+\d+\s+MemTotal:\s+(\d+)\s*kB", re.MULTILINE)


def _hugepages_bytes(node_dir: str, size_kb: int) -> int:
    pages = _read_int(os.path.join(node_dir, "hugepages", f"hugepages-{size_kb}kB",
                                   "nr_hugepages"), 0)
    return pages * size_kb * 1024


def read_numa_info(sys_root: str = "/sys") -> list[NUMAInfo]:
    """Every NUMA node with a ``meminfo``, by node id; none without NUMA support."""
    node_root = os.path.join(sys_root, "devices", "system", "node")
    infos = []
    for name in os.listdir(node_root) if os.path.isdir(node_root) else []:
        m = _NODE_DIR.match(name)
        if not m:
            continue
        node_dir = os.path.join(node_root, name)
        try:
            with open(os.path.join(node_dir, "meminfo")) as f:
                total = _MEM_TOTAL.search(f.read())
        except OSError:
            continue
        if total is None:
            continue
        infos.append(NUMAInfo(int(m.group(1)), int(total.group(1)) * 1024,
                              _hugepages_bytes(node_dir, 2048),
                              _hugepages_bytes(node_dir, 1048576)))
    return sorted(infos, key=lambda i: i.node_id)


class NodeInfoCollector:
    """Writes KV only; runs on ``--collect-node-cpu-info-interval``."""

    name = "NodeInfoCollector"

    def __init__(self, cache: MetricCache, sys_root: str = "/sys",
                 proc_root: str = "/proc") -> None:
        self.cache = cache
        self.sys_root = sys_root
        self.proc_root = proc_root

    def collect(self, now: float) -> list[MetricSample]:
        topo = read_cpu_topology(self.sys_root)
        topo.basic_info = read_cpu_basic_info(self.sys_root, self.proc_root, topo)
        self.cache.set(mt.NODE_CPU_INFO_KEY, topo)
        self.cache.set(mt.NODE_NUMA_INFO_KEY, read_numa_info(self.sys_root))
        return []
