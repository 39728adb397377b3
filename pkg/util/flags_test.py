import argparse

import pytest

from pkg.util import flags


def test_duration_flag_takes_go_durations_and_names_a_bad_value() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--interval", type=flags.duration)
    assert p.parse_args(["--interval=1m30s"]).interval == 90.0
    with pytest.raises(SystemExit):
        p.parse_args(["--interval=soon"])


@pytest.mark.parametrize("value,want", [("true", True), ("T", True), ("1", True),
                                        ("False", False), ("0", False)])
def test_go_bool_accepts_what_strconv_parsebool_does(value: str, want: bool) -> None:
    assert flags.go_bool(value) is want


def test_go_bool_rejects_other_spellings() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="invalid boolean value 'yes'"):
        flags.go_bool("yes")
