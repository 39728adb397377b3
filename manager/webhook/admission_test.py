"""JSON patches the API server can apply, and certificates renewed when they stop fitting."""

from __future__ import annotations

import copy
from typing import Any

from manager.webhook import certs
from manager.webhook.admission import create_patch
from test.apiserver.patch import json_patch


def test_patch_turns_original_into_mutated() -> None:
    original: dict[str, Any] = {"metadata": {"labels": {"a": "1", "x/y": "2"}},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
                         "tolerations": [{"key": "k"}]}}
    mutated = copy.deepcopy(original)
    mutated["metadata"]["labels"]["x/y"] = "3"
    del mutated["metadata"]["labels"]["a"]
    mutated["metadata"]["annotations"] = {"n": "v"}
    mutated["spec"]["containers"][0]["resources"]["requests"] = {"kubernetes.io/batch-cpu": "1k"}
    mutated["spec"]["tolerations"].append({"key": "k2"})
    ops = create_patch(original, mutated)
    assert json_patch(copy.deepcopy(original), ops) == mutated
    assert create_patch(original, copy.deepcopy(original)) == []


def test_certificate_validity_follows_the_host(tmp_path) -> None:
    first = certs.ensure_dir(str(tmp_path), "svc.ns.svc")
    assert certs.valid_for(first, "svc.ns.svc")
    assert certs.ensure_dir(str(tmp_path), "svc.ns.svc") == first  # reused, not regenerated
    second = certs.ensure_dir(str(tmp_path), "other.ns.svc")
    assert second != first and certs.valid_for(second, "other.ns.svc")
    assert certs.read_dir(str(tmp_path)) == second
