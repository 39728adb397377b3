"""Entry point of koord-manager (upstream `cmd/koord-manager`).

Built as the py_binary `//manager:koord-manager`.
"""

from __future__ import annotations

import argparse
import sys

PROG = "koord-manager"
DESCRIPTION = (
    "koord-manager: slo-controller (NodeMetric, NodeSLO, batch/mid "
    "resources), admission webhooks and the quota controller. Not implemented yet."
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
