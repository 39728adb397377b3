"""The registry of cgroup files: upstream `pkg/koordlet/util/system/cgroup_resource.go`.

Every file is a *resource* keyed by its v1 file name (`cpu.cfs_quota_us`), with its subsystem
dir on v1, its file name on v2, a validator for written values and a "supported" check
(upstream's `SupportedIfFileExists`, `SupportedIfFileExistsInKubepods`). A resource missing
from a version's registry (blkio, `memory.idle_page_stats` on v2) cannot be used on that
version.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from koordlet.util.system.cgroup import CGROUP_MAX, MAX_INT64, ResourceUnsupportedError
from koordlet.util.system.cpuset import parse_cpuset

CPU = "cpu"
CPUSET = "cpuset"
CPUACCT = "cpuacct"
MEMORY = "memory"
BLKIO = "blkio"
NET_CLS = "net_cls"

# Bounds a memo of paths (`CgroupEnv`'s, `CgroupReader`'s): pods come and go and their dirs'
# paths are not dropped one by one, so past this many the memo starts afresh. A node of a few
# hundred pods needs ~10k.
MAX_MEMO_PATHS = 1 << 16


class Validator(Protocol):
    def validate(self, value: str) -> str | None:
        """None when valid, else why not."""


@dataclass(frozen=True, slots=True)
class RangeValidator:
    """An integer in [min, max]; `max` reads as MaxInt64 (every upstream validator does this)."""

    min: int
    max: int

    def validate(self, value: str) -> str | None:
        text = value.strip()
        try:
            number = MAX_INT64 if text == CGROUP_MAX else int(text)
        except ValueError:
            return "not an integer"
        if not self.min <= number <= self.max:
            return f"out of range [{self.min}, {self.max}]"
        return None


@dataclass(frozen=True, slots=True)
class CPUSetValidator:
    def validate(self, value: str) -> str | None:
        try:
            parse_cpuset(value)
        except ValueError:
            return "not a cpu list"
        return None


_HEX = re.compile(r"0[xX][0-9a-fA-F]+")
_DEVICE_NUMBER = re.compile(r"[0-9]+:[0-9]+")


@dataclass(frozen=True, slots=True)
class NetClsClassIDValidator:
    """Upstream's bounds: hex up to 0x99999999 or decimal up to 41231686041."""

    def validate(self, value: str) -> str | None:
        text = value.strip()
        if _HEX.fullmatch(text):
            return None if int(text, 16) <= 0x99999999 else "hex classid above 0x99999999"
        if text.isdigit():
            return None if int(text) <= 41231686041 else "classid above 41231686041"
        return "not a hex or decimal classid"


@dataclass(frozen=True, slots=True)
class BlkIODeviceValidator:
    """A per-device blkio entry `<major:minor> <n>` with n in [min, max] (upstream
    `BlkIORangeValidator` on the throttle and weight files)."""

    min: int
    max: int

    def validate(self, value: str) -> str | None:
        fields = value.split()
        if len(fields) != 2 or not _DEVICE_NUMBER.fullmatch(fields[0]):
            return "not a '<major:minor> <value>' entry"
        return RangeValidator(self.min, self.max).validate(fields[1])


class SupportCheck(Enum):
    ALWAYS = "always"
    # The file exists in the target dir (optional kernel features such as cpu.cfs_burst_us).
    FILE_EXISTS = "file exists"
    # The file exists in the kubepods root dir; checked once per CgroupEnv (Anolis-only files).
    FILE_EXISTS_IN_KUBEPODS = "file exists in kubepods"


@dataclass(frozen=True, slots=True)
class CgroupResource:
    type: str  # the v1 file name, the key of both registries
    file_name: str  # the file in this cgroup version
    subsystem: str  # the v1 subsystem dir; "" on v2
    validator: Validator | None = None
    check: SupportCheck = SupportCheck.ALWAYS

    def validate(self, value: str) -> str | None:
        return None if self.validator is None else self.validator.validate(value)

    def dir_path(self, root: str, prefix: str, parent_dir: str) -> str:
        """Absolute dir of `parent_dir` (a relative layout dir below `prefix`) that holds this
        file: under the subsystem dir on v1, directly under `root` on v2."""
        return os.path.join(root, *(p for p in (self.subsystem, prefix, parent_dir) if p))

    def path(self, root: str, prefix: str, parent_dir: str) -> str:
        """Upstream `Resource.Path`, with the root (and test prefix) passed instead of global."""
        return os.path.join(self.dir_path(root, prefix, parent_dir), self.file_name)


def _v1(
    subsystem: str,
    name: str,
    validator: Validator | None = None,
    check: SupportCheck = SupportCheck.ALWAYS,
) -> CgroupResource:
    return CgroupResource(name, name, subsystem, validator, check)


_KUBEPODS = SupportCheck.FILE_EXISTS_IN_KUBEPODS
_EXISTS = SupportCheck.FILE_EXISTS
_SHARES = RangeValidator(2, 262144)
_BURST = RangeValidator(0, 100000000)
_BVT = RangeValidator(-1, 2)
_BOOL = RangeValidator(0, 1)
_BYTES = RangeValidator(0, MAX_INT64)
_WMARK_RATIO = RangeValidator(0, 100)
_WMARK_SCALE = RangeValidator(1, 1000)
_WMARK_MIN_ADJ = RangeValidator(-25, 50)
_MEMORY_PRIORITY = RangeValidator(0, 12)
_BLKIO_WEIGHT = BlkIODeviceValidator(1, 100)
_BLKIO_THROTTLE = BlkIODeviceValidator(0, MAX_INT64)

_V1_LIST = [
    # written
    _v1(CPU, "cpu.shares", _SHARES),
    _v1(CPU, "cpu.cfs_quota_us"),
    _v1(CPU, "cpu.cfs_period_us"),
    _v1(CPU, "cpu.cfs_burst_us", _BURST, _EXISTS),
    _v1(CPU, "cpu.bvt_warp_ns", _BVT, _EXISTS),
    _v1(CPU, "cpu.idle", _BOOL, _KUBEPODS),
    _v1(CPUSET, "cpuset.cpus", CPUSetValidator()),
    _v1(MEMORY, "memory.limit_in_bytes"),
    _v1(MEMORY, "memory.min", _BYTES, _KUBEPODS),
    _v1(MEMORY, "memory.low", _BYTES, _KUBEPODS),
    _v1(MEMORY, "memory.high", _BYTES, _KUBEPODS),
    _v1(MEMORY, "memory.wmark_ratio", _WMARK_RATIO, _KUBEPODS),
    _v1(MEMORY, "memory.wmark_scale_factor", _WMARK_SCALE, _KUBEPODS),
    _v1(MEMORY, "memory.wmark_min_adj", _WMARK_MIN_ADJ, _KUBEPODS),
    _v1(MEMORY, "memory.priority", _MEMORY_PRIORITY, _KUBEPODS),
    _v1(MEMORY, "memory.use_priority_oom", _BOOL, _KUBEPODS),
    _v1(MEMORY, "memory.oom.group", _BOOL, _KUBEPODS),
    _v1(BLKIO, "blkio.throttle.read_bps_device", _BLKIO_THROTTLE, _KUBEPODS),
    _v1(BLKIO, "blkio.throttle.write_bps_device", _BLKIO_THROTTLE, _KUBEPODS),
    _v1(BLKIO, "blkio.throttle.read_iops_device", _BLKIO_THROTTLE, _KUBEPODS),
    _v1(BLKIO, "blkio.throttle.write_iops_device", _BLKIO_THROTTLE, _KUBEPODS),
    _v1(BLKIO, "blkio.cost.weight", _BLKIO_WEIGHT, _KUBEPODS),
    # blk-iocost of a disk (Anolis), written at the blkio root only.
    _v1(BLKIO, "blkio.cost.qos", check=_EXISTS),
    _v1(BLKIO, "blkio.cost.model", check=_EXISTS),
    _v1(NET_CLS, "net_cls.classid", NetClsClassIDValidator(), _KUBEPODS),
    _v1(CPU, "tasks"),
    _v1(CPU, "cgroup.procs"),
    # read only
    _v1(CPUACCT, "cpuacct.usage"),
    _v1(CPU, "cpu.stat"),
    _v1(MEMORY, "memory.stat"),
    _v1(MEMORY, "memory.numa_stat"),
    _v1(MEMORY, "memory.usage_in_bytes"),
    _v1(MEMORY, "memory.idle_page_stats", check=_EXISTS),
    _v1(CPUACCT, "cpu.pressure", check=_EXISTS),
    _v1(CPUACCT, "memory.pressure", check=_EXISTS),
    _v1(CPUACCT, "io.pressure", check=_EXISTS),
]
V1_RESOURCES: dict[str, CgroupResource] = {r.type: r for r in _V1_LIST}

# v1 type → v2 file, for the files whose name changes; the others keep theirs.
_V2_RENAMES = {
    "cpu.cfs_quota_us": "cpu.max",
    "cpu.cfs_period_us": "cpu.max",
    "cpu.shares": "cpu.weight",
    "cpu.cfs_burst_us": "cpu.max.burst",
    "cpuacct.usage": "cpu.stat",
    "memory.limit_in_bytes": "memory.max",
    "memory.usage_in_bytes": "memory.current",
    "tasks": "cgroup.threads",
}
_V1_ONLY = {
    "blkio.throttle.read_bps_device",
    "blkio.throttle.write_bps_device",
    "blkio.throttle.read_iops_device",
    "blkio.throttle.write_iops_device",
    "blkio.cost.weight",
    "blkio.cost.qos",
    "blkio.cost.model",
    "memory.idle_page_stats",
}
V2_RESOURCES: dict[str, CgroupResource] = {
    r.type: CgroupResource(
        r.type,
        _V2_RENAMES.get(r.type, r.type),
        "",
        # cpu.max.burst takes any non-negative µs value on v2.
        _BYTES if r.type == "cpu.cfs_burst_us" else r.validator,
        r.check,
    )
    for r in _V1_LIST
    if r.type not in _V1_ONLY
}
# v2 reads the cpuset a cgroup actually gets, not the one written (which may be empty).
V2_RESOURCES["cpuset.cpus.effective"] = CgroupResource(
    "cpuset.cpus.effective", "cpuset.cpus.effective", ""
)


def get_resource(resource_type: str, v2: bool) -> CgroupResource:
    registry = V2_RESOURCES if v2 else V1_RESOURCES
    resource = registry.get(resource_type)
    if resource is None:
        version = "v2" if v2 else "v1"
        raise ResourceUnsupportedError(resource_type, f"not in the cgroup {version} registry")
    return resource
