"""The real kubectl against the embedded API server: get, apply of upstream's YAML, describe,
label, annotate, patch (merge, strategic, json), scale, wait, delete and get --watch."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path

import pytest
import yaml

from pkg.util.testdata import upstream_data_dir
from test.apiserver import start
from test.apiserver.testing import Kubectl, kubectl_binary

pytestmark = pytest.mark.skipif(kubectl_binary() is None, reason="kubectl is not installed")

# Upstream's Spark examples need the spark-operator CRD, which is not part of Koordinator.
SPARK_CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: sparkapplications.sparkoperator.k8s.io
spec:
  group: sparkoperator.k8s.io
  scope: Namespaced
  names: {plural: sparkapplications, singular: sparkapplication, kind: SparkApplication,
          shortNames: [sparkapp]}
  versions:
  - name: v1beta2
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
"""


@pytest.fixture(scope="module")
def srv():
    s = start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def kubectl(srv):
    k = Kubectl(srv)
    yield k
    k.close()


def data_files() -> tuple[list[Path], list[Path]]:
    root = upstream_data_dir()
    crds = sorted((root / "config" / "crd" / "bases").glob("*.yaml"))
    rest = sorted(p for p in root.rglob("*.yaml") if p not in crds)
    return crds, rest


def documents(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


@pytest.fixture(scope="module")
def applied(kubectl):
    """Every upstream YAML applied, CRDs first; returns the objects applied."""
    crds, rest = data_files()
    for p in crds:
        kubectl.run("apply", "-f", str(p))
    for d in (documents(p)[0] for p in crds):
        kubectl.run("wait", "--for=condition=Established", "--timeout=10s",
                    f"crd/{d['metadata']['name']}")
    kubectl.run("apply", "-f", "-", input=SPARK_CRD)
    # Upstream's manager manifests are kustomize bases with namespace "system".
    kubectl.run("create", "namespace", "system", check=False)
    kubectl.run("apply", "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "system"}}))
    objs = []
    for p in rest:
        out = kubectl.run("apply", "-f", str(p)).stdout
        assert "created" in out or "configured" in out or "unchanged" in out, out
        objs.extend(documents(p))
    return objs


def test_get_empty_cluster(kubectl):
    p = kubectl.run("get", "nodes,pods", "-A")
    assert "No resources found" in p.stderr + p.stdout


def test_version_and_api_resources(kubectl):
    v = json.loads(kubectl.run("version", "-o", "json").stdout)
    assert v["serverVersion"]["gitVersion"].startswith("v1.")
    out = kubectl.run("api-resources").stdout
    for line in ("pods", "poddisruptionbudgets", "leases", "customresourcedefinitions"):
        assert line in out


def test_apply_every_upstream_yaml(kubectl, applied):
    kinds = {(d["kind"], d["metadata"]["name"]) for d in applied}
    assert {("Deployment", "nginx"), ("PriorityClass", "batch"), ("NodeMetric",
            "nodemetric-sample"), ("SparkApplication", "spark-pi")} <= kinds
    for d in applied:
        ns = d["metadata"].get("namespace")
        args = ["get", f"{d['kind'].lower()}.{d['apiVersion'].split('/')[0]}"
                if "/" in d["apiVersion"] else d["kind"].lower(), d["metadata"]["name"],
                "-o", "json"]
        if ns:
            args += ["-n", ns]
        got = json.loads(kubectl.run(*args).stdout)
        assert got["metadata"]["name"] == d["metadata"]["name"]
        assert "kubectl.kubernetes.io/last-applied-configuration" in got["metadata"][
            "annotations"]
    # Applying again changes nothing.
    _, rest = data_files()
    out = kubectl.run("apply", "-f", str(rest[0])).stdout
    assert "unchanged" in out


def test_crd_defaults_from_upstream_schema(kubectl, applied):
    r = json.loads(kubectl.run("get", "reservation", "reservation-sample", "-o",
                               "json").stdout)
    assert r["spec"]["ttl"] == "24h" and r["spec"]["allocateOnce"] is True
    table = kubectl.run("get", "reservations").stdout
    assert table.split()[:6] == ["NAME", "PHASE", "AGE", "NODE", "TTL", "EXPIRES"]


def test_get_and_describe_applied_objects(kubectl, applied):
    out = kubectl.run("get", "deploy,ds,pc,cm", "-A").stdout
    assert "deployment.apps/nginx" in out and "priorityclass.scheduling.k8s.io/batch" in out
    assert "daemonset.apps/koord-device-daemon" in out
    for what in (["deployment", "nginx"], ["configmap", "slo-controller-config", "-n",
                                            "system"],
                 ["nodemetric", "nodemetric-sample"], ["reservation", "reservation-sample"],
                 ["clustercolocationprofile", "spark-demo"],
                 ["sparkapplication", "spark-pi", "-n", "spark-demo"]):
        out = kubectl.run("describe", *what).stdout
        assert "Name:" in out and what[1] in out


def test_label_annotate_and_patches(kubectl, applied):
    kubectl.run("label", "deployment", "nginx", "team=koord")
    kubectl.run("annotate", "deployment", "nginx", "owner=qa")
    kubectl.run("patch", "deployment", "nginx", "--type=strategic", "-p", json.dumps(
        {"spec": {"template": {"spec": {"containers": [{"name": "nginx",
                                                        "image": "nginx:1.27"}]}}}}))
    kubectl.run("patch", "deployment", "nginx", "--type=merge", "-p",
                '{"spec":{"replicas":3}}')
    kubectl.run("patch", "deployment", "nginx", "--type=json", "-p",
                '[{"op":"add","path":"/metadata/labels/patched","value":"json"}]')
    d = json.loads(kubectl.run("get", "deployment", "nginx", "-o", "json").stdout)
    assert d["metadata"]["labels"]["team"] == "koord"
    assert d["metadata"]["labels"]["patched"] == "json"
    assert d["metadata"]["annotations"]["owner"] == "qa"
    assert d["spec"]["replicas"] == 3
    c = d["spec"]["template"]["spec"]["containers"]
    assert len(c) == 1 and c[0]["image"] == "nginx:1.27" and c[0]["command"]
    assert d["metadata"]["generation"] == 3
    # Custom resources: merge and json patches work, strategic is refused like upstream.
    kubectl.run("label", "reservation", "reservation-sample", "tier=gold")
    kubectl.run("patch", "reservation", "reservation-sample", "--type=merge", "-p",
                '{"spec":{"ttl":"1h"}}')
    p = kubectl.run("patch", "reservation", "reservation-sample", "-p",
                    '{"spec":{"ttl":"2h"}}', check=False)
    assert p.returncode != 0
    r = json.loads(kubectl.run("get", "reservation", "reservation-sample", "-o",
                               "json").stdout)
    assert r["spec"]["ttl"] == "1h" and r["metadata"]["labels"]["tier"] == "gold"


def test_apply_update_uses_three_way_patch(kubectl, applied):
    nginx = upstream_data_dir() / "examples" / "nginx" / "nginx.yaml"
    doc = documents(nginx)[0]
    doc["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.28"
    out = kubectl.run("apply", "-f", "-", input=yaml.safe_dump(doc)).stdout
    assert "configured" in out
    d = json.loads(kubectl.run("get", "deployment", "nginx", "-o", "json").stdout)
    assert d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.28"
    # kubectl label's change survives a re-apply (it is not in last-applied).
    assert d["metadata"]["labels"].get("team") == "koord"


def test_imperative_create_commands_send_protobuf(kubectl):
    kubectl.run("create", "namespace", "gen")
    kubectl.run("create", "configmap", "cm", "--from-literal=a=b", "-n", "gen")
    kubectl.run("create", "secret", "generic", "s", "--from-literal=p=q", "-n", "gen")
    kubectl.run("create", "serviceaccount", "sa", "-n", "gen")
    kubectl.run("create", "deployment", "web", "--image=nginx:1.27", "--replicas=3",
                "--port=80", "-n", "gen")
    kubectl.run("run", "box", "--image=busybox", "--labels=a=b", "-n", "gen", "--",
                "sleep", "10")
    kubectl.run("create", "priorityclass", "gen-pc", "--value=100")
    got = json.loads(kubectl.run("get", "cm,secret,sa,deploy,pod", "-n", "gen", "-o",
                                 "json").stdout)["items"]
    by = {(o["kind"], o["metadata"]["name"]): o for o in got}
    assert by[("ConfigMap", "cm")]["data"] == {"a": "b"}
    assert by[("Secret", "s")]["data"] == {"p": "cQ=="}
    assert ("ServiceAccount", "sa") in by and ("ServiceAccount", "default") in by
    d = by[("Deployment", "web")]["spec"]
    assert d["replicas"] == 3 and d["selector"] == {"matchLabels": {"app": "web"}}
    assert d["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] == 80
    box = by[("Pod", "box")]
    assert box["metadata"]["labels"] == {"a": "b"}
    assert box["spec"]["containers"][0]["args"] == ["sleep", "10"]
    assert "100" in kubectl.run("get", "pc", "gen-pc").stdout


def test_server_side_apply(kubectl):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"},
          "data": {"a": "1"}}
    assert "serverside-applied" in kubectl.run("apply", "--server-side", "-f", "-",
                                               input=json.dumps(cm)).stdout
    cm["data"] = {"a": "2"}
    kubectl.run("apply", "--server-side", "-f", "-", input=json.dumps(cm))
    got = json.loads(kubectl.run("get", "cm", "ssa", "-o", "json").stdout)
    assert got["data"] == {"a": "2"}


def test_scale_and_delete(kubectl, applied):
    kubectl.run("scale", "deployment", "nginx", "--replicas=5")
    d = json.loads(kubectl.run("get", "deployment", "nginx", "-o", "json").stdout)
    assert d["spec"]["replicas"] == 5
    kubectl.run("delete", "configmap", "descheduler-config", "-n", "system")
    p = kubectl.run("get", "configmap", "descheduler-config", "-n", "system", check=False)
    assert p.returncode != 0 and "NotFound" in p.stderr


def test_nodes_and_pods_columns(kubectl):
    kubectl.run("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Node",
             "metadata": {"name": "n1", "labels": {"node-role.kubernetes.io/worker": ""}},
             "status": {"conditions": [{"type": "Ready", "status": "True"}],
                        "nodeInfo": {"kubeletVersion": "v1.32.0"}}},
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1"},
             "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "x"}]}}]}))
    out = kubectl.run("get", "nodes,pods", "-A", "-o", "wide").stdout
    lines = [line.split() for line in out.splitlines() if line.strip()]
    assert lines[0][:5] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert lines[1][:3] == ["node/n1", "Ready", "worker"] and lines[1][4] == "v1.32.0"
    pod_header = next(i for i, line in enumerate(lines) if line[0] == "NAMESPACE")
    assert lines[pod_header][:6] == ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    # (the applied nginx Deployment's pods are listed too)
    p1 = next(line for line in lines[pod_header + 1:] if line[1] == "pod/p1")
    assert p1[:4] == ["default", "pod/p1", "0/1", "Pending"]
    assert "n1" in p1
    assert "Non-terminated Pods:" in kubectl.run("describe", "node", "n1").stdout
    assert "QoS Class:" in kubectl.run("describe", "pod", "p1").stdout


def test_get_watch_sees_changes(kubectl):
    kubectl.run("create", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "watched"}}))
    proc = kubectl.popen("get", "configmaps", "--watch", "--output-watch-events",
                         "--field-selector", "metadata.name=watched")
    lines: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)

    t = threading.Thread(target=read, daemon=True)
    t.start()
    try:
        deadline = time.time() + 30  # only bounds a failure
        while not lines and time.time() < deadline:
            time.sleep(0.05)
        kubectl.run("label", "configmap", "watched", "seen=yes")
        kubectl.run("delete", "configmap", "watched")
        while time.time() < deadline and not any("DELETED" in x for x in lines):
            time.sleep(0.05)
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
    events = [x.split()[0] for x in lines if x.strip()]
    assert events[:1] == ["EVENT"] and "ADDED" in events
    assert "MODIFIED" in events and events[-1] == "DELETED"


def test_invalid_metadata_errors_read_as_against_a_real_cluster(kubectl):
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "bad-label", "labels": {"app": "has space!"}},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    p = kubectl.run("create", "-f", "-", input=json.dumps(pod), check=False)
    assert p.returncode != 0
    assert 'The Pod "bad-label" is invalid: metadata.labels: Invalid value: "has space!": a ' \
        "valid label must be an empty string or consist of alphanumeric characters" in p.stderr
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "big-ann", "annotations": {"a": "x" * 300_000}}}
    p = kubectl.run("create", "-f", "-", input=json.dumps(cm), check=False)
    assert 'The ConfigMap "big-ann" is invalid: metadata.annotations: Too long: must have at ' \
        "most 262144 bytes" in p.stderr
    # Patches are validated the same way.
    pod["metadata"]["labels"] = {"app": "ok"}
    kubectl.run("create", "-f", "-", input=json.dumps(pod))
    p = kubectl.run("patch", "pod", "bad-label", "--type=merge", "-p",
                    '{"metadata": {"labels": {"app": "-dash"}}}', check=False)
    assert 'The Pod "bad-label" is invalid: metadata.labels: Invalid value: "-dash"' in p.stderr
    assert kubectl.run("get", "pod", "bad-label", "-o", "jsonpath={.metadata.labels.app}"
                       ).stdout == "ok"
    # Namespaces are DNS labels (kubectl's generator posts protobuf: validated the same way).
    p = kubectl.run("create", "namespace", "a.b", check=False)
    assert 'The Namespace "a.b" is invalid: metadata.name: Invalid value: "a.b": must not ' \
        "contain dots" in p.stderr


def test_oversized_and_too_deep_bodies_read_as_against_a_real_cluster(kubectl):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "huge"},
          "data": {"a": "x" * (3 * 1024 * 1024)}}
    p = kubectl.run("create", "-f", "-", input=json.dumps(cm), check=False)
    assert "Error from server (RequestEntityTooLarge)" in p.stderr
    assert "Request entity too large: limit is 3145728" in p.stderr
    deep = '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "deep"}, "x": ' + \
        '{"x": ' * 300 + "{}" + "}" * 300 + "}"
    p = kubectl.run("create", "-f", "-", input=deep, check=False)
    assert 'The ConfigMap "deep" is invalid: x: Invalid value: "object": nested more than 240 ' \
        "levels deep" in p.stderr
    # Nothing was stored, and listing still works.
    out = kubectl.run("get", "configmaps", "-o", "name").stdout
    assert "huge" not in out and "deep" not in out
