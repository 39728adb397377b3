"""Reads pod and container cgroup files for v1 and v2 (upstream
``pkg/koordlet/resourceexecutor/reader.go``, ``CgroupReader``; file table in
``koordlet/util/system/cgroup_resource.go``).

Callers pass cgroup directories relative to the root (``kubepods.slice/...`` or
``kubepods/burstable/pod<uid>``): on v1 the subsystem directory is inserted
(``<root>/<subsystem>/<dir>/<file>``), on v2 the file sits directly under ``<root>/<dir>``.
Where pods live (driver, QoS dir) is the caller's business, so systemd and cgroupfs layouts read
the same way.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass

CGROUP_V1 = 1
CGROUP_V2 = 2


@dataclass(slots=True, frozen=True)
class ContainerCgroup:
    container_id: str  # full status form, e.g. containerd://<id>
    cgroup_dir: str


@dataclass(slots=True, frozen=True)
class PodCgroup:
    pod_uid: str
    cgroup_dir: str
    containers: tuple[ContainerCgroup, ...] = ()


# Where the pods are: statesinformer and util/system will provide this; collectors only call it.
PodSource = Callable[[], Iterable[PodCgroup]]

_V1_MEMORY_KEYS = (
    b"total_inactive_anon",
    b"total_active_anon",
    b"total_unevictable",
    b"total_active_file",
    b"total_inactive_file",
)
_V2_MEMORY_KEYS = (
    b"inactive_anon",
    b"active_anon",
    b"unevictable",
    b"active_file",
    b"inactive_file",
)


def _read(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 65536)
    finally:
        os.close(fd)


def _stat_values(data: bytes, keys: tuple[bytes, ...]) -> list[int]:
    """Values of ``key value`` lines; every key is required (upstream errors otherwise)."""
    data = b"\n" + data
    out = []
    for key in keys:
        i = data.find(b"\n" + key + b" ")
        if i < 0:
            raise ValueError(f"missing {key.decode()} in stat file")
        i += len(key) + 2
        j = data.find(b"\n", i)
        out.append(int(data[i : j if j >= 0 else None]))
    return out


@dataclass(slots=True)
class MemoryStat:
    inactive_anon: int
    active_anon: int
    unevictable: int
    active_file: int
    inactive_file: int

    def usage(self) -> int:
        """Upstream ``MemoryStatRaw.Usage``: inactive_anon + active_anon + unevictable."""
        return self.inactive_anon + self.active_anon + self.unevictable

    def usage_with_page_cache(self) -> int:
        return self.usage() + self.active_file + self.inactive_file


class CgroupReader:
    def __init__(self, root: str = "/sys/fs/cgroup", version: int = CGROUP_V1) -> None:
        self.root = root
        self.version = version

    def path(self, subsystem: str, cgroup_dir: str, filename: str) -> str:
        if self.version == CGROUP_V2:
            return os.path.join(self.root, cgroup_dir, filename)
        return os.path.join(self.root, subsystem, cgroup_dir, filename)

    def cpu_usage_ns(self, cgroup_dir: str) -> int:
        """v1 ``cpuacct.usage`` (ns); v2 ``cpu.stat`` ``usage_usec`` × 1000."""
        if self.version == CGROUP_V2:
            data = _read(self.path("cpu", cgroup_dir, "cpu.stat"))
            return _stat_values(data, (b"usage_usec",))[0] * 1000
        return int(_read(self.path("cpuacct", cgroup_dir, "cpuacct.usage")))

    def memory_stat(self, cgroup_dir: str) -> MemoryStat:
        data = _read(self.path("memory", cgroup_dir, "memory.stat"))
        keys = _V2_MEMORY_KEYS if self.version == CGROUP_V2 else _V1_MEMORY_KEYS
        return MemoryStat(*_stat_values(data, keys))

    def pressure(self, cgroup_dir: str, resource: str) -> str:
        """``cpu``/``memory``/``io.pressure``; on v1 they live in the cpuacct subsystem."""
        return _read(self.path("cpuacct", cgroup_dir, f"{resource}.pressure")).decode()
