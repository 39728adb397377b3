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
from hack.image import podman as podman_cli


@pytest.fixture(scope="module")
def podman() -> Iterator[list[str]]:
    with podman_cli.podman() as cmd:
        yield cmd


@pytest.mark.parametrize("name", sorted(images.IMAGES))
def test_image_runs_its_entrypoint_with_help(podman: list[str], name: str) -> None:
    ref = podman_cli.load(podman, name)

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
