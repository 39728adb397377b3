"""Entry point of koord-device-daemon (upstream `cmd/koord-device-daemon`).

Built as the py_binary `//device_daemon:koord-device-daemon`.
"""

from __future__ import annotations

import sys

from pkg.util.placeholder import placeholder_main

PROG = "koord-device-daemon"
DESCRIPTION = (
    "koord-device-daemon: discovers GPUs and RDMA devices and publishes them. Not implemented yet."
)


def main(argv: list[str] | None = None) -> int:
    return placeholder_main(PROG, DESCRIPTION, argv)


if __name__ == "__main__":
    sys.exit(main())
