"""Entry point of koordlet (upstream `cmd/koordlet`).

Built as the py_binary `//koordlet:koordlet`.
"""

from __future__ import annotations

import argparse
import sys

PROG = "koordlet"
DESCRIPTION = (
    "koordlet: the node agent (metrics, QoS management, runtime hooks). Not implemented yet."
)


def build_parser() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(
        prog=PROG,
        description=DESCRIPTION,
    )


def main(argv: list[str] | None = None) -> int:
    build_parser().parse_args(argv)
    print(f"{PROG}: not implemented yet", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
