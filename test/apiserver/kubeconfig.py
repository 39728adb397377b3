"""Writing a kubeconfig that points clients (kubectl, the Python client) at the server, one that
runs a component as a ServiceAccount (``for_service_account``: the TokenRequest API, as the
kubelet's projected token volume), and the other private files of a workdir
(``write_private``)."""

from __future__ import annotations

import base64
import os

import orjson
import yaml


def render(server: str, ca_pem: bytes | None = None, token: str | None = None,
           name: str = "test-apiserver") -> str:
    cluster: dict[str, object] = {"server": server}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    # kubectl prompts for a username when an https user has no credentials at all, so a
    # server without authentication still gets a (never checked) token.
    user: dict[str, object] = {"token": token or "unauthenticated"}
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
        "preferences": {},
    }
    # JSON is valid YAML; every kubeconfig loader reads it.
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"


def write(path: str, server: str, ca_pem: bytes | None = None,
          token: str | None = None) -> str:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    write_private(path, render(server, ca_pem, token).encode())
    return path


def for_service_account(admin_kubeconfig: str, namespace: str, name: str, path: str,
                        expiration_seconds: int = 86400) -> str:
    """Request a token for ServiceAccount ``namespace/name`` through the server of
    ``admin_kubeconfig`` (TokenRequest) and write, at ``path``, a kubeconfig with the same
    server and CA that authenticates as ``system:serviceaccount:NAMESPACE:NAME``. The token
    lasts ``expiration_seconds`` and dies with the ServiceAccount. Returns ``path``."""
    from kubernetes import client, config

    with open(admin_kubeconfig) as f:
        doc = yaml.safe_load(f)
    contexts = {c["name"]: c["context"] for c in doc.get("contexts") or ()}
    clusters = {c["name"]: c["cluster"] for c in doc.get("clusters") or ()}
    cluster = clusters[contexts[doc["current-context"]]["cluster"]]
    ca_pem = base64.b64decode(cluster["certificate-authority-data"]) \
        if cluster.get("certificate-authority-data") else None
    if ca_pem is None and cluster.get("certificate-authority"):
        with open(cluster["certificate-authority"], "rb") as cf:
            ca_pem = cf.read()
    api = client.CoreV1Api(config.new_client_from_config(config_file=admin_kubeconfig))
    try:
        # Empty audiences: the API server's own (as kubectl create token sends).
        tr = api.create_namespaced_service_account_token(
            name, namespace, client.AuthenticationV1TokenRequest(
                spec=client.V1TokenRequestSpec(audiences=[],
                                               expiration_seconds=expiration_seconds)))
    finally:
        api.api_client.close()
    if tr.status is None:
        raise RuntimeError(f"TokenRequest for {namespace}/{name} returned no token")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    write_private(path, render(cluster["server"], ca_pem, tr.status.token,
                               f"{namespace}-{name}").encode())
    return path


def write_private(path: str, data: bytes) -> None:
    """Replace ``path`` whole (never half-written), readable by its owner only: it holds
    a credential."""
    tmp = path + ".tmp"
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
        f.write(data)
    os.replace(tmp, path)
