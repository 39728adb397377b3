"""mypy passes over the packages pyproject.toml's ``[tool.mypy] files`` lists.

Under Bazel this test reads the real checkout (tagged external and local: never cached), as
``ruff_test`` does, so ``bazel test //...`` type-checks every file, not only its runfiles.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def test_mypy_is_clean() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", "--no-pretty"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, f"mypy found problems:\n{result.stdout}{result.stderr}"
