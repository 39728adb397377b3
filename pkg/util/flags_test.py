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


@pytest.mark.parametrize("value,want", [
    ("a,b", ["a", "b"]), (" a , ,b ", ["a", "b"]), ("", []), ("[]", []), ("[a,b]", ["a", "b"]),
    ("*,-nodemetric", ["*", "-nodemetric"]),
])
def test_string_slice_is_pflags_comma_list(value: str, want: list[str]) -> None:
    assert flags.string_slice(value) == want


def test_bool_flag_takes_the_go_forms_and_prints_its_default() -> None:
    p = argparse.ArgumentParser()
    flags.add_bool(p, "--enable-x", False, "Enable x.")
    assert p.parse_args([]).enable_x is False
    assert p.parse_args(["--enable-x"]).enable_x is True
    assert p.parse_args(["--enable-x=false"]).enable_x is False
    assert p.parse_args(["--enable-x=T"]).enable_x is True
    assert "Enable x. (default false)" in " ".join(p.format_help().split())
    with pytest.raises(SystemExit):
        p.parse_args(["--enable-x=yes"])


def test_go_style_single_dash_long_flags_as_upstreams_daemonset_passes_them() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--addr")
    p.add_argument("--cgroup-root-dir")
    p.add_argument("-v", "--v", dest="verbosity")
    p.add_argument("-s", "--debug-scores")
    p.add_argument("rest", nargs="*")
    argv = ["-addr=:9316", "-cgroup-root-dir", "/host-cgroup/", "-v=4", "-s", "3", "--",
            "-addr=x"]
    args = p.parse_args(flags.go_style(p, argv))
    assert (args.addr, args.cgroup_root_dir, args.verbosity, args.debug_scores, args.rest) == (
        ":9316", "/host-cgroup/", "4", "3", ["-addr=x"])
    # an unknown single-dash flag is left for argparse to report as it is
    assert flags.go_style(p, ["-nope=1"]) == ["-nope=1"]
