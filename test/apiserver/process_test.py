"""``python -m test.apiserver`` as its own process: fast start, kubeconfig, token auth, HTTP."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest
import yaml

REPO_ROOT = Path(__file__).absolute().parents[2]


@pytest.fixture(scope="module")
def proc(tmp_path_factory):
    kc = tmp_path_factory.mktemp("kc") / "kubeconfig"
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get(
        "PYTHONPATH", ""))
    p = subprocess.Popen(
        [sys.executable, "-m", "test.apiserver", "--port", "0", "--kubeconfig-out", str(kc),
         "--token", "s3cret", "--http-port", "0"],
        cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout is not None
    line = p.stdout.readline().split()
    # The CPU the process used to get READY, not the wall time: on a busy machine the wall
    # time is whatever CPU the host lends (4-6 s beside two CPU hogs), the CPU time is not.
    cpu = psutil.Process(p.pid).cpu_times()
    startup = cpu.user + cpu.system
    assert line and line[0] == "READY", p.stderr.read() if p.stderr else ""
    yield {"url": line[1], "kubeconfig": line[2], "http": line[3], "startup": startup,
           "proc": p}
    p.terminate()
    p.wait(10)


def get(url: str, token: str | None = None, ca: bytes | None = None,
        scheme: str = "Bearer") -> tuple[int, dict]:
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", f"{scheme} {token}")
    ctx = None
    if ca is not None:
        ctx = ssl.create_default_context(cadata=ca.decode())
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=5) as r:
            body = r.read()
            return r.status, json.loads(body) if body.startswith(b"{") else {"text": body}
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_starts_fast_and_writes_kubeconfig(proc):
    # CPU seconds, interpreter start and imports (compiled afresh: no .pyc is written)
    # included: ~0.5 s, the server itself ~0.1 s.
    assert proc["startup"] < 3.0
    cfg = yaml.safe_load(Path(proc["kubeconfig"]).read_text())
    cluster = cfg["clusters"][0]["cluster"]
    assert cluster["server"] == proc["url"] and proc["url"].startswith("https://127.0.0.1:")
    assert cluster["certificate-authority-data"]
    assert cfg["users"][0]["user"]["token"] == "s3cret"


def test_https_verified_with_written_ca_and_token_required(proc):
    import base64

    cfg = yaml.safe_load(Path(proc["kubeconfig"]).read_text())
    ca = base64.b64decode(cfg["clusters"][0]["cluster"]["certificate-authority-data"])
    code, body = get(proc["url"] + "/api/v1/namespaces", ca=ca)
    assert code == 401 and body["reason"] == "Unauthorized"
    code, body = get(proc["url"] + "/api/v1/namespaces", token="wrong", ca=ca)
    assert code == 401
    code, body = get(proc["url"] + "/api/v1/namespaces", token="s3cret", ca=ca)
    assert code == 200 and body["kind"] == "NamespaceList"
    # The official client's in-cluster loader writes the scheme in lower case.
    code, _ = get(proc["url"] + "/api/v1/namespaces", token="s3cret", ca=ca, scheme="bearer")
    assert code == 200
    code, _ = get(proc["url"] + "/healthz", ca=ca)
    assert code == 200


def test_plain_http_listener(proc):
    assert proc["http"].startswith("http://127.0.0.1:")
    code, body = get(proc["http"] + "/version", token="s3cret")
    assert code == 200 and body["major"] == "1"
    code, body = get(proc["http"] + "/api", token="s3cret")
    assert code == 200 and body["versions"] == ["v1"]


def test_official_client_with_token(proc):
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=proc["kubeconfig"])
    names = [n.metadata.name for n in client.CoreV1Api(api).list_namespace().items]
    assert "default" in names


def test_simulated_nodes_file_registers_kubelets(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(yaml.safe_dump([
        {"name": "sim-a", "cpu": "16", "memory": "64Gi", "labels": {"pool": "a"}},
        {"name": "sim-b", "cpu": "8"},
    ]))
    kc = tmp_path / "kubeconfig"
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get(
        "PYTHONPATH", ""))
    p = subprocess.Popen(
        [sys.executable, "-m", "test.apiserver", "--insecure", "--kubeconfig-out", str(kc),
         "--simulated-nodes", str(nodes)],
        cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        line = p.stdout.readline().split()
        assert line and line[0] == "READY"
        status, body = get(line[1] + "/api/v1/nodes")
        assert status == 200
        got = {n["metadata"]["name"]: n for n in body["items"]}
        assert set(got) == {"sim-a", "sim-b"}
        assert got["sim-a"]["status"]["allocatable"]["cpu"] == "16"
        assert got["sim-a"]["metadata"]["labels"]["pool"] == "a"
        ready = {c["type"]: c["status"] for c in got["sim-b"]["status"]["conditions"]}
        assert ready["Ready"] == "True"
    finally:
        p.terminate()
        p.wait(10)


@pytest.mark.parametrize(("content", "message"), [
    ("{oops: [", "--simulated-nodes"),
    ("name: a", "want a YAML list of nodes"),
    ("- {cpu: '4'}", "[0].name: a string is required"),
    ("- {name: a, cpus: '4'}", "[0] (a): unknown field(s) cpus"),
])
def test_bad_simulated_nodes_file_is_refused_naming_the_entry(
        tmp_path: Path, content: str, message: str) -> None:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(content)
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get(
        "PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-m", "test.apiserver", "--insecure",
                        "--simulated-nodes", str(nodes)],
                       cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=30)
    assert p.returncode == 2
    assert message in p.stderr
    assert p.stdout == ""
