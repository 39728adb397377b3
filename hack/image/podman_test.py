"""Each image runs in a real container runtime: podman loads it and `/<binary> --help` exits 0.

podman with private storage in a temp directory (no systemd, no shared state): cgroupfs,
file events, runc, host network, and the --ulimit flags these machines need
(shared/notes/images-and-cri.md §4). If podman cannot start a container here the test fails
with podman's reason; it never skips.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest

from hack.image import images


@pytest.fixture(scope="module")
def podman(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    images.require_tools("podman", "runc")
    base = tmp_path_factory.mktemp("podman")
    cmd = [
        "podman",
        "--root",
        str(base / "root"),
        "--runroot",
        str(base / "run"),
        "--cgroup-manager=cgroupfs",
        "--events-backend=file",
        "--storage-driver=overlay",
        "--runtime=runc",
    ]
    try:
        yield cmd
    finally:
        subprocess.run([*cmd, "rm", "--all", "--force"], capture_output=True, check=False)
        images.unmount_below(base)


@pytest.mark.parametrize("name", sorted(images.IMAGES))
def test_image_runs_its_entrypoint_with_help(podman: list[str], name: str) -> None:
    archive = images.image_archive(name)
    loaded = subprocess.run(
        [*podman, "load", "-q", "-i", str(archive)], capture_output=True, text=True, check=False
    )
    assert loaded.returncode == 0, loaded.stderr
    ref = f"localhost/koordinator-sh/{name}:latest"
    assert ref in loaded.stdout, loaded.stdout

    inspect = subprocess.run(
        [*podman, "image", "inspect", ref], capture_output=True, text=True, check=True
    )
    config = json.loads(inspect.stdout)[0]["Config"]
    assert config["Entrypoint"] == [f"/{name}"]
    assert config["User"] == ("0" if name in images.ROOT_IMAGES else "65532")
    assert config["Labels"]["org.opencontainers.image.title"] == name

    run = subprocess.run(
        [*podman, "run", "--rm", "--network=host", *images.PODMAN_ULIMITS, ref, "--help"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert run.returncode == 0, f"podman run {ref} --help: rc {run.returncode}: {run.stderr}"
    assert f"usage: {name}" in run.stdout, run.stdout[:2000]


def test_image_user_is_the_configured_one(podman: list[str]) -> None:
    ref = "localhost/koordinator-sh/koord-scheduler:latest"
    subprocess.run(
        [*podman, "load", "-q", "-i", str(images.image_archive("koord-scheduler"))],
        check=True,
        capture_output=True,
    )
    run = subprocess.run(
        [
            *podman,
            "run",
            "--rm",
            "--network=host",
            *images.PODMAN_ULIMITS,
            "--entrypoint",
            "/usr/bin/python3",
            ref,
            "-c",
            "import os; print(os.getuid(), os.getgid())",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["65532", "65532"]
