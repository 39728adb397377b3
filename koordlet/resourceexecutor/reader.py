"""Cgroup reads in v1 units on either version: upstream `pkg/koordlet/resourceexecutor/reader.go`
(`CgroupReader`, its v1 and v2 implementations in one class; the files are those of
`pkg/koordlet/util/system/cgroup_resource.go`).

Dirs are relative to the hierarchy's root and prefix, as `CgroupEnv`'s (`kubepods.slice/...` or
`kubepods/burstable/pod<uid>`): on v1 the subsystem dir is inserted, on v2 the file sits directly
under the dir. Where pods live (driver, QoS dir) is the caller's business, so systemd and
cgroupfs layouts read the same way. Quota and limits use −1 for unlimited (v2 `max`, v1 memory
limits at the page-rounded maximum), shares come back from `cpu.weight`, usage is nanoseconds,
and a v2 cpuset is the effective one. A file whose content is not in the kernel's shape (a
garbled ``cpu.max``) raises ``MalformedCgroupFileError`` (a ValueError) naming it; a ``cpu.max``
holding the quota alone (``max``) reads with the default period.

CPU usage and `memory.stat` are read for every pod and container on each collection tick, so
those files stay open between reads (`OpenFiles`) and their parsing avoids per-line work; a read
of a gone cgroup raises `OSError` there. The other reads open the file each time and raise
`CgroupDirNotExistError` for a missing one, as the executor's writes do.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from koordlet.util.system.cgroup import CGROUP_MAX, MalformedCgroupFileError, cgroup_file_read
from koordlet.util.system.cgroup2 import convert_cpu_weight_to_shares, parse_cpu_max
from koordlet.util.system.cgroup_resource import MAX_MEMO_PATHS, get_resource
from koordlet.util.system.cpuset import parse_cpuset

if TYPE_CHECKING:
    # Only a type here: importing it would load the api models into everything that reads
    # cgroups (koordlet.bench measures the collectors' memory without them).
    from koordlet.util.system.cgroup_env import CgroupEnv

CGROUP_V1 = 1
CGROUP_V2 = 2

T = TypeVar("T")

# v1 reports "no limit" as LONG_MAX rounded down to the page size.
_V1_MEMORY_UNLIMITED = 0x7FFFFFFFFFFFF000


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
    """The ``memory.stat`` counters koordlet uses (upstream ``MemoryStatRaw``), in bytes."""

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
    """Reads one cgroup hierarchy. Whoever reads CPU usage or ``memory.stat`` periodically calls
    ``sweep`` now and then (the pod collector does, at its GC period) so that the files of gone
    cgroups are closed."""

    __slots__ = ("root", "v2", "prefix", "files", "_usage_paths", "_paths")
    MAX_MEMO_PATHS = MAX_MEMO_PATHS

    def __init__(self, root: str, version: int = CGROUP_V1, prefix: str = "") -> None:
        self.root = root
        self.v2 = version == CGROUP_V2
        self.prefix = prefix
        self.files = OpenFiles()
        # cgroup dir -> (CPU usage file, memory.stat): built once, not twice per cgroup per tick
        self._usage_paths: dict[str, tuple[str, str]] = {}
        # (resource type, cgroup dir) -> path: the qosmanager reads the same files every round
        self._paths: dict[tuple[str, str], str] = {}

    @classmethod
    def for_env(cls, env: CgroupEnv) -> CgroupReader:
        return cls(env.root, CGROUP_V2 if env.v2 else CGROUP_V1, env.prefix)

    def sweep(self) -> None:
        self.files.sweep()
        self._usage_paths.clear()
        self._paths.clear()

    def _path(self, resource_type: str, parent_dir: str) -> str:
        key = (resource_type, parent_dir)
        path = self._paths.get(key)
        if path is None:
            if len(self._paths) >= self.MAX_MEMO_PATHS:
                self._paths.clear()
            path = self._paths[key] = get_resource(resource_type, self.v2).path(
                self.root, self.prefix, parent_dir)
        return path

    def _usage_files(self, parent_dir: str) -> tuple[str, str]:
        paths = self._usage_paths.get(parent_dir)
        if paths is None:
            paths = self._usage_paths[parent_dir] = (
                self._path("cpuacct.usage", parent_dir), self._path("memory.stat", parent_dir))
        return paths

    def _parse(self, resource_type: str, parent_dir: str, parse: Callable[[str], T]) -> T:
        """The file's content through ``parse``; content ``parse`` refuses (ValueError) is a
        ``MalformedCgroupFileError`` naming the file."""
        path = self._path(resource_type, parent_dir)
        content = cgroup_file_read(path)
        try:
            return parse(content)
        except ValueError as e:
            raise MalformedCgroupFileError(path, content, str(e)) from None

    def read_cpu_usage(self, parent_dir: str) -> int:
        """Cumulative CPU time in nanoseconds: v1 ``cpuacct.usage``, v2 ``cpu.stat``
        ``usage_usec`` × 1000."""
        path = self._usage_files(parent_dir)[0]
        data = self.files.read(path)
        try:
            if self.v2:
                return _stat_values(data, _V2_CPU_USAGE)[0] * 1000
            return int(data)
        except ValueError as e:
            raise MalformedCgroupFileError(path, data.decode(errors="replace"), str(e)) from None

    def read_memory_stat(self, parent_dir: str) -> MemoryStat:
        path = self._usage_files(parent_dir)[1]
        data = self.files.read(path)
        try:
            return MemoryStat(*_stat_values(data, _V2_MEMORY if self.v2 else _V1_MEMORY))
        except ValueError as e:
            raise MalformedCgroupFileError(path, data.decode(errors="replace"), str(e)) from None

    def read_memory_usage(self, parent_dir: str) -> int:
        """Memory charged to the cgroup, page cache included, in bytes: v1
        ``memory.usage_in_bytes``, v2 ``memory.current`` (upstream ``ReadMemoryUsage``)."""
        return int(self.files.read(self._path("memory.usage_in_bytes", parent_dir)))

    def read_pressure(self, parent_dir: str, resource_name: str) -> str:
        """``cpu``/``memory``/``io.pressure``; on v1 they live in the cpuacct subsystem."""
        return _read(self._path(f"{resource_name}.pressure", parent_dir)).decode()

    def read_cpu_quota(self, parent_dir: str) -> int:
        """−1 for unlimited (v2 ``max``)."""
        return self._parse("cpu.cfs_quota_us", parent_dir,
                           lambda c: parse_cpu_max(c)[0] if self.v2 else int(c))

    def read_cpu_period(self, parent_dir: str) -> int:
        return self._parse("cpu.cfs_period_us", parent_dir,
                           lambda c: parse_cpu_max(c)[1] if self.v2 else int(c))

    def read_cpu_shares(self, parent_dir: str) -> int:
        return self._parse("cpu.shares", parent_dir,
                           lambda c: convert_cpu_weight_to_shares(int(c)) if self.v2 else int(c))

    def read_cpuset_cpus(self, parent_dir: str) -> frozenset[int]:
        resource_type = "cpuset.cpus.effective" if self.v2 else "cpuset.cpus"
        return self._parse(resource_type, parent_dir, parse_cpuset)

    def read_memory_limit(self, parent_dir: str) -> int:
        return self._parse("memory.limit_in_bytes", parent_dir, _memory_limit)

    def read_cpu_tasks(self, parent_dir: str) -> list[int]:
        """Thread ids in the cgroup: v1 ``cpu/tasks``, v2 ``cgroup.threads`` (upstream
        ``ReadCPUTasks``)."""
        return self._parse("tasks", parent_dir, lambda c: [int(line) for line in c.split()])

    def read_cpu_procs(self, parent_dir: str) -> list[int]:
        """Process (thread-group) ids in the cgroup: ``cgroup.procs`` (upstream
        ``ReadCPUProcs``)."""
        return self._parse("cgroup.procs", parent_dir,
                           lambda c: [int(line) for line in c.split()])


def _memory_limit(content: str) -> int:
    if content == CGROUP_MAX:
        return -1
    value = int(content)
    return -1 if value >= _V1_MEMORY_UNLIMITED else value
