import pytest

from koordlet.util.system.cpuset import format_cpuset, parse_cpuset


def test_round_trip_in_kernel_form() -> None:
    assert parse_cpuset("0-2,5, 7-8\n") == {0, 1, 2, 5, 7, 8}
    assert format_cpuset(parse_cpuset("5,0,1,2,8,7")) == "0-2,5,7-8"
    assert parse_cpuset("") == frozenset()
    assert format_cpuset(frozenset()) == ""


@pytest.mark.parametrize("bad", ["3-1", "a", "1-", "-1"])
def test_malformed(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_cpuset(bad)
