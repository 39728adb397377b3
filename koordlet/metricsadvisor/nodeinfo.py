"""NodeInfoCollector (upstream ``pkg/koordlet/metricsadvisor/collectors/nodeinfo`` and
``koordlet/util/cpuinfo.go``): CPU topology — sockets, NUMA nodes, cores and cache ids — read
from ``/sys/devices/system/cpu`` and ``/sys/devices/system/node``, stored in the cache's KV map
under ``node_cpu_info``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

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
    topo = CPUTopology()
    for name in os.listdir(cpu_root):
        m = _CPU_DIR.match(name)
        if not m:
            continue
        cpu_dir = os.path.join(cpu_root, name)
        cpu_id = int(m.group(1))
        if _read_int(os.path.join(cpu_dir, "online"), 1) == 0:
            continue  # offline CPUs have no topology
        l1l2, l3 = _cache_ids(cpu_dir, cpu_id)
        topo.processors.append(
            ProcessorInfo(
                cpu_id=cpu_id,
                core_id=_read_int(os.path.join(cpu_dir, "topology", "core_id"), cpu_id),
                socket_id=_read_int(os.path.join(cpu_dir, "topology", "physical_package_id"), 0),
                node_id=cpu_node.get(cpu_id, 0),
                l1dl1il2=l1l2,
                l3=l3,
            )
        )
    topo.processors.sort(key=lambda p: p.cpu_id)
    return topo


class NodeInfoCollector:
    """Writes KV only; runs on ``--collect-node-cpu-info-interval``."""

    name = "NodeInfoCollector"

    def __init__(self, cache: MetricCache, sys_root: str = "/sys") -> None:
        self.cache = cache
        self.sys_root = sys_root

    def collect(self, now: float) -> list[MetricSample]:
        self.cache.set(mt.NODE_CPU_INFO_KEY, read_cpu_topology(self.sys_root))
        return []
