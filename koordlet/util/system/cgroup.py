"""Raw cgroup file access and its errors: upstream `pkg/koordlet/util/system/cgroup.go`.

Errors carry the file path and the value, so a refused write (validator or kernel) says what
was attempted where, and a file in an unexpected shape (`MalformedCgroupFileError`) is named;
`ResourceUnsupportedError` and `CgroupDirNotExistError` are the two kinds the executor logs and
treats as success (upstream IsResourceUnsupportedErr / IsCgroupDirErr).
"""

from __future__ import annotations

import os

MAX_INT64 = (1 << 63) - 1
CGROUP_MAX = "max"
CPU_SHARES_MIN = 2
CPU_SHARES_MAX = 262144
CFS_BASE_PERIOD = 100000
CFS_QUOTA_MIN = 1000


class CgroupError(Exception):
    """Base of every cgroup access error."""


class ResourceUnsupportedError(CgroupError):
    def __init__(self, resource_type: str, reason: str) -> None:
        super().__init__(f"resource {resource_type} is unsupported, reason: {reason}")


class CgroupDirNotExistError(CgroupError):
    def __init__(self, path: str) -> None:
        super().__init__(f"cgroup path or file not exist: {path}")
        self.path = path


class InvalidValueError(CgroupError):
    def __init__(self, path: str, value: str, reason: str) -> None:
        super().__init__(f"invalid value {value!r} for {path}: {reason}")
        self.path, self.value = path, value


class MalformedCgroupFileError(CgroupError, ValueError):
    """A cgroup file whose content is not in the shape the kernel gives it. Also a ValueError,
    as a failed parse of the content is."""

    def __init__(self, path: str, content: str, reason: str) -> None:
        super().__init__(f"malformed cgroup file {path}: {content!r}: {reason}")
        self.path, self.content = path, content


class CgroupWriteError(CgroupError):
    """The kernel refused the write (EINVAL for a child quota above its parent's, EBUSY...)."""

    def __init__(self, path: str, value: str, cause: OSError) -> None:
        super().__init__(f"failed to write {value!r} to {path}: {cause.strerror or cause}")
        self.path, self.value, self.errno = path, value, cause.errno


# A read(2) size that takes a whole usual cgroup file at once (the loop goes on until EOF).
_READ_CHUNK = 1 << 16


def cgroup_file_read(path: str) -> str:
    """The stripped content; a missing file is a `CgroupDirNotExistError`.

    Plain read(2)s until EOF: the qosmanager reads hundreds of small files a round, and a
    Python file object costs several times the syscalls."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        raise CgroupDirNotExistError(path) from None
    try:
        chunks = []
        while chunk := os.read(fd, _READ_CHUNK):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode().strip()


def cgroup_file_write(path: str, value: str) -> None:
    """One write(2) of the whole value, as cgroup files take it; never creates the file."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    except FileNotFoundError:
        raise CgroupDirNotExistError(path) from None
    except OSError as e:
        raise CgroupWriteError(path, value, e) from None
    try:
        os.write(fd, value.encode())
    except OSError as e:
        raise CgroupWriteError(path, value, e) from None
    finally:
        os.close(fd)


def milli_cpu_to_shares(milli_cpu: int) -> int:
    """Upstream MilliCPUToShares: 1 core = 1024 shares, clamped to the kernel's range."""
    if milli_cpu <= 0:
        return CPU_SHARES_MIN
    return min(max(milli_cpu * 1024 // 1000, CPU_SHARES_MIN), CPU_SHARES_MAX)


def milli_cpu_to_quota(milli_cpu: int) -> int:
    """Upstream MilliCPUToQuota: quota per 100 ms period, −1 (unlimited) when not positive."""
    quota = milli_cpu * CFS_BASE_PERIOD // 1000
    if quota <= 0:
        return -1
    return max(quota, CFS_QUOTA_MIN)
