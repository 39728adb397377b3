"""Resource updaters: upstream `pkg/koordlet/resourceexecutor/updater.go` and `cgroup.go`.

A `CgroupUpdater` is one value for one cgroup file. `update` writes it if different
(`cgroupFileWriteIfDifferent`: supported? valid? dir exists? current value differs? then
write); `merge_update` is the loosen-only half of `LeveledUpdateBatch` for the resources that
have one (the registrations on upstream's `DefaultCgroupUpdaterFactory`, in `updater.go`'s
`init`): quota and memory.min/low/high only grow, a cpuset only gains CPUs. The per-device
blkio files compare one device's line, not the whole file (upstream `NewBlkIOResourceUpdater`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from koordlet.util.system.cgroup import (
    CGROUP_MAX,
    MAX_INT64,
    CgroupDirNotExistError,
    InvalidValueError,
    MalformedCgroupFileError,
    cgroup_file_read,
    cgroup_file_write,
)
from koordlet.util.system.cgroup2 import parse_cpu_max, value_for_v2
from koordlet.util.system.cgroup_env import CgroupEnv
from koordlet.util.system.cgroup_resource import CgroupResource
from koordlet.util.system.cpuset import format_cpuset, parse_cpuset

T = TypeVar("T")


@dataclass(slots=True)
class CgroupUpdater:
    env: CgroupEnv
    resource: CgroupResource
    parent_dir: str  # relative layout dir, e.g. env.pod_dir(...)
    value: str  # in v1 units; translated for v2 on write
    # The absolute file path: the cache key and what errors name (set once, on creation).
    path: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.path = self.env.file_path(self.resource, self.parent_dir)

    def _check(self, value: str) -> None:
        self.env.check_supported(self.resource, self.parent_dir)
        reason = self.resource.validate(value)
        if reason is not None:
            raise InvalidValueError(self.path, value, reason)
        if not os.path.exists(self.path):
            raise CgroupDirNotExistError(self.path)

    def _compare(self, compare: Callable[[str], T]) -> T:
        """``compare`` of the file's value in v1 terms (v2 `cpu.max` → quota); content not in
        the kernel's shape is a `MalformedCgroupFileError`, not a write over it."""
        content = cgroup_file_read(self.path)
        try:
            if self.env.v2 and self.resource.type == "cpu.cfs_quota_us":
                return compare(str(parse_cpu_max(content)[0]))
            return compare(content)
        except ValueError as e:
            raise MalformedCgroupFileError(self.path, content, str(e)) from None

    def write_if_different(self, value: str) -> bool:
        """True when written; raises `CgroupError` subclasses naming the file and value."""
        self._check(value)
        if self._compare(lambda current: _equal(self.resource.type, current, value)):
            return False
        cgroup_file_write(
            self.path, value_for_v2(self.resource.type, value) if self.env.v2 else value
        )
        return True

    def update(self) -> bool:
        return self.write_if_different(self.value)

    def merge_update(self) -> bool | None:
        """Loosen-only write; None when this resource has no merge (write it exactly instead)."""
        merge = _MERGES.get(self.resource.type)
        if merge is None:
            return None
        self._check(self.value)
        merged = self._compare(lambda current: merge(current, self.value))
        return False if merged is None else self.write_if_different(merged)


def _as_unbounded_int(value: str) -> int:
    """−1 and `max` are unlimited: larger than any number."""
    text = value.strip()
    if text in ("-1", CGROUP_MAX):
        return MAX_INT64
    return int(text.split()[0])


# Per-device blkio files list one line per configured device: a value is one device's entry.
_BLKIO_DEVICE_FILES = frozenset({
    "blkio.throttle.read_iops_device", "blkio.throttle.write_iops_device",
    "blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device", "blkio.cost.weight",
})
_BLKIO_ROOT_FILES = frozenset({"blkio.cost.qos", "blkio.cost.model"})


def _blkio_entry_applied(resource_type: str, current: str, value: str) -> bool:
    """Upstream `CheckIfBlkQOSNeedUpdate` / `CheckIfBlkRootConfigNeedUpdate`, negated: the
    device's entry is already the file's. A throttle of 0 removes the device's line, so
    `<dev> 0` is applied when the file has no line for the device."""
    lines = [line.strip() for line in current.splitlines()]
    if resource_type in _BLKIO_DEVICE_FILES:
        device, _, amount = value.partition(" ")
        if amount.strip() == "0":
            return not any(line.split(" ", 1)[0] == device for line in lines)
    return value.strip() in lines


def _equal(resource_type: str, current: str, value: str) -> bool:
    if resource_type == "cpuset.cpus":
        return parse_cpuset(current) == parse_cpuset(value)
    if resource_type in _BLKIO_DEVICE_FILES or resource_type in _BLKIO_ROOT_FILES:
        return _blkio_entry_applied(resource_type, current, value)
    if current == value:
        return True
    # Writing MaxInt64 over `max` (or −1 over `max` on v2 limits) changes nothing.
    unlimited = {CGROUP_MAX, str(MAX_INT64)}
    if resource_type in ("cpu.cfs_quota_us", "memory.limit_in_bytes"):
        unlimited.add("-1")
    return current.strip() in unlimited and value.strip() in unlimited


def _merge_larger(current: str, value: str) -> str | None:
    return value if _as_unbounded_int(value) > _as_unbounded_int(current) else None


def _merge_cpuset(current: str, value: str) -> str | None:
    old, new = parse_cpuset(current), parse_cpuset(value)
    return None if new <= old else format_cpuset(old | new)


_MERGES: dict[str, Callable[[str, str], str | None]] = {
    "cpu.cfs_quota_us": _merge_larger,
    "memory.min": _merge_larger,
    "memory.low": _merge_larger,
    "memory.high": _merge_larger,
    "cpuset.cpus": _merge_cpuset,
}


def new_cgroup_updater(
    env: CgroupEnv, resource_type: str, parent_dir: str, value: str | int
) -> CgroupUpdater:
    """Upstream `DefaultCgroupUpdaterFactory.New`: an unknown type is `ResourceUnsupportedError`."""
    return CgroupUpdater(env, env.resource(resource_type), parent_dir, str(value))
