"""Entry point of koord-scheduler (upstream `cmd/koord-scheduler`).

Built as the py_binary `//scheduler:koord-scheduler`.
"""

from __future__ import annotations

import sys

from pkg.util.placeholder import placeholder_main

PROG = "koord-scheduler"
DESCRIPTION = (
    "koord-scheduler: the kube-scheduler framework with Koordinator's plugins. Not implemented yet."
)


def main(argv: list[str] | None = None) -> int:
    return placeholder_main(PROG, DESCRIPTION, argv)


if __name__ == "__main__":
    sys.exit(main())
