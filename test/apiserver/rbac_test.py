"""ServiceAccount tokens and RBAC against a server that requires a token: who may do what, and
the exact 403 Status kube-apiserver answers otherwise."""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3

from test.apiserver import start
from test.apiserver.kubeconfig import for_service_account
from test.apiserver.rbac import Attributes, request_attributes
from test.apiserver.server import ServerHandle
from test.apiserver.testing import Kubectl, expect_status, kubectl_binary, minimal_pod

ADMIN = "admin-token"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
MERGE = "application/merge-patch+json"


@pytest.fixture(scope="module")
def srv() -> Iterator[ServerHandle]:
    s = start(token=ADMIN)
    yield s
    s.stop()


class Caller:
    """Requests to one server as one bearer token."""

    def __init__(self, srv: ServerHandle, token: str | None) -> None:
        self.srv = srv
        self.token = token
        self.pool = urllib3.PoolManager(ca_certs=srv.ca_file, cert_reqs="CERT_REQUIRED")

    def __call__(self, method: str, path: str, body: Any = None,
                 content_type: str = "application/json") -> tuple[int, Any]:
        headers = {"Content-Type": content_type, "Accept": "application/json"}
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        data = json.dumps(body).encode() if body is not None else None
        resp = self.pool.request(method, self.srv.url + path, body=data, headers=headers,
                                 retries=False, timeout=30, preload_content=False)
        # Watches here carry timeoutSeconds, so their streams end.
        raw = resp.read()
        resp.release_conn()
        try:
            return resp.status, json.loads(raw)
        except ValueError:
            return resp.status, raw


def ok(result: tuple[int, Any], code: int = 200) -> Any:
    assert result[0] == code, result
    return result[1]


def service_account(admin: Caller, ns: str, name: str) -> str:
    """Create ``ns`` (if missing) and ServiceAccount ``name`` in it; a TokenRequest token."""
    code, body = admin("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    assert code in (201, 409), body
    ok(admin("POST", f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": name}}),
       201)
    tr = ok(admin("POST", f"/api/v1/namespaces/{ns}/serviceaccounts/{name}/token",
                  {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                   "spec": {"expirationSeconds": 3600}}), 201)
    return str(tr["status"]["token"])


def grant(admin: Caller, ns: str | None, name: str, rules: list[dict[str, Any]],
          subject: dict[str, str]) -> None:
    """A Role+RoleBinding in ``ns`` (ClusterRole+ClusterRoleBinding when None) for subject."""
    role, binding = ("Role", "RoleBinding") if ns else ("ClusterRole", "ClusterRoleBinding")
    base = f"{RBAC}/namespaces/{ns}" if ns else RBAC
    ok(admin("POST", f"{base}/{role.lower()}s", {"metadata": {"name": name}, "rules": rules}),
       201)
    ok(admin("POST", f"{base}/{binding.lower()}s", {
        "metadata": {"name": name}, "subjects": [subject],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role, "name": name}}), 201)


def sa_subject(ns: str, name: str) -> dict[str, str]:
    return {"kind": "ServiceAccount", "name": name, "namespace": ns}


@pytest.fixture
def admin(srv: ServerHandle) -> Caller:
    return Caller(srv, ADMIN)


def test_a_missing_rule_is_forbidden_in_kubes_words_until_a_role_grants_it(
        srv: ServerHandle, admin: Caller) -> None:
    token = service_account(admin, "koordinator-system", "koordlet")
    ok(admin("POST", "/api/v1/namespaces/default/pods", minimal_pod("x")), 201)
    sa = Caller(srv, token)
    patch = ("PATCH", "/api/v1/namespaces/default/pods/x", {"metadata": {"labels": {"a": "b"}}},
             MERGE)
    code, body = sa(*patch)
    assert code == 403
    assert expect_status(body, 403, "Forbidden") == (
        'pods "x" is forbidden: User "system:serviceaccount:koordinator-system:koordlet" '
        'cannot patch resource "pods" in API group "" in the namespace "default"')
    assert body["details"] == {"name": "x", "kind": "pods"}

    grant(admin, "default", "koordlet-pods", [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "patch"]}],
        sa_subject("koordinator-system", "koordlet"))
    assert ok(sa(*patch))["metadata"]["labels"] == {"a": "b"}
    # The grant is the RoleBinding's namespace only.
    ok(admin("POST", "/api/v1/namespaces/koordinator-system/pods", minimal_pod("y")), 201)
    code, body = sa("GET", "/api/v1/namespaces/koordinator-system/pods/y")
    assert code == 403, body
    # Deleting the binding revokes access at once.
    ok(admin("DELETE", f"{RBAC}/namespaces/default/rolebindings/koordlet-pods"))
    assert sa(*patch)[0] == 403


def test_a_cluster_role_binding_grants_every_namespace_and_cluster_scoped_resources(
        srv: ServerHandle, admin: Caller) -> None:
    sa = Caller(srv, service_account(admin, "cw", "lister"))
    code, body = sa("GET", "/api/v1/pods")
    assert expect_status(body, 403, "Forbidden") == (
        'pods is forbidden: User "system:serviceaccount:cw:lister" cannot list resource '
        '"pods" in API group "" at the cluster scope')
    code, body = sa("GET", "/api/v1/nodes/n1")
    assert expect_status(body, 403, "Forbidden") == (
        'nodes "n1" is forbidden: User "system:serviceaccount:cw:lister" cannot get resource '
        '"nodes" in API group "" at the cluster scope')
    code, body = sa("GET", "/apis/coordination.k8s.io/v1/namespaces/cw/leases")
    assert expect_status(body, 403, "Forbidden") == (
        'leases.coordination.k8s.io is forbidden: User "system:serviceaccount:cw:lister" '
        'cannot list resource "leases" in API group "coordination.k8s.io" in the namespace '
        '"cw"')
    assert body["details"] == {"group": "coordination.k8s.io", "kind": "leases"}
    grant(admin, None, "lister", [{"apiGroups": ["", "coordination.k8s.io"],
                                   "resources": ["pods", "nodes", "leases"],
                                   "verbs": ["list"]}], sa_subject("cw", "lister"))
    assert ok(sa("GET", "/api/v1/pods"))["kind"] == "PodList"
    assert ok(sa("GET", "/api/v1/namespaces/default/pods"))["kind"] == "PodList"
    assert ok(sa("GET", "/api/v1/nodes"))["kind"] == "NodeList"
    assert ok(sa("GET", "/apis/coordination.k8s.io/v1/namespaces/cw/leases"))["kind"] == \
        "LeaseList"
    # list does not give get, nor watch.
    assert sa("GET", "/api/v1/nodes/n1")[0] == 403
    code, body = sa("GET", "/api/v1/pods?watch=true")
    assert expect_status(body, 403, "Forbidden").endswith(
        'cannot watch resource "pods" in API group "" at the cluster scope')


def test_watch_needs_watch_and_a_legacy_watch_path_is_a_watch(
        srv: ServerHandle, admin: Caller) -> None:
    sa = Caller(srv, service_account(admin, "wt", "watcher"))
    grant(admin, "wt", "watcher", [{"apiGroups": [""], "resources": ["configmaps"],
                                    "verbs": ["watch"]}], sa_subject("wt", "watcher"))
    ok(admin("POST", "/api/v1/namespaces/wt/configmaps", {"metadata": {"name": "seen"}}), 201)
    for path in ("/api/v1/namespaces/wt/configmaps?watch=true&timeoutSeconds=1",
                 "/api/v1/watch/namespaces/wt/configmaps?timeoutSeconds=1"):
        code, stream = sa("GET", path)
        assert code == 200 and b'"type":"ADDED"' in stream and b'"name":"seen"' in stream
    code, body = sa("GET", "/api/v1/namespaces/wt/configmaps")
    assert expect_status(body, 403, "Forbidden").endswith(
        'cannot list resource "configmaps" in API group "" in the namespace "wt"')


def test_resource_names_limit_a_rule_to_named_objects(srv: ServerHandle, admin: Caller) -> None:
    sa = Caller(srv, service_account(admin, "rn", "reader"))
    for name in ("allowed", "other"):
        ok(admin("POST", "/api/v1/namespaces/rn/configmaps", {"metadata": {"name": name}}), 201)
    grant(admin, "rn", "reader", [{"apiGroups": [""], "resources": ["configmaps"],
                                   "resourceNames": ["allowed"], "verbs": ["get", "list"]}],
          sa_subject("rn", "reader"))
    assert ok(sa("GET", "/api/v1/namespaces/rn/configmaps/allowed"))["metadata"]["name"] == \
        "allowed"
    code, body = sa("GET", "/api/v1/namespaces/rn/configmaps/other")
    assert expect_status(body, 403, "Forbidden").startswith('configmaps "other" is forbidden')
    # A list is named by an exact metadata.name field selector, as requestinfo.go does.
    assert sa("GET", "/api/v1/namespaces/rn/configmaps")[0] == 403
    items = ok(sa("GET", "/api/v1/namespaces/rn/configmaps?fieldSelector=metadata.name%3D"
                         "allowed"))["items"]
    assert [i["metadata"]["name"] for i in items] == ["allowed"]


def test_subresources_need_their_own_rule(srv: ServerHandle, admin: Caller) -> None:
    sa = Caller(srv, service_account(admin, "sr", "statuser"))
    ok(admin("POST", "/api/v1/namespaces/sr/pods", minimal_pod("p")), 201)
    grant(admin, "sr", "pods-only", [{"apiGroups": [""], "resources": ["pods"],
                                      "verbs": ["patch"]}], sa_subject("sr", "statuser"))
    status = ("PATCH", "/api/v1/namespaces/sr/pods/p/status",
              {"status": {"message": "hi"}}, MERGE)
    code, body = sa(*status)
    assert expect_status(body, 403, "Forbidden") == (
        'pods "p" is forbidden: User "system:serviceaccount:sr:statuser" cannot patch '
        'resource "pods/status" in API group "" in the namespace "sr"')
    assert body["details"] == {"name": "p", "kind": "pods"}
    grant(admin, "sr", "any-status", [{"apiGroups": [""], "resources": ["*/status"],
                                       "verbs": ["patch"]}], sa_subject("sr", "statuser"))
    assert ok(sa(*status))["status"]["message"] == "hi"
    # pods/* covers every subresource of pods, and only those.
    grant(admin, "sr", "pods-sub", [{"apiGroups": [""], "resources": ["pods/*"],
                                     "verbs": ["create"]}], sa_subject("sr", "statuser"))
    ok(sa("POST", "/api/v1/namespaces/sr/pods/p/eviction",
          {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p"}}), 201)
    assert sa("POST", "/api/v1/namespaces/sr/pods", minimal_pod("q"))[0] == 403


def test_non_resource_urls_and_the_denial_counter(srv: ServerHandle, admin: Caller,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    sa = Caller(srv, service_account(admin, "nr", "scraper"))
    caplog.set_level(logging.WARNING, "test.apiserver.rbac")
    assert sa("GET", "/metrics")[0] == 403
    code, body = sa("GET", "/metrics")
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": 'forbidden: User "system:serviceaccount:nr:scraper" cannot get '
                               'path "/metrics"',
                    "reason": "Forbidden", "details": {}, "code": 403}
    # Discovery is everyone's (system:discovery is bound to system:authenticated).
    assert ok(sa("GET", "/apis"))["kind"] == "APIGroupList"
    assert ok(sa("GET", "/api/v1"))["kind"] == "APIResourceList"
    grant(admin, None, "scraper", [{"nonResourceURLs": ["/metr*"], "verbs": ["get"]}],
          sa_subject("nr", "scraper"))
    text = ok(sa("GET", "/metrics")).decode()
    assert ('apiserver_authorization_denied_total{group="",resource="/metrics",'
            'user="system:serviceaccount:nr:scraper",verb="get"} 2.0') in text
    # Every request is counted under its user, allowed or denied (this scrape included).
    assert 'apiserver_user_requests_total{user="system:serviceaccount:nr:scraper"} 5.0' in text
    # Logged once per user, verb and resource, however often it is denied.
    assert [r.getMessage() for r in caplog.records if "nr:scraper" in r.getMessage()] == [
        'authorization denied: forbidden: User "system:serviceaccount:nr:scraper" cannot get '
        'path "/metrics"']


def test_a_binding_to_a_missing_role_says_so(srv: ServerHandle, admin: Caller) -> None:
    sa = Caller(srv, service_account(admin, "mr", "orphan"))
    ok(admin("POST", f"{RBAC}/clusterrolebindings", {
        "metadata": {"name": "orphan"}, "subjects": [sa_subject("mr", "orphan")],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "not-there"}}), 201)
    code, body = sa("GET", "/api/v1/namespaces/mr/secrets")
    assert expect_status(body, 403, "Forbidden") == (
        'secrets is forbidden: User "system:serviceaccount:mr:orphan" cannot list resource '
        '"secrets" in API group "" in the namespace "mr": RBAC: clusterrole.rbac.'
        'authorization.k8s.io "not-there" not found')


def test_groups_of_service_accounts_are_subjects(srv: ServerHandle, admin: Caller) -> None:
    sa = Caller(srv, service_account(admin, "gr", "member"))
    grant(admin, "gr", "all-sas", [{"apiGroups": [""], "resources": ["configmaps"],
                                    "verbs": ["list"]}],
          {"kind": "Group", "name": "system:serviceaccounts:gr",
           "apiGroup": "rbac.authorization.k8s.io"})
    assert ok(sa("GET", "/api/v1/namespaces/gr/configmaps"))["kind"] == "ConfigMapList"


def test_token_request_needs_the_service_account_and_dies_with_it(
        srv: ServerHandle, admin: Caller) -> None:
    code, body = admin("POST", "/api/v1/namespaces/default/serviceaccounts/ghost/token",
                       {"spec": {}})
    assert expect_status(body, 404, "NotFound") == 'serviceaccounts "ghost" not found'
    code, body = admin("POST", "/api/v1/namespaces/default/serviceaccounts/default/token",
                       {"spec": {"expirationSeconds": 10}})
    assert expect_status(body, 422, "Invalid") == (
        'TokenRequest.authentication.k8s.io "default" is invalid: spec.expirationSeconds: '
        'Invalid value: 10: may not specify a duration less than 10 minutes')
    token = service_account(admin, "gone", "temp")
    sa = Caller(srv, token)
    grant(admin, "gone", "temp", [{"apiGroups": [""], "resources": ["configmaps"],
                                   "verbs": ["list"]}], sa_subject("gone", "temp"))
    assert sa("GET", "/api/v1/namespaces/gone/configmaps")[0] == 200
    ok(admin("DELETE", "/api/v1/namespaces/gone/serviceaccounts/temp"))
    code, body = sa("GET", "/api/v1/namespaces/gone/configmaps")
    assert expect_status(body, 401, "Unauthorized") == "Unauthorized"
    # A new ServiceAccount of the same name is someone else: the old token stays dead.
    ok(admin("POST", "/api/v1/namespaces/gone/serviceaccounts", {"metadata": {"name": "temp"}}),
       201)
    assert sa("GET", "/api/v1/namespaces/gone/configmaps")[0] == 401
    assert Caller(srv, "made-up")("GET", "/api/v1/namespaces")[0] == 401
    assert Caller(srv, None)("GET", "/api/v1/namespaces")[0] == 401


def test_a_token_expires(srv: ServerHandle, admin: Caller) -> None:
    sa = Caller(srv, service_account(admin, "ex", "brief"))
    assert sa("GET", "/apis")[0] == 200
    authenticator = srv.server.handlers.authenticator
    authenticator.clock = lambda: time.time() + 3601
    try:
        assert sa("GET", "/apis")[0] == 401
    finally:
        authenticator.clock = time.time


def test_a_token_secret_is_filled_and_authenticates_until_deleted(
        srv: ServerHandle, admin: Caller) -> None:
    service_account(admin, "ts", "legacy")
    annotations = {"kubernetes.io/service-account.name": "legacy"}
    secret: dict[str, Any] = {"metadata": {"name": "legacy-token", "annotations": annotations},
                              "type": "kubernetes.io/service-account-token"}
    ok(admin("POST", "/api/v1/namespaces/ts/secrets", secret), 201)
    got = ok(admin("GET", "/api/v1/namespaces/ts/secrets/legacy-token"))
    sa_uid = ok(admin("GET", "/api/v1/namespaces/ts/serviceaccounts/legacy"))["metadata"]["uid"]
    assert got["metadata"]["annotations"]["kubernetes.io/service-account.uid"] == sa_uid
    data = {k: base64.b64decode(v).decode() for k, v in got["data"].items()}
    assert data["namespace"] == "ts"
    assert data["ca.crt"] == Path(srv.ca_file or "").read_text()
    sa = Caller(srv, data["token"])
    code, body = sa("GET", "/api/v1/namespaces/ts/pods")
    assert "system:serviceaccount:ts:legacy" in expect_status(body, 403, "Forbidden")
    ok(admin("DELETE", "/api/v1/namespaces/ts/secrets/legacy-token"))
    assert sa("GET", "/api/v1/namespaces/ts/pods")[0] == 401
    # Deleting the ServiceAccount deletes its token Secrets, as the token controller does.
    ok(admin("POST", "/api/v1/namespaces/ts/secrets", dict(secret, metadata={
        "name": "second", "annotations": annotations})), 201)
    ok(admin("DELETE", "/api/v1/namespaces/ts/serviceaccounts/legacy"))
    assert admin("GET", "/api/v1/namespaces/ts/secrets/second")[0] == 404
    code, body = admin("POST", "/api/v1/namespaces/ts/secrets", {
        "metadata": {"name": "nameless"}, "type": "kubernetes.io/service-account-token"})
    assert expect_status(body, 422, "Invalid") == (
        'Secret "nameless" is invalid: metadata.annotations[kubernetes.io/service-account.name]'
        ': Required value')


def test_the_admin_has_full_access_and_the_bootstrap_policy_exists(
        srv: ServerHandle, admin: Caller) -> None:
    ok(admin("DELETE", f"{RBAC}/clusterrolebindings/cluster-admin"))
    # system:masters needs no binding, as in kube-apiserver.
    assert ok(admin("GET", "/api/v1/nodes"))["kind"] == "NodeList"
    assert ok(admin("GET", "/metrics"), 200)
    names = {i["metadata"]["name"]: i for i in ok(admin("GET", f"{RBAC}/clusterroles"))["items"]}
    for name in ("cluster-admin", "system:discovery", "system:basic-user",
                 "system:public-info-viewer", "system:kube-scheduler", "system:volume-scheduler"):
        md = names[name]["metadata"]
        assert md["annotations"] == {"rbac.authorization.kubernetes.io/autoupdate": "true"}
        assert md["labels"] == {"kubernetes.io/bootstrapping": "rbac-defaults"}
    assert {"apiGroups": ["coordination.k8s.io"], "resourceNames": ["kube-scheduler"],
            "resources": ["leases"], "verbs": ["get", "update"]} in \
        names["system:kube-scheduler"]["rules"]
    crb = ok(admin("GET", f"{RBAC}/clusterrolebindings/system:discovery"))
    assert crb["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                                "name": "system:authenticated"}]


@pytest.mark.skipif(kubectl_binary() is None, reason="kubectl is not installed")
def test_kubectl_as_a_service_account_gets_kubes_forbidden(
        srv: ServerHandle, admin: Caller, tmp_path: Path) -> None:
    service_account(admin, "kc", "cli")
    kc = for_service_account(srv.kubeconfig, "kc", "cli", str(tmp_path / "cli.kubeconfig"))

    class Sa:
        kubeconfig = kc

    kubectl = Kubectl(Sa())
    try:
        p = kubectl.run("get", "pods", "-n", "kc", check=False)
        assert p.returncode == 1
        assert p.stderr.strip().endswith(
            'Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:kc:cli"'
            ' cannot list resource "pods" in API group "" in the namespace "kc"'), p.stderr
        grant(admin, "kc", "cli", [{"apiGroups": [""], "resources": ["pods"],
                                    "verbs": ["list"]}], sa_subject("kc", "cli"))
        p = kubectl.run("get", "pods", "-n", "kc")
        assert "No resources found in kc namespace." in p.stderr
    finally:
        kubectl.close()


@pytest.mark.skipif(kubectl_binary() is None, reason="kubectl is not installed")
def test_kubectl_create_token_and_auth_can_i_whoami_as(srv: ServerHandle, admin: Caller) -> None:
    service_account(admin, "ka", "bot")
    kubectl = Kubectl(srv)
    try:
        token = kubectl.run("create", "token", "bot", "-n", "ka", "--duration", "1h").stdout
        code, body = Caller(srv, token.strip())("GET", "/api/v1/namespaces/ka/pods")
        assert 'User "system:serviceaccount:ka:bot" cannot list' in \
            expect_status(body, 403, "Forbidden")
        p = kubectl.run("create", "token", "bot", "-n", "ka", "--duration", "1m", check=False)
        assert p.stderr.strip() == (
            'error: failed to create token: TokenRequest.authentication.k8s.io "bot" is invalid:'
            ' spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10'
            ' minutes')
        as_bot = ("--as", "system:serviceaccount:ka:bot")
        assert kubectl.run("auth", "can-i", "list", "pods", "-n", "ka", *as_bot,
                           check=False).stdout.strip() == "no"
        grant(admin, "ka", "bot", [{"apiGroups": [""], "resources": ["pods"],
                                    "verbs": ["list"]}], sa_subject("ka", "bot"))
        assert kubectl.run("auth", "can-i", "list", "pods", "-n", "ka",
                           *as_bot).stdout.strip() == "yes"
        assert kubectl.run("auth", "can-i", "list", "pods", "-n", "default", *as_bot,
                           check=False).stdout.strip() == "no"
        listed = kubectl.run("auth", "can-i", "--list", "-n", "ka", *as_bot).stdout
        assert any(line.split()[:1] == ["pods"] and line.split()[-1] == "[list]"
                   for line in listed.splitlines()), listed
        who = kubectl.run("auth", "whoami", *as_bot).stdout
        assert "system:serviceaccount:ka:bot" in who and "system:serviceaccounts:ka" in who
    finally:
        kubectl.close()


def test_impersonation_needs_the_impersonate_verb(srv: ServerHandle, admin: Caller) -> None:
    sa = Caller(srv, service_account(admin, "im", "actor"))
    pool = sa.pool
    headers = {"Authorization": f"Bearer {sa.token}", "Impersonate-User": "alice"}
    resp = pool.request("GET", srv.url + "/api/v1/namespaces/im/pods", headers=headers)
    assert expect_status(json.loads(resp.data), 403, "Forbidden") == (
        'users "alice" is forbidden: User "system:serviceaccount:im:actor" cannot impersonate '
        'resource "users" in API group "" at the cluster scope')
    grant(admin, None, "impersonate-alice", [{"apiGroups": [""], "resources": ["users"],
                                              "resourceNames": ["alice"],
                                              "verbs": ["impersonate"]}],
          sa_subject("im", "actor"))
    resp = pool.request("GET", srv.url + "/api/v1/namespaces/im/pods", headers=headers)
    assert expect_status(json.loads(resp.data), 403, "Forbidden").startswith(
        'pods is forbidden: User "alice" cannot list')
    code, body = admin("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", {
        "spec": {"user": "alice", "resourceAttributes": {"verb": "impersonate",
                                                         "resource": "users", "name": "bob"}}})
    assert (code, body["status"]) == (201, {"allowed": False})
    code, body = admin("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", {
        "spec": {"user": "system:serviceaccount:im:actor",
                 "groups": ["system:serviceaccounts"],
                 "resourceAttributes": {"verb": "impersonate", "resource": "users",
                                        "name": "alice"}}})
    assert (code, body["status"]) == (201, {"allowed": True})


def test_the_official_client_gets_403_with_the_status(
        srv: ServerHandle, admin: Caller, tmp_path: Path) -> None:
    from kubernetes import client, config
    from kubernetes.client.rest import ApiException

    service_account(admin, "py", "client")
    kc = for_service_account(srv.kubeconfig, "py", "client", str(tmp_path / "py.kubeconfig"))
    core = client.CoreV1Api(config.new_client_from_config(config_file=kc))
    with pytest.raises(ApiException) as e:
        core.read_namespaced_config_map("x", "py")
    assert e.value.status == 403
    status = json.loads(e.value.body or "")
    assert status["message"] == (
        'configmaps "x" is forbidden: User "system:serviceaccount:py:client" cannot get '
        'resource "configmaps" in API group "" in the namespace "py"')
    assert status["details"] == {"name": "x", "kind": "configmaps"}


def test_tokens_and_edited_bootstrap_roles_survive_a_restart(tmp_path: Path) -> None:
    workdir = str(tmp_path / "w")
    with start(workdir=workdir, random_token=True) as s:
        admin = Caller(s, s.token)
        token = service_account(admin, "rs", "keeper")
        grant(admin, "rs", "keeper", [{"apiGroups": [""], "resources": ["configmaps"],
                                       "verbs": ["list"]}], sa_subject("rs", "keeper"))
        ok(admin("PATCH", f"{RBAC}/clusterroles/system:basic-user",
                 {"rules": [{"apiGroups": [""], "resources": ["namespaces"],
                             "verbs": ["get"]}]}, MERGE))
        assert Caller(s, token)("GET", "/api/v1/namespaces/rs/configmaps")[0] == 200
    with start(workdir=workdir, random_token=True) as s:
        assert Caller(s, token)("GET", "/api/v1/namespaces/rs/configmaps")[0] == 200
        # The user's edit of a bootstrap role is kept: now any user may get a namespace.
        assert ok(Caller(s, token)("GET", "/api/v1/namespaces/default"))["kind"] == "Namespace"


def test_without_a_token_nothing_is_checked() -> None:
    with start() as s:
        assert Caller(s, None)("GET", "/api/v1/namespaces")[0] == 200
        assert Caller(s, "anything")("GET", "/metrics")[0] == 200


@pytest.mark.parametrize(("method", "path", "query", "want"), [
    ("GET", "/api/v1/namespaces/ns/pods/p", {},
     Attributes("get", "", True, "", "v1", "pods", "", "ns", "p")),
    ("GET", "/api/v1/namespaces/ns/pods", {"watch": "1"},
     Attributes("watch", "", True, "", "v1", "pods", "", "ns", "")),
    ("GET", "/api/v1/namespaces/ns/pods", {"watch": "false"},
     Attributes("list", "", True, "", "v1", "pods", "", "ns", "")),
    ("GET", "/api/v1/watch/pods", {}, Attributes("watch", "", True, "", "v1", "pods")),
    ("DELETE", "/apis/apps/v1/namespaces/ns/deployments", {},
     Attributes("deletecollection", "", True, "apps", "v1", "deployments", "", "ns")),
    ("PUT", "/api/v1/namespaces/ns/status", {},
     Attributes("update", "", True, "", "v1", "namespaces", "status", "ns", "ns")),
    ("GET", "/api/v1/namespaces/ns", {},
     Attributes("get", "", True, "", "v1", "namespaces", "", "ns", "ns")),
    ("GET", "/api/v1/nodes", {"fieldSelector": "metadata.name=n1"},
     Attributes("list", "", True, "", "v1", "nodes", "", "", "n1")),
    ("POST", "/api/v1/namespaces/ns/serviceaccounts/sa/token", {},
     Attributes("create", "", True, "", "v1", "serviceaccounts", "token", "ns", "sa")),
    ("GET", "/apis/apps/v1", {}, Attributes("get", "")),
    ("GET", "/openapi/v2", {}, Attributes("get", "")),
])
def test_request_attributes_follow_requestinfo(method: str, path: str, query: dict[str, str],
                                               want: Attributes) -> None:
    got = request_attributes(method, path, query)
    assert got == Attributes(want.verb, path, *[getattr(want, f) for f in (
        "resource_request", "api_group", "api_version", "resource", "subresource",
        "namespace", "name")])
