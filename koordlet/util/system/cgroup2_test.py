import pytest

from koordlet.util.system.cgroup2 import (
    convert_cpu_shares_to_weight,
    convert_cpu_weight_to_shares,
    parse_cpu_max,
    value_for_v2,
)


@pytest.mark.parametrize(
    ("shares", "weight"), [(2, 1), (1024, 39), (512, 20), (262144, 10000), (1, 1), (300000, 10000)]
)
def test_shares_to_weight(shares: int, weight: int) -> None:
    assert convert_cpu_shares_to_weight(shares) == weight


@pytest.mark.parametrize(("weight", "shares"), [(1, 2), (100, 2597), (10000, 262144), (0, 2)])
def test_weight_to_shares(weight: int, shares: int) -> None:
    assert convert_cpu_weight_to_shares(weight) == shares


def test_cpu_max() -> None:
    assert parse_cpu_max("max 100000") == (-1, 100000)
    assert parse_cpu_max("50000 100000\n") == (50000, 100000)
    # The quota alone, as written (the kernel keeps the period): the default period.
    assert parse_cpu_max("max") == (-1, 100000)
    assert parse_cpu_max("50000") == (50000, 100000)


@pytest.mark.parametrize("content", ["", "garbage", "max abc", "1.5 100000", "max 100000 1"])
def test_cpu_max_not_in_the_kernels_shape(content: str) -> None:
    with pytest.raises(ValueError, match="cpu.max"):
        parse_cpu_max(content)


@pytest.mark.parametrize(
    ("resource_type", "v1_value", "v2_value"),
    [
        ("cpu.cfs_quota_us", "-1", "max"),
        ("cpu.cfs_quota_us", "50000", "50000"),
        ("memory.limit_in_bytes", "-1", "max"),
        ("memory.limit_in_bytes", "2147483648", "2147483648"),
        ("cpu.shares", "1024", "39"),
        ("cpuset.cpus", "0-1", "0-1"),
    ],
)
def test_value_for_v2(resource_type: str, v1_value: str, v2_value: str) -> None:
    assert value_for_v2(resource_type, v1_value) == v2_value
