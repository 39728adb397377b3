"""Entry point of koordlet (upstream `cmd/koordlet`).

Built as the py_binary `//koordlet:koordlet`.
"""

from __future__ import annotations

import sys

from pkg.util.placeholder import placeholder_main

PROG = "koordlet"
DESCRIPTION = (
    "koordlet: the node agent (metrics, QoS management, runtime hooks). Not implemented yet."
)


def main(argv: list[str] | None = None) -> int:
    return placeholder_main(PROG, DESCRIPTION, argv)


if __name__ == "__main__":
    sys.exit(main())
