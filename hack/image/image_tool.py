"""Builds the components' OCI images with the standard library only (no Docker daemon).

Subcommands, each one Bazel action of hack/image/image.bzl:

* ``base OUT``: the base layer, a distroless-like root filesystem copied from the machine's
  Debian ``/usr/bin/python3.11`` (the interpreter, ``/usr/lib/python3.11`` without tests, IDLE,
  tkinter and friends, the shared libraries of the interpreter and its extension modules by
  ``ldd``, the PEP 600 libraries manylinux wheels need, the CA bundle, passwd/group with
  ``nonroot`` 65532).
* ``deps OUT --dist NAME...``: the dependency layer, the named distributions and what they
  require, copied from the interpreter running this tool (the one hack/setup.sh installed
  requirements.txt into) into ``/usr/lib/python3/dist-packages``, which Debian's python3.11
  has on ``sys.path``. Nothing is downloaded.
* ``code OUT --files LIST --launcher NAME=MODULE``: the component's code under ``/app`` and a
  launcher ``/NAME`` that execs ``python3 -m MODULE``.
* ``image OUT --layer L... --name REPO --entrypoint ...``: an oci-archive (the OCI image
  layout, tarred) with the config, manifest and index.

Every layer is a tar with sorted names, uid/gid 0 and mtime 0, gzip'd without a name or a
time: the same inputs give the same bytes, so the same digests. Each layer OUT comes with
``OUT.json`` ({"digest", "diff_id", "size"}) for the image step.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import re
import stat
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path, PurePosixPath

LAYER_MEDIA_TYPE = "application/vnd.oci.image.layer.v1.tar+gzip"
CONFIG_MEDIA_TYPE = "application/vnd.oci.image.config.v1+json"
MANIFEST_MEDIA_TYPE = "application/vnd.oci.image.manifest.v1+json"
INDEX_MEDIA_TYPE = "application/vnd.oci.image.index.v1+json"

HOST_PYTHON = Path("/usr/bin/python3.11")
HOST_STDLIB = Path("/usr/lib/python3.11")
# Parts of the standard library a server never imports.
STDLIB_EXCLUDE = {
    "test",
    "idlelib",
    "tkinter",
    "turtledemo",
    "lib2to3",
    "ensurepip",
    "pydoc_data",
    "config-3.11-x86_64-linux-gnu",
    "__pycache__",
    "EXTERNALLY-MANAGED",
}
# PEP 600: what a manylinux wheel may link against besides its own bundled libraries.
PEP600_LIBS = [
    "libgcc_s.so.1",
    "libstdc++.so.6",
    "libm.so.6",
    "libdl.so.2",
    "librt.so.1",
    "libc.so.6",
    "libpthread.so.0",
    "libutil.so.1",
    "libz.so.1",
    "libexpat.so.1",
]
LIBDIR = "usr/lib/x86_64-linux-gnu"
NONROOT_UID = 65532
DIST_PACKAGES = "usr/lib/python3/dist-packages"


@dataclass
class Entry:
    """One tar member: a directory, a regular file (data) or a symlink (target)."""

    kind: str  # "dir", "file", "link"
    mode: int = 0o755
    data: bytes = b""
    target: str = ""


class Tree:
    """A root filesystem in memory, keyed by relative POSIX path (no leading /)."""

    def __init__(self) -> None:
        self.entries: dict[str, Entry] = {}

    def _parents(self, path: str) -> None:
        parent = PurePosixPath(path).parent
        while str(parent) not in (".", ""):
            self.entries.setdefault(str(parent), Entry("dir"))
            parent = parent.parent

    def dir(self, path: str, mode: int = 0o755) -> None:
        self._parents(path)
        self.entries[path] = Entry("dir", mode)

    def file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        self._parents(path)
        self.entries[path] = Entry("file", mode, data=data)

    def copy(self, path: str, source: Path) -> None:
        """A regular file with the source's content (symlinks followed) and x bits."""
        mode = 0o755 if os.stat(source).st_mode & stat.S_IXUSR else 0o644
        self.file(path, source.read_bytes(), mode)

    def link(self, path: str, target: str) -> None:
        self._parents(path)
        self.entries[path] = Entry("link", 0o777, target=target)

    def tar(self) -> bytes:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for path in sorted(self.entries):
                entry = self.entries[path]
                info = tarfile.TarInfo(path)
                info.mtime = 0
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                info.mode = entry.mode
                if entry.kind == "dir":
                    info.type = tarfile.DIRTYPE
                    tar.addfile(info)
                elif entry.kind == "link":
                    info.type = tarfile.SYMTYPE
                    info.linkname = entry.target
                    tar.addfile(info)
                else:
                    info.size = len(entry.data)
                    tar.addfile(info, io.BytesIO(entry.data))
        return buf.getvalue()


def write_layer(tree: Tree, out: Path) -> dict[str, object]:
    """Writes OUT (gzip'd tar) and OUT.json; returns the descriptor facts."""
    raw = tree.tar()
    gz = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=gz, mtime=0, compresslevel=6) as f:
        f.write(raw)
    blob = gz.getvalue()
    out.write_bytes(blob)
    facts = {
        "digest": "sha256:" + hashlib.sha256(blob).hexdigest(),
        "diff_id": "sha256:" + hashlib.sha256(raw).hexdigest(),
        "size": len(blob),
    }
    Path(str(out) + ".json").write_text(json.dumps(facts, sort_keys=True) + "\n")
    return facts


# --- base ---------------------------------------------------------------------------------


def _ldd(paths: list[Path]) -> set[Path]:
    """Shared libraries (absolute host paths) the given ELF files load, transitively."""
    found: set[Path] = set()
    for start in range(0, len(paths), 200):
        chunk = [str(p) for p in paths[start : start + 200]]
        result = subprocess.run(["ldd", *chunk], capture_output=True, text=True, check=False)
        for line in result.stdout.splitlines():
            match = re.search(r"(/\S+\.so[^\s]*) \(0x", line)
            if match:
                found.add(Path(match.group(1)))
    return found


def _add_lib(tree: Tree, lib: Path) -> None:
    name = lib.name
    if name.startswith("ld-linux"):
        tree.copy(f"usr/lib64/{name}", lib)
        tree.link(f"{LIBDIR}/{name}", f"../../lib64/{name}")
    else:
        tree.copy(f"{LIBDIR}/{name}", lib)


def build_base() -> Tree:
    tree = Tree()
    for link, target in (
        ("bin", "usr/bin"),
        ("lib", "usr/lib"),
        ("lib64", "usr/lib64"),
        ("sbin", "usr/sbin"),
    ):
        tree.link(link, target)
    tree.dir("usr/lib64")
    tree.dir("usr/sbin")
    tree.copy("usr/bin/python3.11", HOST_PYTHON)
    tree.link("usr/bin/python3", "python3.11")
    elves: list[Path] = [HOST_PYTHON]
    for root, dirs, files in os.walk(HOST_STDLIB):
        dirs[:] = sorted(d for d in dirs if d not in STDLIB_EXCLUDE)
        rel_root = Path(root).relative_to(HOST_STDLIB)
        for name in sorted(files):
            if name in STDLIB_EXCLUDE or name.endswith((".pyc", ".exe")):
                continue
            source = Path(root) / name
            if not source.exists():  # a dangling symlink (sitecustomize.py -> /etc/...)
                continue
            tree.copy(f"usr/lib/python3.11/{(rel_root / name).as_posix()}", source)
            if name.endswith(".so"):
                elves.append(source)
    tree.dir(DIST_PACKAGES)
    libs = _ldd(elves)
    libdirs = [Path("/lib/x86_64-linux-gnu"), Path("/usr/lib/x86_64-linux-gnu")]
    for name in PEP600_LIBS:
        for directory in libdirs:
            if (directory / name).exists():
                libs.add(directory / name)
                break
        else:
            raise SystemExit(f"image_tool: {name} not found on this machine")
    libs |= _ldd(sorted(libs))
    for lib in sorted(libs):
        _add_lib(tree, lib)
    ca = Path("/etc/ssl/certs/ca-certificates.crt")
    if ca.exists():
        tree.copy("etc/ssl/certs/ca-certificates.crt", ca)
    tree.file(
        "etc/passwd",
        b"root:x:0:0:root:/root:/sbin/nologin\n"
        b"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"
        b"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
    )
    tree.file("etc/group", b"root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n")
    tree.file("etc/nsswitch.conf", b"passwd: files\ngroup: files\nhosts: files dns\n")
    tree.dir("root", 0o700)
    tree.dir("home/nonroot", 0o755)
    tree.dir("tmp", 0o1777)
    tree.dir("var/tmp", 0o1777)
    tree.dir("proc")
    tree.dir("sys")
    tree.dir("dev")
    return tree


# --- deps ---------------------------------------------------------------------------------


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def dist_closure(names: list[str]) -> list[metadata.Distribution]:
    """The named installed distributions and, transitively, their non-extra requirements."""
    installed = {_norm(d.metadata["Name"]): d for d in metadata.distributions()}
    todo = [_norm(n) for n in names]
    seen: dict[str, metadata.Distribution] = {}
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        if name not in installed:
            raise SystemExit(
                f"image_tool: distribution {name} is not installed (run hack/setup.sh)"
            )
        dist = seen[name] = installed[name]
        for req in dist.requires or []:
            requirement, _, marker = req.partition(";")
            if "extra" in marker:
                continue
            match = re.match(r"\s*([A-Za-z0-9._-]+)", requirement)
            if match and _norm(match.group(1)) in installed:
                todo.append(_norm(match.group(1)))
    return [seen[k] for k in sorted(seen)]


def build_deps(names: list[str]) -> Tree:
    tree = Tree()
    tree.dir(DIST_PACKAGES)
    for dist in dist_closure(names):
        for file in dist.files or []:
            posix = file.as_posix()
            if posix.startswith("..") or "__pycache__" in posix or posix.endswith(".pyc"):
                continue
            source = Path(str(file.locate()))
            if not source.is_file():
                continue
            tree.copy(f"{DIST_PACKAGES}/{posix}", source)
    return tree


# --- code ---------------------------------------------------------------------------------

LAUNCHER = """#!/usr/bin/python3
# {name}: the image's entrypoint, as upstream's /{name}. Runs the component's module.
import os
import sys

os.execv("/usr/bin/python3", ["/usr/bin/python3", "-m", "{module}", *sys.argv[1:]])
"""


def build_code(files: list[tuple[str, Path]], name: str, module: str) -> Tree:
    tree = Tree()
    tree.dir("app")
    for rel, source in files:
        tree.copy(f"app/{rel}", source)
    tree.file(name, LAUNCHER.format(name=name, module=module).encode(), 0o755)
    return tree


# --- image --------------------------------------------------------------------------------


def _json(obj: object) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def build_image(
    out: Path,
    layers: list[Path],
    name: str,
    tag: str,
    entrypoint: list[str],
    user: str,
    env: list[str],
    labels: dict[str, str],
    created: str,
) -> str:
    """Writes the oci-archive OUT; returns the manifest digest."""
    facts = [json.loads(Path(str(layer) + ".json").read_text()) for layer in layers]
    config = {
        "architecture": "amd64",
        "os": "linux",
        "created": created,
        "config": {
            "Entrypoint": entrypoint,
            "Env": env,
            "User": user,
            "WorkingDir": "/",
            "Labels": labels,
        },
        "rootfs": {"type": "layers", "diff_ids": [f["diff_id"] for f in facts]},
        "history": [
            {"created": created, "created_by": f"hack/image/image_tool.py {p.name}"} for p in layers
        ],
    }
    config_blob = _json(config)
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "config": {
            "mediaType": CONFIG_MEDIA_TYPE,
            "digest": "sha256:" + hashlib.sha256(config_blob).hexdigest(),
            "size": len(config_blob),
        },
        "layers": [
            {"mediaType": LAYER_MEDIA_TYPE, "digest": f["digest"], "size": f["size"]} for f in facts
        ],
        "annotations": labels,
    }
    manifest_blob = _json(manifest)
    manifest_digest = "sha256:" + hashlib.sha256(manifest_blob).hexdigest()
    index = {
        "schemaVersion": 2,
        "mediaType": INDEX_MEDIA_TYPE,
        "manifests": [
            {
                "mediaType": MANIFEST_MEDIA_TYPE,
                "digest": manifest_digest,
                "size": len(manifest_blob),
                "annotations": {
                    "io.containerd.image.name": f"{name}:{tag}",
                    "org.opencontainers.image.ref.name": tag,
                },
            }
        ],
    }
    members: dict[str, bytes | Path] = {
        "oci-layout": _json({"imageLayoutVersion": "1.0.0"}),
        "index.json": _json(index),
        "blobs/sha256/" + manifest_digest[7:]: manifest_blob,
        "blobs/sha256/" + manifest["config"]["digest"][7:]: config_blob,  # type: ignore[index]
    }
    for layer, fact in zip(layers, facts):
        members["blobs/sha256/" + fact["digest"][7:]] = layer
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        for directory in ("blobs", "blobs/sha256"):
            info = tarfile.TarInfo(directory)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
            tar.addfile(info)
        for member in sorted(members):
            content = members[member]
            info = tarfile.TarInfo(member)
            info.mode, info.mtime = 0o644, 0
            if isinstance(content, Path):
                info.size = content.stat().st_size
                with content.open("rb") as f:
                    tar.addfile(info, f)
            else:
                info.size = len(content)
                tar.addfile(info, io.BytesIO(content))
    return manifest_digest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="image_tool", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("base")
    p.add_argument("out", type=Path)
    p = sub.add_parser("deps")
    p.add_argument("out", type=Path)
    p.add_argument("--dist", action="append", default=[])
    p = sub.add_parser("code")
    p.add_argument("out", type=Path)
    p.add_argument("--files", type=Path, required=True, help="lines: RELPATH<TAB>SOURCE")
    p.add_argument("--launcher", required=True, help="NAME=MODULE")
    p = sub.add_parser("image")
    p.add_argument("out", type=Path)
    p.add_argument("--layer", type=Path, action="append", default=[])
    p.add_argument("--name", required=True)
    p.add_argument("--tag", default="latest")
    p.add_argument("--entrypoint", required=True, help="JSON list")
    p.add_argument("--user", default="0")
    p.add_argument("--env", action="append", default=[])
    p.add_argument("--label", action="append", default=[], help="KEY=VALUE")
    p.add_argument("--created", default="1970-01-01T00:00:00Z")
    p.add_argument("--digest-out", type=Path)
    args = parser.parse_args(argv)

    if args.cmd == "base":
        write_layer(build_base(), args.out)
    elif args.cmd == "deps":
        write_layer(build_deps(args.dist), args.out)
    elif args.cmd == "code":
        files = []
        for line in args.files.read_text().splitlines():
            if line.strip():
                rel, source = line.split("\t")
                files.append((rel, Path(source)))
        name, module = args.launcher.split("=")
        write_layer(build_code(files, name, module), args.out)
    else:
        labels = dict(label.split("=", 1) for label in args.label)
        digest = build_image(
            args.out,
            args.layer,
            args.name,
            args.tag,
            json.loads(args.entrypoint),
            args.user,
            args.env,
            labels,
            args.created,
        )
        if args.digest_out:
            args.digest_out.write_text(digest + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
