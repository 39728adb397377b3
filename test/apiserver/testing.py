"""Helpers for tests that run against the embedded API server.

    srv = start()
    core = CoreV1Api(api_client(srv))
    out = Kubectl(srv).run("get", "pods", "-A")
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar

from .server import ServerHandle, start

T = TypeVar("T")


def wait_for(what: str, fn: Callable[[], T], timeout: float = 30.0) -> T:
    """Polls ``fn`` until it returns something true, and returns that; the timeout only
    bounds a failure, whose message says ``what`` was awaited and what ``fn`` last gave."""
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what} (last: {v!r})")
        time.sleep(0.02)


def api_client(srv: ServerHandle) -> Any:
    """An official-client ``ApiClient`` configured from the server's kubeconfig."""
    from kubernetes import config

    return config.new_client_from_config(config_file=srv.kubeconfig)


def kubectl_binary() -> str | None:
    """The kubectl to use: $KUBECTL, then PATH, then /usr/bin/kubectl."""
    for cand in (os.environ.get("KUBECTL"), shutil.which("kubectl"), "/usr/bin/kubectl"):
        if cand and os.path.exists(cand):
            return cand
    return None


class HasKubeconfig(Protocol):
    """What Kubectl reads of a server: its kubeconfig path (a ``ServerHandle`` has one)."""

    @property
    def kubeconfig(self) -> str: ...


class Kubectl:
    """Runs the real kubectl against a server, with a private discovery cache."""

    def __init__(self, srv: HasKubeconfig, binary: str | None = None) -> None:
        self.srv = srv
        found = binary or kubectl_binary()
        if found is None:
            raise FileNotFoundError("kubectl not found")
        self.binary = found
        self.cache = tempfile.mkdtemp(prefix="kubectl-cache-")

    def argv(self, *args: str) -> list[str]:
        return [self.binary, "--kubeconfig", self.srv.kubeconfig, "--cache-dir", self.cache,
                *args]

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.setdefault("HOME", self.cache)
        env["KUBECONFIG"] = self.srv.kubeconfig
        return env

    def run(self, *args: str, input: str | None = None, timeout: float = 30,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        p = subprocess.run(self.argv(*args), input=input, capture_output=True, text=True,
                           timeout=timeout, env=self.env())
        if check and p.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({p.returncode}):\n"
                                 f"{p.stdout}\n{p.stderr}")
        return p

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(self.argv(*args), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=self.env())

    def close(self) -> None:
        shutil.rmtree(self.cache, ignore_errors=True)


def raw_request(api: Any, method: str, path: str, body: Any = None,
                content_type: str = "application/json",
                query: dict[str, str] | None = None,
                accept: str = "application/json") -> tuple[int, Any]:
    """A request through an official-client ``ApiClient`` (TLS and token from its config),
    returning (status, decoded JSON body, or the raw bytes when the body is not one JSON
    document, as for watch streams) without raising on error statuses."""
    import json
    from urllib.parse import urlencode

    from kubernetes.client.rest import ApiException

    cfg = api.configuration
    headers = {"Content-Type": content_type, "Accept": accept}
    for setting in cfg.auth_settings().values():
        if setting.get("in") == "header" and setting.get("value"):
            headers[setting["key"]] = setting["value"]
    url = cfg.host + path + ("?" + urlencode(query) if query else "")
    try:
        resp = api.rest_client.request(method, url, headers=headers, body=body)
    except ApiException as e:
        return e.status, json.loads(e.body) if e.body else None
    resp.read() if hasattr(resp, "read") else None
    payload = resp.data
    if not payload:
        return resp.status, None
    try:
        return resp.status, json.loads(payload)
    except ValueError:
        return resp.status, payload


def http_request(srv: ServerHandle, method: str, path: str, body: bytes = b"",
                 content_type: str = "application/json",
                 chunked: bool = False) -> tuple[int, Any]:
    """Exact bytes to the server (no client-side encoding, unlike ``raw_request``; with
    ``chunked``, without a Content-Length), returning (status, decoded JSON body or the raw
    bytes)."""
    import json

    import urllib3

    headers = {"Content-Type": content_type, "Accept": "application/json"}
    if srv.token:
        headers["Authorization"] = f"Bearer {srv.token}"
    pool = urllib3.PoolManager(ca_certs=srv.ca_file, cert_reqs="CERT_REQUIRED"
                               if srv.ca_file else "CERT_NONE")
    payload = (body[i:i + 65536] for i in range(0, len(body), 65536)) if chunked else body
    resp = pool.request(method, srv.url + path, body=payload, headers=headers, retries=False,
                        timeout=60, chunked=chunked)
    try:
        return resp.status, json.loads(resp.data)
    except ValueError:
        return resp.status, resp.data


def expect_status(body: Any, code: int, reason: str) -> str:
    """The message of a metav1.Status failure body, after checking its shape, code and
    reason."""
    assert isinstance(body, dict), body
    assert (body.get("kind"), body.get("apiVersion"), body.get("status")) == \
        ("Status", "v1", "Failure"), body
    assert (body.get("code"), body.get("reason")) == (code, reason), body
    return str(body["message"])


def minimal_pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def open_crd(group: str, kind: str, plural: str) -> dict[str, Any]:
    """A namespaced CRD (v1, status subresource) whose schema keeps every field."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {
                                   "type": "object",
                                   "x-kubernetes-preserve-unknown-fields": True}}}]},
    }


def serving_open_crd(group: str, kind: str, plural: str) -> Iterator[ServerHandle]:
    """A started server that serves ``open_crd(group, kind, plural)``; stopped when the
    generator closes (the body of a module fixture: ``yield from serving_open_crd(...)``)."""
    import json

    srv = start()
    try:
        code, body = http_request(srv, "POST",
                                  "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                  json.dumps(open_crd(group, kind, plural)).encode())
        assert code == 201, body
        yield srv
    finally:
        srv.stop()
