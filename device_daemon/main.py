"""Entry point of koord-device-daemon (upstream `cmd/koord-device-daemon`).

Built as the py_binary `//device_daemon:koord-device-daemon`.
"""

from __future__ import annotations

import argparse
import sys

PROG = "koord-device-daemon"
DESCRIPTION = (
    "koord-device-daemon: discovers GPUs and RDMA devices and publishes them. Not implemented yet."
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
