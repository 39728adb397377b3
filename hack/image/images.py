"""Where the built component images are, and the container-tool helpers their tests share.

Under `bazel test` the oci-archives are runfiles (`manager/image.oci.tar`, ... in the working
directory); under a plain `pytest` from the repository root they are Bazel's outputs
(`bazel-bin/manager/image.oci.tar`): run `bazel build //hack/image:images` first.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

# Upstream's image name -> the Bazel package whose `image` target builds it.
IMAGES = {
    "koord-manager": "manager",
    "koord-scheduler": "scheduler",
    "koord-descheduler": "descheduler",
    "koordlet": "koordlet",
    "koord-runtime-proxy": "runtime_proxy",
    "koord-device-daemon": "device_daemon",
}
# Node agents run as root, the control plane as nonroot (65532).
ROOT_IMAGES = {"koordlet", "koord-runtime-proxy", "koord-device-daemon"}

# podman's default RLIMIT_NOFILE/NPROC exceed these machines' hard limits, and raising a hard
# limit needs CAP_SYS_RESOURCE (shared/notes/images-and-cri.md §4).
PODMAN_ULIMITS = ["--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096"]


def image_archive(name: str) -> Path:
    """The oci-archive of image NAME; AssertionError naming the build command if missing."""
    rel = Path(IMAGES[name]) / "image.oci.tar"
    for candidate in (rel, Path("bazel-bin") / rel):
        if candidate.is_file():
            return candidate.absolute()
    raise AssertionError(f"{rel} not built: run `bazel build //hack/image:images`")


def tool(name: str) -> str:
    """The absolute path of a command (sbin included: chroot); fails, never skips, if missing."""
    search = os.environ.get("PATH", "") + ":/usr/local/sbin:/usr/sbin:/sbin:/usr/bin:/bin"
    found = shutil.which(name, path=search)
    assert found, f"missing {name}: run hack/setup.sh (it installs the Debian packages)"
    return found


def require_tools(*tools: str) -> None:
    """Fails (never skips) when a tool is missing: hack/setup.sh installs them all."""
    for name in tools:
        tool(name)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_registry(directory: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Debian's docker-registry on a free loopback port, storing under DIRECTORY."""
    require_tools("docker-registry")
    port = free_port()
    config = directory / "config.yml"
    config.write_text(
        "version: 0.1\n"
        "log: {level: warn}\n"
        f"storage: {{filesystem: {{rootdirectory: {directory / 'data'}}}}}\n"
        f"http: {{addr: 127.0.0.1:{port}}}\n"
    )
    log = (directory / "registry.log").open("wb")
    proc = subprocess.Popen(["docker-registry", "serve", str(config)], stdout=log, stderr=log)
    host = f"127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(f"http://{host}/v2/", timeout=2) as response:
                if response.status == 200:
                    return proc, host
        except (urllib.error.URLError, OSError):
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(
                f"docker-registry did not start: {(directory / 'registry.log').read_text()}"
            )
        time.sleep(0.1)


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def unmount_below(directory: Path) -> None:
    """Unmounts everything mounted at or below DIRECTORY (deepest first): podman's overlays."""
    prefix = str(directory.resolve())
    mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point == prefix or point.startswith(prefix + "/"):
            mounts.append(point)
    for point in sorted(mounts, key=len, reverse=True):
        subprocess.run(["umount", "-l", point], check=False, capture_output=True)
