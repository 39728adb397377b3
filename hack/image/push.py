"""Pushes the components' oci-archives to a registry (Docker Registry HTTP API v2), stdlib only.

    bazel run //:push -- --registry HOST:PORT [--tag TAG] [--prefix koordinator-sh]

Each image goes to `HOST:PORT/<prefix>/<name>:<tag>` (`koordinator-sh/koord-manager`, ... as
upstream's release, so the chart's `imageRepositoryHost=HOST:PORT` finds them). A blob the
repository already has (HEAD answers 200) is not sent again; a blob already pushed to another
repository in this run is mounted from there (no upload), so the shared base and dependency
layers cross the wire once. Plain HTTP for loopback hosts (or with --plain-http), HTTPS
otherwise; no authentication (use skopeo for registries that need it). Prints one JSON line:
the pushed references and digests, and how many blobs were uploaded, mounted or present.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tarfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

MANIFEST_MEDIA_TYPE = "application/vnd.oci.image.manifest.v1+json"


@dataclass
class Archive:
    """An oci-archive read into memory: its image name and the manifest's blobs."""

    name: str  # repository name without the tag, as in io.containerd.image.name
    manifest: bytes
    blobs: dict[str, bytes] = field(default_factory=dict)  # digest -> bytes (config, layers)

    @property
    def digest(self) -> str:
        return "sha256:" + hashlib.sha256(self.manifest).hexdigest()


def read_archive(path: Path) -> Archive:
    with tarfile.open(path) as tar:

        def member(name: str) -> bytes:
            f = tar.extractfile(name)
            if f is None:
                raise ValueError(f"{path}: {name} is not a file")
            return f.read()

        index = json.loads(member("index.json"))
        descriptor = index["manifests"][0]
        ref = descriptor.get("annotations", {}).get("io.containerd.image.name", path.stem)
        name = ref.rsplit(":", 1)[0] if ":" in ref.rsplit("/", 1)[-1] else ref
        manifest = member("blobs/sha256/" + descriptor["digest"].split(":", 1)[1])
        parsed = json.loads(manifest)
        archive = Archive(name=name, manifest=manifest)
        for blob in [parsed["config"], *parsed["layers"]]:
            archive.blobs[blob["digest"]] = member(
                "blobs/sha256/" + blob["digest"].split(":", 1)[1]
            )
    return archive


class Registry:
    def __init__(self, host: str, plain_http: bool) -> None:
        hostname = host.rsplit(":", 1)[0]
        loopback = hostname in ("localhost", "::1", "[::1]") or hostname.startswith("127.")
        self.base = ("http" if plain_http or loopback else "https") + "://" + host
        self.stats = {"uploaded": 0, "mounted": 0, "present": 0}

    def _request(
        self,
        method: str,
        url: str,
        data: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        if not url.startswith("http"):
            url = self.base + url
        request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=300) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as err:
            return err.code, dict(err.headers), err.read()

    def _check(self, what: str, status: int, body: bytes, *ok: int) -> None:
        if status not in ok:
            raise RuntimeError(f"{what}: HTTP {status}: {body[:500]!r}")

    def push_blob(self, repo: str, digest: str, data: bytes, mount_from: str | None) -> None:
        status, _, _ = self._request("HEAD", f"/v2/{repo}/blobs/{digest}")
        if status == 200:
            self.stats["present"] += 1
            return
        query = ""
        if mount_from:
            query = "?" + urllib.parse.urlencode({"mount": digest, "from": mount_from})
        status, headers, body = self._request("POST", f"/v2/{repo}/blobs/uploads/{query}", b"")
        if status == 201:
            self.stats["mounted"] += 1
            return
        self._check(f"start upload {repo}@{digest}", status, body, 202)
        location = headers.get("Location") or headers.get("location") or ""
        if location.startswith("/"):
            location = self.base + location
        sep = "&" if "?" in location else "?"
        status, _, body = self._request(
            "PUT",
            f"{location}{sep}digest={urllib.parse.quote(digest)}",
            data,
            {"Content-Type": "application/octet-stream"},
        )
        self._check(f"upload {repo}@{digest}", status, body, 201)
        self.stats["uploaded"] += 1

    def push_manifest(self, repo: str, tag: str, manifest: bytes) -> str:
        status, headers, body = self._request(
            "PUT", f"/v2/{repo}/manifests/{tag}", manifest, {"Content-Type": MANIFEST_MEDIA_TYPE}
        )
        self._check(f"manifest {repo}:{tag}", status, body, 201)
        return headers.get("Docker-Content-Digest", "")


def push(archives: list[Path], registry: str, tag: str, prefix: str, plain_http: bool) -> dict:
    client = Registry(registry, plain_http)
    pushed: dict[str, str] = {}
    where: dict[str, str] = {}  # blob digest -> a repository it was pushed to in this run
    for path in archives:
        archive = read_archive(path)
        short = archive.name.rsplit("/", 1)[-1]
        repo = f"{prefix}/{short}" if prefix else short
        for digest, data in archive.blobs.items():
            client.push_blob(repo, digest, data, where.get(digest))
            where.setdefault(digest, repo)
        digest = client.push_manifest(repo, tag, archive.manifest)
        if digest and digest != archive.digest:
            raise RuntimeError(f"{repo}:{tag}: registry says {digest}, archive is {archive.digest}")
        pushed[f"{registry}/{repo}:{tag}"] = archive.digest
    return {"images": pushed, **client.stats}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--registry", required=True, help="HOST:PORT")
    parser.add_argument("--tag", default="latest")
    parser.add_argument("--prefix", default="koordinator-sh", help="repository namespace")
    parser.add_argument("--plain-http", action="store_true", help="HTTP even for a remote host")
    parser.add_argument("--image", type=Path, action="append", default=[], help="oci-archive")
    parser.add_argument("images", type=Path, nargs="*", help="more oci-archives")
    args = parser.parse_args(argv)
    archives = args.image + args.images
    if not archives:
        parser.error("no images given")
    result = push(archives, args.registry, args.tag, args.prefix, args.plain_http)
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
