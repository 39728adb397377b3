"""Admission: priority from PriorityClasses, default tolerations and service account, and
mutating/validating webhooks called over HTTPS with AdmissionReview v1."""

from __future__ import annotations

import base64
import json
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from test.apiserver import certs, start
from test.apiserver.testing import api_client


class Hook(BaseHTTPRequestHandler):
    reviews: list[dict] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Hook.reviews.append(review)
        req = review["request"]
        resp: dict = {"uid": req["uid"], "allowed": True}
        obj = req["object"] or {}
        labels = (obj.get("metadata") or {}).get("labels") or {}
        if self.path == "/mutate":
            ops = [{"op": "add", "path": "/metadata/labels", "value": {**labels,
                                                                        "mutated": "yes"}}]
            resp["patchType"] = "JSONPatch"
            resp["patch"] = base64.b64encode(json.dumps(ops).encode()).decode()
        elif self.path == "/validate" and labels.get("deny") == "true":
            resp = {"uid": req["uid"], "allowed": False,
                    "status": {"code": 403, "reason": "Forbidden", "message": "no deny pods"}}
        if self.path == "/validate" and "warn" in labels:
            resp["warnings"] = [f"label warn={labels['warn']} is ignored", 'say "hi"']
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                           "response": resp}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def webhook(tmp_path_factory):
    files = certs.generate(str(tmp_path_factory.mktemp("hook")),
                           ("127.0.0.1", "localhost", "hook.default.svc"))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(files.cert, files.key)
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield httpd.server_address[1], base64.b64encode(files.ca_pem()).decode()
    httpd.shutdown()


@pytest.fixture(scope="module")
def srv():
    s = start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def core(srv):
    return client.CoreV1Api(api_client(srv))


def pod(name: str, **spec: object) -> dict:
    labels = spec.pop("labels", {})
    return {"metadata": {"name": name, "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "x"}], **spec}}


def test_priority_admission(srv, core):
    sched = client.SchedulingV1Api(api_client(srv))
    sched.create_priority_class({"metadata": {"name": "koord-batch"}, "value": 5000,
                                 "preemptionPolicy": "Never"})
    p = core.create_namespaced_pod("default", pod("batch", priorityClassName="koord-batch"))
    assert p.spec.priority == 5000 and p.spec.preemption_policy == "Never"
    p = core.create_namespaced_pod("default", pod("plain"))
    assert p.spec.priority == 0
    with pytest.raises(ApiException) as e:
        core.create_namespaced_pod("default", pod("nopc", priorityClassName="missing"))
    assert e.value.status == 403 and "no PriorityClass with name missing" in e.value.body
    with pytest.raises(ApiException) as e:
        core.create_namespaced_pod("default", pod("lie", priorityClassName="koord-batch",
                                                  priority=1))
    assert e.value.status == 403
    sched.create_priority_class({"metadata": {"name": "dflt"}, "value": 7,
                                 "globalDefault": True})
    p = core.create_namespaced_pod("default", pod("defaulted"))
    assert p.spec.priority == 7 and p.spec.priority_class_name == "dflt"
    sched.delete_priority_class("dflt")


def test_default_tolerations_and_service_account(core):
    p = core.create_namespaced_pod("default", pod("tol", tolerations=[
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
         "effect": "NoExecute", "tolerationSeconds": 10}]))
    tols = {t.key: t.toleration_seconds for t in p.spec.tolerations}
    assert tols == {"node.kubernetes.io/unreachable": 10, "node.kubernetes.io/not-ready": 300}
    assert p.spec.service_account_name == "default"


def test_webhooks_by_url_and_service(srv, core, webhook):
    port, ca = webhook
    c = api_client(srv)
    adm = client.AdmissionregistrationV1Api(c)
    core.create_namespace({"metadata": {"name": "hooked", "labels": {"hooks": "on"}}})
    # The mutating webhook is reached through a Service and its Endpoints.
    core.create_namespaced_service("default", {"metadata": {"name": "hook"}, "spec": {
        "ports": [{"port": 443, "targetPort": port}]}})
    core.create_namespaced_endpoints("default", {"metadata": {"name": "hook"}, "subsets": [{
        "addresses": [{"ip": "127.0.0.1"}], "ports": [{"port": port}]}]})
    rules = [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
              "resources": ["pods"], "scope": "Namespaced"}]
    sel = {"matchLabels": {"hooks": "on"}}
    adm.create_mutating_webhook_configuration({
        "metadata": {"name": "m"}, "webhooks": [{
            "name": "mutate.example.com", "admissionReviewVersions": ["v1"],
            "sideEffects": "None", "rules": rules, "namespaceSelector": sel,
            "clientConfig": {"caBundle": ca, "service": {
                "namespace": "default", "name": "hook", "path": "/mutate"}}}]})
    adm.create_validating_webhook_configuration({
        "metadata": {"name": "v"}, "webhooks": [{
            "name": "validate.example.com", "admissionReviewVersions": ["v1"],
            "sideEffects": "None", "rules": rules, "namespaceSelector": sel,
            "clientConfig": {"caBundle": ca, "url": f"https://127.0.0.1:{port}/validate"}}, {
            "name": "broken-but-ignored.example.com", "admissionReviewVersions": ["v1"],
            "sideEffects": "None", "rules": rules, "namespaceSelector": sel,
            "failurePolicy": "Ignore", "timeoutSeconds": 1,
            "clientConfig": {"url": "https://127.0.0.1:1/nothing"}}]})
    Hook.reviews.clear()
    p = core.create_namespaced_pod("hooked", pod("m1", labels={"app": "x"}))
    assert p.metadata.labels == {"app": "x", "mutated": "yes"}
    req = Hook.reviews[0]["request"]
    assert req["operation"] == "CREATE" and req["kind"]["kind"] == "Pod"
    assert req["namespace"] == "hooked" and req["object"]["metadata"]["name"] == "m1"
    with pytest.raises(ApiException) as e:
        core.create_namespaced_pod("hooked", pod("m2", labels={"deny": "true"}))
    body = json.loads(e.value.body)
    assert body["code"] == 403
    assert body["message"] == ('admission webhook "validate.example.com" denied the request: '
                               "no deny pods")
    # Updates are reviewed with the old object; other namespaces are not selected.
    core.patch_namespaced_pod("m1", "hooked", {"metadata": {"annotations": {"a": "b"}}})
    assert Hook.reviews[-1]["request"]["operation"] == "UPDATE"
    assert Hook.reviews[-1]["request"]["oldObject"]["metadata"]["name"] == "m1"
    n = len(Hook.reviews)
    core.create_namespaced_pod("default", pod("unhooked", labels={"deny": "true"}))
    assert len(Hook.reviews) == n


def _warnings(headers: object) -> list[str]:
    return list(headers.getlist("Warning"))  # type: ignore[attr-defined]


def test_webhook_warnings_reach_the_client_as_warning_headers(srv, core, webhook):
    port, ca = webhook
    adm = client.AdmissionregistrationV1Api(api_client(srv))
    core.create_namespace({"metadata": {"name": "warned"}})
    adm.create_validating_webhook_configuration({
        "metadata": {"name": "warner"}, "webhooks": [{
            "name": "warn.example.com", "admissionReviewVersions": ["v1"],
            "sideEffects": "None", "objectSelector": {"matchLabels": {"warn": "yes"}},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                       "resources": ["pods"]}],
            "clientConfig": {"caBundle": ca, "url": f"https://127.0.0.1:{port}/validate"}}]})
    _, status, headers = core.create_namespaced_pod_with_http_info(
        "warned", pod("w1", labels={"warn": "yes"}))
    assert status == 201
    # kube-apiserver's form: code 299, agent "-", the text quoted with \" escaped.
    assert _warnings(headers) == ['299 - "label warn=yes is ignored"', '299 - "say \\"hi\\""']
    # A denied request carries the warnings too.
    with pytest.raises(ApiException) as e:
        core.create_namespaced_pod("warned", pod("w2", labels={"warn": "yes", "deny": "true"}))
    assert _warnings(e.value.headers) == ['299 - "label warn=yes is ignored"',
                                          '299 - "say \\"hi\\""']
    _, _, headers = core.create_namespaced_pod_with_http_info("warned", pod("quiet"))
    assert _warnings(headers) == []
    adm.delete_validating_webhook_configuration("warner")


def test_failing_webhook_with_fail_policy(srv, core):
    adm = client.AdmissionregistrationV1Api(api_client(srv))
    core.create_namespace({"metadata": {"name": "strict", "labels": {"strict": "yes"}}})
    adm.create_validating_webhook_configuration({
        "metadata": {"name": "down"}, "webhooks": [{
            "name": "down.example.com", "admissionReviewVersions": ["v1"],
            "sideEffects": "None", "timeoutSeconds": 1,
            "namespaceSelector": {"matchLabels": {"strict": "yes"}},
            "rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"],
                       "resources": ["configmaps"]}],
            "clientConfig": {"url": "https://127.0.0.1:1/down"}}]})
    with pytest.raises(ApiException) as e:
        core.create_namespaced_config_map("strict", {"metadata": {"name": "x"}})
    assert e.value.status == 500
    assert 'failed calling webhook "down.example.com"' in json.loads(e.value.body)["message"]
    adm.delete_validating_webhook_configuration("down")
    core.create_namespaced_config_map("strict", {"metadata": {"name": "x"}})
