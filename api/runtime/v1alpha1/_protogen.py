"""Generates api_pb2.py and api_pb2_grpc.py from api.proto for runs outside Bazel.

Same tool and flags as the Bazel genrule (`python3 -m grpc_tools.protoc`, proto path relative
to the repository root, so the generated code imports `api.runtime.v1alpha1.api_pb2`).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

HERE = Path(__file__).absolute().parent
PROTO = HERE / "api.proto"
OUT_DIR = HERE / "_generated"
STAMP = OUT_DIR / "api.proto.sha256"
OUTPUTS = ("api_pb2.py", "api_pb2_grpc.py")
REPO_ROOT = HERE.parents[2]
PROTO_REL = PROTO.relative_to(REPO_ROOT)


def _digest() -> str:
    import grpc_tools

    version = getattr(grpc_tools, "__version__", "")
    return hashlib.sha256(PROTO.read_bytes() + version.encode()).hexdigest()


def _up_to_date(digest: str) -> bool:
    return (
        STAMP.exists()
        and STAMP.read_text().strip() == digest
        and all((OUT_DIR / name).exists() for name in OUTPUTS)
    )


def ensure_generated() -> Path:
    """The directory holding up-to-date api_pb2.py and api_pb2_grpc.py."""
    digest = _digest()
    if _up_to_date(digest):
        return OUT_DIR
    from importlib.resources import files

    from grpc_tools import protoc

    OUT_DIR.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=OUT_DIR) as tmp:
        code = protoc.main(
            [
                "grpc_tools.protoc",
                f"-I{REPO_ROOT}",
                f"-I{files('grpc_tools') / '_proto'}",
                f"--python_out={tmp}",
                f"--grpc_python_out={tmp}",
                str(PROTO),
            ]
        )
        if code != 0:
            raise RuntimeError(f"grpc_tools.protoc failed ({code}) on {PROTO_REL}")
        for name in OUTPUTS:
            os.replace(Path(tmp) / PROTO_REL.parent / name, OUT_DIR / name)
    STAMP.write_text(digest + "\n")
    return OUT_DIR
