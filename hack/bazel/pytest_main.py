"""Bazel entry point for every py_pytest target: runs pytest on the files given as arguments.

Bazel starts tests in the runfiles copy of the repository (the working directory), so the
same pyproject.toml configuration and import paths apply as for a plain `pytest` run from
the repository root.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str]) -> int:
    root = os.getcwd()
    # The repository root first (our `test` package must shadow the stdlib's), and not this
    # runner's own directory, which Python put in front.
    here = os.path.realpath(os.path.dirname(__file__))
    sys.path[:] = [root] + [p for p in sys.path if p != root and os.path.realpath(p) != here]
    import pytest

    args = ["--rootdir", root, "-p", "no:cacheprovider", *argv]
    xml = os.environ.get("XML_OUTPUT_FILE")
    if xml:
        args.append(f"--junitxml={xml}")
    return int(pytest.main(args))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
