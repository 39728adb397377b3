"""Entry point of koord-runtime-proxy (upstream `cmd/koord-runtime-proxy`).

Built as the py_binary `//runtime_proxy:koord-runtime-proxy`.
"""

from __future__ import annotations

import argparse
import sys

PROG = "koord-runtime-proxy"
DESCRIPTION = (
    "koord-runtime-proxy: the CRI proxy between kubelet and the container "
    "runtime that calls runtime hooks. Not implemented yet."
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
