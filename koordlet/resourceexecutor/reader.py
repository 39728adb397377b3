"""Cgroup reads in v1 units on either version: upstream `pkg/koordlet/resourceexecutor/reader.go`.

Quota and limits use −1 for unlimited (v2 `max`, v1 memory limits at the page-rounded maximum),
shares come back from `cpu.weight`, usage is nanoseconds, and a v2 cpuset is the effective one.
"""

from __future__ import annotations

from koordlet.util.system.cgroup import cgroup_file_read
from koordlet.util.system.cgroup2 import convert_cpu_weight_to_shares, parse_cpu_max
from koordlet.util.system.cgroup_env import CgroupEnv
from koordlet.util.system.cpuset import parse_cpuset

# v1 reports "no limit" as LONG_MAX rounded down to the page size.
_V1_MEMORY_UNLIMITED = 0x7FFFFFFFFFFFF000


class CgroupReader:
    __slots__ = ("env",)

    def __init__(self, env: CgroupEnv) -> None:
        self.env = env

    def _read(self, resource_type: str, parent_dir: str) -> str:
        return cgroup_file_read(self.env.path(resource_type, parent_dir))

    def read_cpu_quota(self, parent_dir: str) -> int:
        content = self._read("cpu.cfs_quota_us", parent_dir)
        return parse_cpu_max(content)[0] if self.env.v2 else int(content)

    def read_cpu_period(self, parent_dir: str) -> int:
        content = self._read("cpu.cfs_period_us", parent_dir)
        return parse_cpu_max(content)[1] if self.env.v2 else int(content)

    def read_cpu_shares(self, parent_dir: str) -> int:
        content = int(self._read("cpu.shares", parent_dir))
        return convert_cpu_weight_to_shares(content) if self.env.v2 else content

    def read_cpuset_cpus(self, parent_dir: str) -> frozenset[int]:
        resource_type = "cpuset.cpus.effective" if self.env.v2 else "cpuset.cpus"
        return parse_cpuset(self._read(resource_type, parent_dir))

    def read_memory_limit(self, parent_dir: str) -> int:
        content = self._read("memory.limit_in_bytes", parent_dir)
        if content == "max":
            return -1
        value = int(content)
        return -1 if value >= _V1_MEMORY_UNLIMITED else value

    def read_cpu_usage(self, parent_dir: str) -> int:
        """Cumulative CPU time in nanoseconds (v2: `usage_usec` × 1000)."""
        content = self._read("cpuacct.usage", parent_dir)
        if not self.env.v2:
            return int(content)
        for line in content.splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) * 1000
        raise ValueError(f"no usage_usec in {self.env.path('cpuacct.usage', parent_dir)}")
