"""The six images through a real registry (Debian's docker-registry) and back (skopeo, umoci).

Pushes with hack/image/push.py, pulls with skopeo and compares manifest digests; a second
push of the same build uploads nothing. One image is unpacked with `umoci unpack` (which
checks every layer's diff_id) and its Python imports the pinned dependencies in a chroot.
Needs root (chroot) and the Debian packages hack/setup.sh installs; fails, not skips, without.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from hack.image import images
from hack.image.push import push, read_archive


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    proc, host = images.start_registry(tmp_path_factory.mktemp("registry"))
    try:
        yield host
    finally:
        images.stop(proc)


def test_push_pull_round_trip_and_second_push_uploads_nothing(
    registry: str, tmp_path: Path
) -> None:
    images.require_tools("skopeo")
    archives = [images.image_archive(name) for name in images.IMAGES]
    blobs = {d for a in archives for d in read_archive(a).blobs}

    first = push(archives, registry, "t1", "koordinator-sh", plain_http=False)
    # Each distinct blob crosses the wire once; the shared base and deps layers are mounted.
    assert first["uploaded"] == len(blobs)
    assert first["mounted"] == sum(len(read_archive(a).blobs) for a in archives) - len(blobs)
    assert set(first["images"]) == {f"{registry}/koordinator-sh/{n}:t1" for n in images.IMAGES}

    for ref, digest in first["images"].items():
        raw = subprocess.run(
            ["skopeo", "inspect", "--raw", "--tls-verify=false", f"docker://{ref}"],
            check=True,
            capture_output=True,
        ).stdout
        assert "sha256:" + hashlib.sha256(raw).hexdigest() == digest, ref
        pulled = tmp_path / (ref.rsplit("/", 1)[1].replace(":", "_") + ".tar")
        subprocess.run(
            [
                "skopeo",
                "copy",
                "-q",
                "--src-tls-verify=false",
                f"docker://{ref}",
                f"oci-archive:{pulled}:t1",
            ],
            check=True,
            capture_output=True,
        )
        assert read_archive(pulled).digest == digest, ref

    second = push(archives, registry, "t1", "koordinator-sh", plain_http=False)
    assert (second["uploaded"], second["mounted"]) == (0, 0)
    assert second["images"] == first["images"]


def test_umoci_unpack_checks_layers_and_python_imports_the_dependencies(tmp_path: Path) -> None:
    images.require_tools("umoci", "chroot")
    layout = tmp_path / "layout"
    layout.mkdir()
    subprocess.run(
        ["tar", "-C", str(layout), "-xf", str(images.image_archive("koordlet"))], check=True
    )
    bundle = tmp_path / "bundle"
    subprocess.run(
        ["umoci", "unpack", "--image", f"{layout}:latest", str(bundle)],
        check=True,
        capture_output=True,
    )
    rootfs = bundle / "rootfs"
    config = json.loads((bundle / "config.json").read_text())
    assert config["process"]["args"] == ["/koordlet"]
    assert (rootfs / "koordlet").is_file()
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": "/app", "PYTHONDONTWRITEBYTECODE": "1"}
    code = (
        "import sys, ssl, sqlite3, json, ctypes, decimal, zoneinfo;"
        "import kubernetes, grpc, pydantic, pydantic_core, numpy, orjson, yaml, psutil;"
        "import prometheus_client;"
        "import google.protobuf, cryptography.hazmat.primitives.asymmetric.rsa as rsa;"
        "rsa.generate_private_key(public_exponent=65537, key_size=2048);"
        "import koordlet.main;"
        "print(sys.version.split()[0], kubernetes.__version__, grpc.__version__, pydantic.VERSION)"
    )
    result = subprocess.run(
        [
            images.tool("chroot"),
            "--userspec=65532:65532",
            str(rootfs),
            "/usr/bin/python3",
            "-c",
            code,
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        cwd=os.sep,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0].startswith("3.11.")
