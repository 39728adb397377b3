"""Writes ``api/crds/bases/<group>_<plural>.yaml`` for every registered kind.

Usage: ``python -m api.crds.generate`` to regenerate, ``--check`` to exit 1 when the checked-in
files differ from what the models give (the stale-manifest test runs the same comparison).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

import api.all_kinds  # noqa: F401  (registers every kind)
from api.crds import BASES_DIR
from api.crds.schema import object_schema
from api.meta import KubeObject, registered_kinds


def crd_for(versions: list[type[KubeObject]]) -> dict[str, Any]:
    """One CustomResourceDefinition serving the given versions of a kind."""
    first = versions[0]
    names: dict[str, Any] = {
        "kind": first.__name__,
        "listKind": f"{first.__name__}List",
        "plural": first.plural,
    }
    if first.short_names:
        names["shortNames"] = list(first.short_names)
    names["singular"] = first.singular
    metadata: dict[str, Any] = {}
    if first.crd_annotations:
        metadata["annotations"] = dict(first.crd_annotations)
    metadata["name"] = first.crd_name()
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": metadata,
        "spec": {
            "group": first.group,
            "names": names,
            "scope": "Namespaced" if first.namespaced else "Cluster",
            "versions": [_version(kind) for kind in sorted(versions, key=lambda k: k.version)],
        },
    }


def _version(kind: type[KubeObject]) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    if kind.printer_columns:
        entry["additionalPrinterColumns"] = [dict(col) for col in kind.printer_columns]
    entry["name"] = kind.version
    entry["schema"] = {"openAPIV3Schema": object_schema(kind)}
    entry["served"] = kind.served
    entry["storage"] = kind.storage
    if kind.status_subresource:
        entry["subresources"] = {"status": {}}
    return entry


def rendered() -> dict[str, str]:
    """File name → YAML text for every CRD."""
    by_crd: dict[str, list[type[KubeObject]]] = defaultdict(list)
    for kind in registered_kinds().values():
        by_crd[kind.crd_name()].append(kind)
    files: dict[str, str] = {}
    for versions in by_crd.values():
        crd = crd_for(versions)
        name = f"{crd['spec']['group']}_{crd['spec']['names']['plural']}.yaml"
        files[name] = "---\n" + yaml.safe_dump(crd, sort_keys=False, width=100)
    return dict(sorted(files.items()))


def stale_files(directory: Path = BASES_DIR) -> list[str]:
    """Names of files that are missing, different or extra compared with the models."""
    want = rendered()
    have = {p.name: p.read_text() for p in directory.glob("*.yaml")}
    return sorted(name for name in want.keys() | have.keys() if want.get(name) != have.get(name))


def write(directory: Path = BASES_DIR) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    want = rendered()
    for path in directory.glob("*.yaml"):
        if path.name not in want:
            path.unlink()
    for name, text in want.items():
        (directory / name).write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="report stale manifests instead of writing them")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_files()
        for name in stale:
            print(f"stale: api/crds/bases/{name}", file=sys.stderr)
        if stale:
            print("run: python -m api.crds.generate", file=sys.stderr)
        return 1 if stale else 0
    write()
    print(f"wrote {len(rendered())} CRDs to api/crds/bases/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
