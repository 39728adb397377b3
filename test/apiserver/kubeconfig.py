"""Writing a kubeconfig that points clients (kubectl, the Python client) at the server, and the
other private files of a workdir (``write_private``)."""

from __future__ import annotations

import base64
import os

import orjson


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


def write_private(path: str, data: bytes) -> None:
    """Replace ``path`` whole (never half-written), readable by its owner only: it holds
    a credential."""
    tmp = path + ".tmp"
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
        f.write(data)
    os.replace(tmp, path)
