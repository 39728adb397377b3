"""The entry point of a component that is not implemented yet.

Shared by the components' ``main.py`` skeletons until each gets its real command line (upstream
`cmd/<component>`): ``--help`` names the binary and exits 0; running it says what is missing
and exits 1.
"""

from __future__ import annotations

import argparse
import sys


def placeholder_main(prog: str, description: str, argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(prog=prog, description=description).parse_args(argv)
    print(f"{prog}: not implemented yet", file=sys.stderr)
    return 1
