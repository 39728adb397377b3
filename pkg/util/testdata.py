"""Where tests find upstream's fixtures (`shared/upstream/data/`), in both ways tests run.

* plain `pytest` from the repository root: the checkout has `shared/` beside it, so the data
  lies at `<repo>/../shared/upstream/data/`;
* `bazel test`: WORKSPACE maps that directory to the `@upstream_data` repository, and a test
  that depends on `@upstream_data//:files` finds it in its runfiles as `upstream_data/`.

`KOORD_UPSTREAM_DATA` overrides both (an absolute path).
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_OVERRIDE = "KOORD_UPSTREAM_DATA"
RUNFILES_REPO = "upstream_data"

REPO_ROOT = Path(__file__).absolute().parents[2]


def _runfiles_dirs() -> list[Path]:
    """Bazel's runfiles roots, when running under Bazel."""
    return [Path(os.environ[var]) for var in ("TEST_SRCDIR", "RUNFILES_DIR") if os.environ.get(var)]


def upstream_data_dir() -> Path:
    """The directory holding upstream's YAML fixtures (`config/`, `examples/`, ...).

    Raises FileNotFoundError, naming the places it looked, when the data is not there.
    """
    override = os.environ.get(ENV_OVERRIDE)
    runfiles = _runfiles_dirs()
    if override:
        candidates = [Path(override)]
        hint = f"{ENV_OVERRIDE} names a missing directory"
    elif runfiles:
        # Under Bazel only the declared data counts, so that results are cached correctly.
        candidates = [d / RUNFILES_REPO for d in runfiles]
        hint = 'the target needs data = ["@upstream_data//:files"] (hack/update_build.py adds it)'
    else:
        candidates = [REPO_ROOT.parent / "shared" / "upstream" / "data"]
        hint = f"clone the repository with shared/ beside it, or set {ENV_OVERRIDE}"
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    looked = ", ".join(str(c) for c in candidates)
    raise FileNotFoundError(f"upstream fixtures not found in {looked}: {hint}")
