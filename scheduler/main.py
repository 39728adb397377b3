"""Entry point of koord-scheduler (upstream `cmd/koord-scheduler`).

Built as the py_binary `//scheduler:koord-scheduler`.
"""

from __future__ import annotations

import argparse
import sys

PROG = "koord-scheduler"
DESCRIPTION = (
    "koord-scheduler: the kube-scheduler framework with Koordinator's plugins. Not implemented yet."
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
