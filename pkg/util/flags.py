"""argparse helpers for the components' Go-style flags (upstream parses them with pflag):
``duration`` for ``time.Duration`` flags ("10s", "1m30s"), ``go_bool`` for Go's
``strconv.ParseBool``, ``string_slice`` for pflag's ``StringSlice``, ``add_bool`` for a Go bool
flag (``--flag``, ``--flag=true``, ``--flag=false``) and ``go_style`` for Go's single-dash long
flags (``-addr=:9316``, as upstream's koordlet DaemonSet passes them). A bad value is an
``ArgumentTypeError``, so argparse names the flag."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from api.meta import parse_duration


def duration(value: str) -> float:
    """Seconds of a Go duration string."""
    try:
        return parse_duration(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def go_bool(value: str) -> bool:
    """Go's ``strconv.ParseBool``."""
    if value in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if value in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean value {value!r}")


def string_slice(value: str) -> list[str]:
    """A pflag ``StringSlice``: comma-separated, blanks dropped. One pair of surrounding
    brackets is dropped too, so the default as ``--help`` prints it (``[]``, ``[a,b]``) parses
    back to itself."""
    value = value.strip()
    if value.startswith("[") and value.endswith("]"):
        value = value[1:-1]
    return [v.strip() for v in value.split(",") if v.strip()]


def add_bool(parser: argparse._ActionsContainer, flag: str, default: bool, help: str) -> None:
    """A Go bool flag: bare ``--flag`` is true, ``--flag=<go bool>`` sets it; the help ends with
    the default as Go prints it."""
    parser.add_argument(flag, nargs="?", const=True, type=go_bool, default=default,
                        metavar="BOOL", help=f"{help} (default {str(default).lower()})")


def go_style(parser: argparse.ArgumentParser, argv: Sequence[str]) -> list[str]:
    """``argv`` with Go's single-dash long flags (``-addr=:9316``, ``-v 4`` stays short) as
    ``--addr=:9316`` wherever the parser knows the long form and not the single-dash one; Go's
    flag package treats ``-name`` and ``--name`` alike, and upstream's manifests use both."""
    known = parser._option_string_actions
    out: list[str] = []
    for i, arg in enumerate(argv):
        if arg == "--":
            return out + list(argv[i:])
        name = arg.split("=", 1)[0]
        if arg.startswith("-") and not arg.startswith("--") and len(name) > 2 and \
                name not in known and "-" + name in known:
            arg = "-" + arg
        out.append(arg)
    return out
