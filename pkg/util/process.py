"""This process's resident memory, as the benchmarks report it (``/proc/self/status``)."""

from __future__ import annotations


def rss_mib() -> float:
    """VmRSS in MiB; 0 where /proc has no such line."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0
