"""image_tool's layers and archives: reproducible bytes, OCI structure, dependency closure."""

from __future__ import annotations

import gzip
import hashlib
import json
import tarfile
from pathlib import Path

from hack.image import image_tool
from hack.image.push import read_archive


def _tree() -> image_tool.Tree:
    tree = image_tool.Tree()
    tree.file("b/file.txt", b"hello")
    tree.link("a", "b/file.txt")
    tree.dir("tmp", 0o1777)
    return tree


def test_layer_is_sorted_owned_by_root_with_time_zero_and_reproducible(tmp_path: Path) -> None:
    first = image_tool.write_layer(_tree(), tmp_path / "one.tar.gz")
    second = image_tool.write_layer(_tree(), tmp_path / "two.tar.gz")
    assert first == second
    blob = (tmp_path / "one.tar.gz").read_bytes()
    assert first["digest"] == "sha256:" + hashlib.sha256(blob).hexdigest()
    raw = gzip.decompress(blob)
    assert first["diff_id"] == "sha256:" + hashlib.sha256(raw).hexdigest()
    assert json.loads((tmp_path / "one.tar.gz.json").read_text()) == first
    with tarfile.open(tmp_path / "one.tar.gz") as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == ["a", "b", "b/file.txt", "tmp"]
    assert all(m.mtime == 0 and m.uid == 0 and m.gid == 0 for m in members)
    assert members[0].issym() and members[0].linkname == "b/file.txt"
    assert members[3].mode == 0o1777


def test_code_layer_has_the_launcher_at_the_binary_path(tmp_path: Path) -> None:
    source = tmp_path / "main.py"
    source.write_text("print('hi')\n")
    tree = image_tool.build_code([("manager/main.py", source)], "koord-manager", "manager.main")
    launcher = tree.entries["koord-manager"]
    assert launcher.mode == 0o755
    assert launcher.data.startswith(b"#!/usr/bin/python3\n")
    assert b'"-m", "manager.main"' in launcher.data
    assert tree.entries["app/manager/main.py"].data == b"print('hi')\n"


def test_image_archive_is_an_oci_layout_with_labels_and_diff_ids(tmp_path: Path) -> None:
    layer = tmp_path / "layer.tar.gz"
    facts = image_tool.write_layer(_tree(), layer)
    out = tmp_path / "image.oci.tar"
    labels = {"org.opencontainers.image.title": "koordlet"}
    digest = image_tool.build_image(
        out,
        [layer],
        "koordinator-sh/koordlet",
        "latest",
        ["/koordlet"],
        "0",
        ["A=1"],
        labels,
        "1970-01-01T00:00:00Z",
    )
    with tarfile.open(out) as tar:
        names = tar.getnames()

        def member(name: str) -> dict:
            f = tar.extractfile(name)
            assert f is not None
            return dict(json.loads(f.read()))

        index = member("index.json")
        manifest = member("blobs/sha256/" + digest[7:])
        config = member("blobs/sha256/" + manifest["config"]["digest"][7:])
    assert "oci-layout" in names
    annotations = index["manifests"][0]["annotations"]
    assert annotations["io.containerd.image.name"] == "koordinator-sh/koordlet:latest"
    assert annotations["org.opencontainers.image.ref.name"] == "latest"
    assert manifest["layers"] == [
        {"mediaType": image_tool.LAYER_MEDIA_TYPE, "digest": facts["digest"], "size": facts["size"]}
    ]
    assert config["rootfs"]["diff_ids"] == [facts["diff_id"]]
    assert config["config"]["Entrypoint"] == ["/koordlet"]
    assert config["config"]["Labels"] == labels
    archive = read_archive(out)
    assert (archive.name, archive.digest) == ("koordinator-sh/koordlet", digest)
    assert set(archive.blobs) == {facts["digest"], manifest["config"]["digest"]}


def test_dependency_closure_follows_requirements_but_not_extras() -> None:
    names = {image_tool._norm(d.metadata["Name"]) for d in image_tool.dist_closure(["pydantic"])}
    assert {"pydantic", "pydantic-core", "typing-extensions", "annotated-types"} <= names
    assert "email-validator" not in names  # pydantic[email] is an extra
