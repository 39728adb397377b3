"""Entry point of koord-descheduler (upstream `cmd/koord-descheduler`).

Built as the py_binary `//descheduler:koord-descheduler`.
"""

from __future__ import annotations

import sys

from pkg.util.placeholder import placeholder_main

PROG = "koord-descheduler"
DESCRIPTION = (
    "koord-descheduler: the descheduling framework, LowNodeLoad and the "
    "MigrationController. Not implemented yet."
)


def main(argv: list[str] | None = None) -> int:
    return placeholder_main(PROG, DESCRIPTION, argv)


if __name__ == "__main__":
    sys.exit(main())
