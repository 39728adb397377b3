"""CRD manifests of every Koordinator kind, generated from the models in ``api``.

Corresponds to upstream's `config/crd/bases`. ``bases/`` is checked in; regenerate it with
``python -m api.crds.generate`` (a test fails when it is stale). ``crd_manifests()`` reads
the checked-in files, for installing into an API server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

BASES_DIR = Path(__file__).resolve().parent / "bases"


def crd_manifests() -> list[dict[str, Any]]:
    """Every generated CustomResourceDefinition, in file-name order."""
    return [yaml.safe_load(path.read_text()) for path in sorted(BASES_DIR.glob("*.yaml"))]
