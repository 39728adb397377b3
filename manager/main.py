"""Entry point of koord-manager (upstream `cmd/koord-manager`).

Built as the py_binary `//manager:koord-manager`.
"""

from __future__ import annotations

import sys

from pkg.util.placeholder import placeholder_main

PROG = "koord-manager"
DESCRIPTION = (
    "koord-manager: slo-controller (NodeMetric, NodeSLO, batch/mid "
    "resources), admission webhooks and the quota controller. Not implemented yet."
)


def main(argv: list[str] | None = None) -> int:
    return placeholder_main(PROG, DESCRIPTION, argv)


if __name__ == "__main__":
    sys.exit(main())
