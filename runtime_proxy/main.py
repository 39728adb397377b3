"""Entry point of koord-runtime-proxy (upstream `cmd/koord-runtime-proxy`).

Built as the py_binary `//runtime_proxy:koord-runtime-proxy`.
"""

from __future__ import annotations

import sys

from pkg.util.placeholder import placeholder_main

PROG = "koord-runtime-proxy"
DESCRIPTION = (
    "koord-runtime-proxy: the CRI proxy between kubelet and the container "
    "runtime that calls runtime hooks. Not implemented yet."
)


def main(argv: list[str] | None = None) -> int:
    return placeholder_main(PROG, DESCRIPTION, argv)


if __name__ == "__main__":
    sys.exit(main())
