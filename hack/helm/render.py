"""Renders a Helm chart as ``helm template`` does, through the Go renderer in this directory
(``main.go``: Go's text/template, Debian's sprig and Helm's own functions), for the chart tests,
the local cluster and users without a ``helm`` binary.

Usage::

    python3 -m hack.helm.render charts/koordinator [-f values.yaml]... [--set a.b=c]...
        [--set-string a=b]... [--namespace NS] [--release-name NAME] [--kube-version v1.35.0]
        [--api-versions monitoring.coreos.com/v1]...
    python3 -m hack.helm.render --build      # build the renderer now (hack/setup.sh does)

The binary comes from, in order: ``$KOORD_HELM_RENDER``; the Bazel-built one next to this
module in runfiles (``//hack/helm:renderer``); ``$XDG_CACHE_HOME/koord/koord-helm-render``
(``~/.cache`` by default), rebuilt by ``build.sh`` from Debian's Go packages whenever a Go source
is newer (under a file lock, so concurrent tests build once).
"""

from __future__ import annotations

import argparse
import fcntl
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
BINARY_NAME = "koord-helm-render"
BUILD_DIR = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "koord"
DEFAULT_KUBE_VERSION = "v1.35.0"
DEFAULT_RELEASE_NAME = "koordinator"


class RenderError(RuntimeError):
    """The chart did not render; the message is the renderer's (Helm's) error text."""


def _sources() -> list[Path]:
    return sorted([*HERE.glob("*.go"), HERE / "build.sh"])


def build(force: bool = False) -> Path:
    """Build the cached ``koord-helm-render`` if missing or older than a source; its path."""
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    out = BUILD_DIR / BINARY_NAME
    with open(BUILD_DIR / "koord-helm-render.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        newest = max(p.stat().st_mtime for p in _sources())
        if force or not out.exists() or out.stat().st_mtime < newest:
            result = subprocess.run([str(HERE / "build.sh"), str(out)], capture_output=True,
                                    text=True)
            if result.returncode != 0:
                raise RenderError(f"building the chart renderer failed (hack/helm/build.sh; "
                                  f"hack/setup.sh installs Go and sprig):\n{result.stderr}")
    return out


def binary() -> Path:
    env = os.environ.get("KOORD_HELM_RENDER")
    if env:
        return Path(env)
    bundled = Path(__file__).with_name(BINARY_NAME)  # Bazel runfiles (data of this library)
    if bundled.exists():
        return bundled
    return build()


def _args(chart: Path, values_files: Sequence[Path], set_values: Sequence[str],
          set_strings: Sequence[str], namespace: str, release_name: str, kube_version: str,
          api_versions: Sequence[str]) -> list[str]:
    args = [str(binary()), "--namespace", namespace, "--release-name", release_name,
            "--kube-version", kube_version]
    for f in values_files:
        args += ["-f", str(f)]
    for s in set_values:
        args += ["--set", s]
    for s in set_strings:
        args += ["--set-string", s]
    for v in api_versions:
        args += ["--api-versions", v]
    return [*args, str(chart)]


def render(chart: Path, values_files: Sequence[Path] = (), set_values: Sequence[str] = (),
           namespace: str = "default", release_name: str = DEFAULT_RELEASE_NAME,
           kube_version: str = DEFAULT_KUBE_VERSION, set_strings: Sequence[str] = (),
           api_versions: Sequence[str] = ()) -> str:
    """What ``helm template RELEASE CHART`` prints; raises RenderError with Helm's message."""
    result = subprocess.run(
        _args(chart, values_files, set_values, set_strings, namespace, release_name,
              kube_version, api_versions), capture_output=True, text=True)
    if result.returncode != 0:
        raise RenderError(result.stderr.strip().removeprefix("Error: "))
    return result.stdout


def render_objects(chart: Path, values_files: Sequence[Path] = (),
                   set_values: Sequence[str] = (), namespace: str = "default",
                   release_name: str = DEFAULT_RELEASE_NAME,
                   kube_version: str = DEFAULT_KUBE_VERSION, set_strings: Sequence[str] = (),
                   api_versions: Sequence[str] = ()) -> list[dict[str, object]]:
    """The rendered objects in Helm's install order (CRDs before RBAC before workloads)."""
    text = render(chart, values_files, set_values, namespace, release_name, kube_version,
                  set_strings, api_versions)
    docs: list[dict[str, object]] = []
    for doc in yaml.safe_load_all(text):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise RenderError(f"a rendered manifest is not an object: {doc!r}")
        docs.append(doc)
    return docs


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m hack.helm.render", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("chart", nargs="?", type=Path)
    p.add_argument("-f", "--values", action="append", default=[], type=Path)
    p.add_argument("--set", action="append", default=[])
    p.add_argument("--set-string", action="append", default=[])
    p.add_argument("--api-versions", action="append", default=[])
    p.add_argument("--namespace", default="default")
    p.add_argument("--release-name", default=DEFAULT_RELEASE_NAME)
    p.add_argument("--kube-version", default=DEFAULT_KUBE_VERSION)
    p.add_argument("--build", action="store_true", help="build the renderer and exit")
    a = p.parse_args(argv)
    try:
        if a.build:
            print(build())
            return 0
        if a.chart is None:
            p.error("a chart directory is required")
        sys.stdout.write(render(a.chart, a.values, a.set, a.namespace, a.release_name,
                                a.kube_version, a.set_string, a.api_versions))
    except RenderError as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
