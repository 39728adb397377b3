import pytest

from koordlet.util.system.cgroup import (
    MAX_INT64,
    ResourceUnsupportedError,
    milli_cpu_to_quota,
    milli_cpu_to_shares,
)
from koordlet.util.system.cgroup_resource import get_resource


@pytest.mark.parametrize(
    ("resource_type", "good", "bad"),
    [
        ("cpu.shares", ["2", "1024", "262144"], ["1", "262145", "max", "x"]),
        ("cpu.cfs_burst_us", ["0", "100000000"], ["-1", "100000001"]),
        ("cpu.bvt_warp_ns", ["-1", "2"], ["3", "-2"]),
        ("cpu.idle", ["0", "1"], ["2"]),
        ("memory.min", ["0", "max", str(MAX_INT64)], ["-1"]),
        ("memory.wmark_ratio", ["0", "100"], ["101"]),
        ("memory.wmark_scale_factor", ["1", "1000"], ["0", "1001"]),
        ("memory.wmark_min_adj", ["-25", "50"], ["-26", "51"]),
        ("memory.priority", ["0", "12"], ["13"]),
        ("cpuset.cpus", ["0-3,5", "", "7"], ["3-1", "a"]),
        ("net_cls.classid", ["0x10001", "41231686041"], ["0x9999999a", "41231686042", "z"]),
        # per-device blkio entries: "<major:minor> <value>"
        ("blkio.cost.weight", ["253:16 1", "8:0 100"], ["253:16 0", "253:16 101", "100",
                                                        "sda 50"]),
        ("blkio.throttle.read_iops_device", ["253:16 0", "8:0 1048576"],
         ["253:16 -1", "253:16", "253:16 1 2"]),
    ],
)
def test_validators(resource_type: str, good: list[str], bad: list[str]) -> None:
    resource = get_resource(resource_type, v2=False)
    for value in good:
        assert resource.validate(value) is None, value
    for value in bad:
        assert resource.validate(value) is not None, value


def test_quota_and_limit_take_any_value() -> None:
    for resource_type in ("cpu.cfs_quota_us", "memory.limit_in_bytes", "tasks"):
        assert get_resource(resource_type, v2=False).validate("-1") is None


@pytest.mark.parametrize(
    ("resource_type", "v1_file", "subsystem", "v2_file"),
    [
        ("cpu.cfs_quota_us", "cpu.cfs_quota_us", "cpu", "cpu.max"),
        ("cpu.cfs_period_us", "cpu.cfs_period_us", "cpu", "cpu.max"),
        ("cpu.shares", "cpu.shares", "cpu", "cpu.weight"),
        ("cpu.cfs_burst_us", "cpu.cfs_burst_us", "cpu", "cpu.max.burst"),
        ("cpuacct.usage", "cpuacct.usage", "cpuacct", "cpu.stat"),
        ("memory.limit_in_bytes", "memory.limit_in_bytes", "memory", "memory.max"),
        ("memory.usage_in_bytes", "memory.usage_in_bytes", "memory", "memory.current"),
        ("cpuset.cpus", "cpuset.cpus", "cpuset", "cpuset.cpus"),
        ("tasks", "tasks", "cpu", "cgroup.threads"),
        ("cpu.pressure", "cpu.pressure", "cpuacct", "cpu.pressure"),
        ("memory.min", "memory.min", "memory", "memory.min"),
    ],
)
def test_v1_and_v2_files(resource_type: str, v1_file: str, subsystem: str, v2_file: str) -> None:
    v1 = get_resource(resource_type, v2=False)
    assert (v1.file_name, v1.subsystem) == (v1_file, subsystem)
    v2 = get_resource(resource_type, v2=True)
    assert (v2.file_name, v2.subsystem) == (v2_file, "")


def test_blkio_is_unsupported_on_v2() -> None:
    assert get_resource("blkio.cost.weight", v2=False).file_name == "blkio.cost.weight"
    with pytest.raises(ResourceUnsupportedError, match="blkio.cost.weight is unsupported"):
        get_resource("blkio.cost.weight", v2=True)


def test_v2_burst_accepts_values_beyond_v1_range() -> None:
    assert get_resource("cpu.cfs_burst_us", v2=True).validate("200000000") is None


@pytest.mark.parametrize(
    ("milli", "shares", "quota"),
    [
        (0, 2, -1),
        (-5, 2, -1),
        (1, 2, 1000),
        (500, 512, 50000),
        (1000, 1024, 100000),
        (300000, 262144, 30000000),
    ],
)
def test_milli_cpu_conversions(milli: int, shares: int, quota: int) -> None:
    assert milli_cpu_to_shares(milli) == shares
    assert milli_cpu_to_quota(milli) == quota
