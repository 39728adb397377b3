"""Node CPU and memory from procfs (upstream ``pkg/koordlet/util/system/proc.go`` and
``koordlet/util/meminfo.go``, as used by ``metricsadvisor/collectors/noderesource``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

# Jiffies per second (`getconf CLK_TCK`), as upstream reads it.
CLK_TCK = os.sysconf("SC_CLK_TCK")


def read_cpu_ticks(proc_root: str = "/proc") -> int:
    """Busy ticks of the ``cpu`` line: user + nice + system + irq + softirq (upstream).

    idle, iowait, steal and guest are excluded.
    """
    with open(os.path.join(proc_root, "stat"), "rb") as f:
        for line in f:
            if line.startswith(b"cpu "):
                fields = line.split()
                return sum(int(fields[i]) for i in (1, 2, 3, 6, 7))
    raise ValueError("no cpu line in stat")


@dataclass(slots=True)
class MemInfo:
    """The /proc/meminfo fields koordlet uses, in KiB as the file states them."""

    mem_total: int = 0
    mem_free: int = 0
    mem_available: int = 0

    def mem_usage_bytes(self) -> int:
        """Upstream ``MemInfo.MemUsageBytes``: (MemTotal − MemAvailable) × 1024."""
        return (self.mem_total - self.mem_available) * 1024

    def mem_usage_with_page_cache_bytes(self) -> int:
        """(MemTotal − MemFree) × 1024."""
        return (self.mem_total - self.mem_free) * 1024


_MEMINFO_KEYS = {
    b"MemTotal:": "mem_total",
    b"MemFree:": "mem_free",
    b"MemAvailable:": "mem_available",
}


def read_meminfo(proc_root: str = "/proc") -> MemInfo:
    info = MemInfo()
    with open(os.path.join(proc_root, "meminfo"), "rb") as f:
        for line in f:
            parts = line.split()
            attr = _MEMINFO_KEYS.get(parts[0]) if parts else None
            if attr:
                setattr(info, attr, int(parts[1]))
    return info
