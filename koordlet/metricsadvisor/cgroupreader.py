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
import resource
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

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

def _read(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, 65536)
    finally:
        os.close(fd)


def _open_files_limit() -> int:
    """How many files a reader keeps open: a quarter of the soft RLIMIT_NOFILE, at most 4096,
    so sockets and everything else of the process keep room."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return 4096 if soft == resource.RLIM_INFINITY else max(0, min(4096, soft // 4))


@dataclass(slots=True)
class OpenFiles:
    """Cgroup files kept open between collection ticks and re-read with ``pread`` at offset 0.

    A cgroup file (like a tmpfs file rewritten in place) yields its current content on every
    read from offset 0, so the per-tick ``open``/``close`` pair of each pod and container file
    is saved: on this kind of machine that is 2/3 of a small file's read cost. A descriptor
    whose read fails (the cgroup was removed: ENODEV) is closed and the path opened anew once,
    so a vanished cgroup raises as an uncached read would. ``sweep`` closes the descriptors
    not read since the previous sweep; past ``limit`` open files, reads fall back to
    open/read/close.
    """

    limit: int = field(default_factory=_open_files_limit)
    _fds: dict[str, int] = field(default_factory=dict)  # read since the last sweep
    _idle: dict[str, int] = field(default_factory=dict)  # not yet: closed at the next sweep

    def read(self, path: str) -> bytes:
        fd = self._fds.get(path)
        if fd is None:
            fd = self._idle.pop(path, None)
            if fd is not None:
                self._fds[path] = fd
        if fd is not None:
            try:
                return os.pread(fd, 65536, 0)
            except OSError:
                del self._fds[path]
                os.close(fd)
        if len(self) >= self.limit:
            return _read(path)
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            data = os.pread(fd, 65536, 0)
        except OSError:
            os.close(fd)
            raise
        self._fds[path] = fd
        return data

    def sweep(self) -> None:
        for fd in self._idle.values():
            os.close(fd)
        self._idle, self._fds = self._fds, {}

    def close(self) -> None:
        for fd in (*self._fds.values(), *self._idle.values()):
            os.close(fd)
        self._fds.clear()
        self._idle.clear()

    def __contains__(self, path: str) -> bool:
        return path in self._fds or path in self._idle

    def __len__(self) -> int:
        return len(self._fds) + len(self._idle)


@dataclass(slots=True, frozen=True)
class _StatKeys:
    """The keys wanted from a ``key value`` stat file, in the order the kernel prints them,
    with their search strings built once: stat files are parsed for every cgroup every tick."""

    names: list[bytes]
    needles: tuple[bytes, ...]  # b"\n<key> "

    @classmethod
    def of(cls, *names: bytes) -> _StatKeys:
        return cls(list(names), tuple(b"\n" + n + b" " for n in names))


# In the order the kernel prints them (v1 and v2 alike).
_V1_MEMORY = _StatKeys.of(b"total_inactive_anon", b"total_active_anon", b"total_inactive_file",
                          b"total_active_file", b"total_unevictable")
_V2_MEMORY = _StatKeys.of(b"inactive_anon", b"active_anon", b"inactive_file", b"active_file",
                          b"unevictable")
_V2_CPU_USAGE = _StatKeys.of(b"usage_usec")


def _stat_values(data: bytes, keys: _StatKeys) -> list[int]:
    """Values of ``key value`` lines; every key is required (upstream errors otherwise).

    The kernel prints the wanted keys as consecutive lines, so the usual case is one search
    for the first (from the end: v1's ``total_*`` lines close the file) and one split of the
    lines after it; any other layout falls back to a search per key.
    """
    n = len(keys.names)
    first = data.rfind(keys.needles[0])  # -1 when absent or on the first line: all of data
    fields = data[first + 1 :].split(None, 2 * n)
    if fields[0 : 2 * n : 2] == keys.names:
        return list(map(int, fields[1 : 2 * n : 2]))
    out = []
    for key, needle in zip(keys.names, keys.needles):
        if data.startswith(needle[1:]):
            i = len(needle) - 1
        else:
            i = data.find(needle)
            if i < 0:
                raise ValueError(f"missing {key.decode()} in stat file")
            i += len(needle)
        j = data.find(b"\n", i)
        out.append(int(data[i : j if j >= 0 else None]))
    return out


@dataclass(slots=True)
class MemoryStat:
    inactive_anon: int
    active_anon: int
    inactive_file: int
    active_file: int
    unevictable: int

    def usage(self) -> int:
        """Upstream ``MemoryStatRaw.Usage``: inactive_anon + active_anon + unevictable."""
        return self.inactive_anon + self.active_anon + self.unevictable

    def usage_with_page_cache(self) -> int:
        return self.usage() + self.active_file + self.inactive_file


class CgroupReader:
    """Reads the per-tick files through ``OpenFiles``; the owner calls ``sweep`` now and then
    (the pod collector does, at its GC period) so gone pods' files are closed."""

    def __init__(self, root: str = "/sys/fs/cgroup", version: int = CGROUP_V1) -> None:
        self.root = root
        self._root = root.rstrip("/")
        self.version = version
        self.files = OpenFiles()
        # cgroup dir -> (CPU usage file, memory.stat): built once, not twice per cgroup per tick
        self._usage_paths: dict[str, tuple[str, str]] = {}

    def sweep(self) -> None:
        self.files.sweep()
        self._usage_paths.clear()

    def path(self, subsystem: str, cgroup_dir: str, filename: str) -> str:
        if self.version == CGROUP_V2:
            return f"{self._root}/{cgroup_dir}/{filename}"
        return f"{self._root}/{subsystem}/{cgroup_dir}/{filename}"

    def _paths(self, cgroup_dir: str) -> tuple[str, str]:
        paths = self._usage_paths.get(cgroup_dir)
        if paths is None:
            cpu = self.path("cpu", cgroup_dir, "cpu.stat") if self.version == CGROUP_V2 \
                else self.path("cpuacct", cgroup_dir, "cpuacct.usage")
            paths = self._usage_paths[cgroup_dir] = (
                cpu, self.path("memory", cgroup_dir, "memory.stat"))
        return paths

    def cpu_usage_ns(self, cgroup_dir: str) -> int:
        """v1 ``cpuacct.usage`` (ns); v2 ``cpu.stat`` ``usage_usec`` × 1000."""
        data = self.files.read(self._paths(cgroup_dir)[0])
        if self.version == CGROUP_V2:
            return _stat_values(data, _V2_CPU_USAGE)[0] * 1000
        return int(data)

    def memory_stat(self, cgroup_dir: str) -> MemoryStat:
        data = self.files.read(self._paths(cgroup_dir)[1])
        return MemoryStat(*_stat_values(data, _V2_MEMORY if self.version == CGROUP_V2
                                        else _V1_MEMORY))

    def pressure(self, cgroup_dir: str, resource: str) -> str:
        """``cpu``/``memory``/``io.pressure``; on v1 they live in the cpuacct subsystem."""
        return _read(self.path("cpuacct", cgroup_dir, f"{resource}.pressure")).decode()
