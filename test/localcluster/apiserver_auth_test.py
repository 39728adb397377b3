"""The local cluster's API server requires the token its kubeconfig carries: no token and a
wrong one get 401 with Kubernetes' Status, kubectl with the written kubeconfig works."""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from test.apiserver.testing import Kubectl, kubectl_binary
from test.localcluster.components import Components
from test.localcluster.scenario import SCENARIO_DIR, load


@pytest.fixture(scope="module")
def components(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Components]:
    c = Components(tmp_path_factory.mktemp("local"), load(SCENARIO_DIR / "ci.yaml"))
    try:
        c.start_apiserver()
        yield c
    finally:
        c.stop()


def _get(c: Components, path: str, token: str | None) -> tuple[int, dict[str, Any]]:
    cluster = yaml.safe_load(Path(c.kubeconfig).read_text())["clusters"][0]["cluster"]
    ctx = ssl.create_default_context(
        cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    req = urllib.request.Request(cluster["server"] + path)
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.mark.parametrize("token", [None, "wrong"])
def test_no_token_or_a_wrong_one_is_unauthorized(components: Components,
                                                 token: str | None) -> None:
    code, body = _get(components, "/api/v1/namespaces", token)
    assert code == 401
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                    "status": "Failure", "message": "Unauthorized",
                    "reason": "Unauthorized", "code": 401}


def test_kubeconfig_token_works_with_kubectl(components: Components) -> None:
    user = yaml.safe_load(Path(components.kubeconfig).read_text())["users"][0]["user"]
    code, _ = _get(components, "/api/v1/namespaces", user["token"])
    assert code == 200
    if kubectl_binary() is None:
        pytest.skip("kubectl not installed")

    class Kc:
        kubeconfig = str(components.kubeconfig)

    k = Kubectl(Kc())
    try:
        out = k.run("get", "nodes", "-o", "name").stdout.split()
    finally:
        k.close()
    assert "node/node-0" in out
