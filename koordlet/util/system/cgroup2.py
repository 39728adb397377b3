"""cgroup v2 value translations: upstream `pkg/koordlet/util/system/cgroup2.go`.

koordlet speaks v1 values everywhere (quota in µs with −1 for unlimited, shares, bytes with −1);
these functions turn them into what the v2 files take and back (the v2 file names are in
`cgroup_resource.py`, upstream `cgroup_resource.go`).
"""

from __future__ import annotations

from koordlet.util.system.cgroup import (
    CFS_BASE_PERIOD,
    CGROUP_MAX,
    CPU_SHARES_MAX,
    CPU_SHARES_MIN,
)

CPU_WEIGHT_MIN = 1
CPU_WEIGHT_MAX = 10000


def convert_cpu_shares_to_weight(shares: int) -> int:
    weight = 1 + ((shares - CPU_SHARES_MIN) * 9999) // (CPU_SHARES_MAX - CPU_SHARES_MIN)
    return min(max(weight, CPU_WEIGHT_MIN), CPU_WEIGHT_MAX)


def convert_cpu_weight_to_shares(weight: int) -> int:
    shares = (weight - 1) * (CPU_SHARES_MAX - CPU_SHARES_MIN) // 9999 + CPU_SHARES_MIN
    return min(max(shares, CPU_SHARES_MIN), CPU_SHARES_MAX)


def unlimited_to_max(value: str) -> str:
    """`-1` (v1 unlimited) → `max` for `cpu.max` and `memory.max`."""
    return CGROUP_MAX if value.strip() == "-1" else value


def parse_cpu_max(content: str) -> tuple[int, int]:
    """`"<quota|max> [period]"` → (quota with max as −1, period). The kernel shows both fields,
    but takes the quota alone on write (keeping the period), which is what a file written so
    outside the kernel holds: its period is the default one. Anything else is a ValueError."""
    fields = content.split()
    if len(fields) not in (1, 2):
        raise ValueError(f"cpu.max content {content!r} is not '<quota> <period>'")
    try:
        quota = -1 if fields[0] == CGROUP_MAX else int(fields[0])
        period = int(fields[1]) if len(fields) == 2 else CFS_BASE_PERIOD
    except ValueError:
        raise ValueError(f"cpu.max content {content!r} is not '<quota> <period>'") from None
    return quota, period


def value_for_v2(resource_type: str, value: str) -> str:
    """The string to write into the v2 file of the v1 `resource_type` for the v1 `value`."""
    if resource_type == "cpu.shares":
        return str(convert_cpu_shares_to_weight(int(value)))
    if resource_type in ("cpu.cfs_quota_us", "memory.limit_in_bytes"):
        return unlimited_to_max(value)
    return value
