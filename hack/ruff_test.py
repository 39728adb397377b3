"""`ruff check` passes on the whole repository (configuration in pyproject.toml).

Under Bazel this test reads the real checkout (tagged external and local: never cached), so
`bazel test //...` enforces lint on every file, not only on the files in its runfiles.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def test_ruff_check_is_clean() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format=concise", "."],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, f"ruff check found problems:\n{result.stdout}{result.stderr}"
