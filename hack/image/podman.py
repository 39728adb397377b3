"""The podman the image tests share: private storage in a temp directory, no systemd.

cgroupfs, file events, runc, overlay, and (in `run`) host network and the --ulimit flags these
machines need (shared/notes/images-and-cri.md §4). Missing tools fail the test; never a skip.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hack.image import images


@contextmanager
def podman() -> Iterator[list[str]]:
    """The podman command line, its storage in a new temp directory; removes every container,
    mount and the directory after."""
    images.require_tools("podman", "runc")
    # A short path of its own: podman refuses a runroot longer than 50 characters, which
    # pytest's per-test tmp_path exceeds.
    base = Path(tempfile.mkdtemp(prefix="podman-"))
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
        shutil.rmtree(base, ignore_errors=True)


def load(cmd: list[str], name: str) -> str:
    """Loads image NAME's archive; returns its reference (fails with podman's reason)."""
    loaded = subprocess.run(
        [*cmd, "load", "-q", "-i", str(images.image_archive(name))],
        capture_output=True,
        text=True,
        check=False,
    )
    assert loaded.returncode == 0, loaded.stderr
    ref = f"localhost/koordinator-sh/{name}:latest"
    assert ref in loaded.stdout, loaded.stdout
    return ref


def logs(cmd: list[str], container: str) -> str:
    out = subprocess.run(
        [*cmd, "logs", container], capture_output=True, text=True, check=False
    )
    return out.stdout + out.stderr


def running(cmd: list[str], container: str) -> bool:
    out = subprocess.run(
        [*cmd, "inspect", "--format", "{{.State.Running}}", container],
        capture_output=True,
        text=True,
        check=False,
    )
    return out.stdout.strip() == "true"


def stop(cmd: list[str], container: str, grace: int) -> int:
    """`podman stop` (SIGTERM, SIGKILL after GRACE s); the container's exit code."""
    subprocess.run(
        [*cmd, "stop", "-t", str(grace), container],
        capture_output=True,
        check=True,
        timeout=grace + 30,
    )
    out = subprocess.run(
        [*cmd, "inspect", "--format", "{{.State.ExitCode}}", container],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout.strip())
