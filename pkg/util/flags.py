"""argparse value types for the components' Go-style flags (upstream parses them with pflag):
``duration`` for ``time.Duration`` flags ("10s", "1m30s") and ``go_bool`` for Go's
``strconv.ParseBool``. A bad value is an ``ArgumentTypeError``, so argparse names the flag."""

from __future__ import annotations

import argparse

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
