"""Entry point of koord-descheduler (upstream `cmd/koord-descheduler`).

Built as the py_binary `//descheduler:koord-descheduler`.
"""

from __future__ import annotations

import argparse
import sys

PROG = "koord-descheduler"
DESCRIPTION = (
    "koord-descheduler: the descheduling framework, LowNodeLoad and the "
    "MigrationController. Not implemented yet."
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
