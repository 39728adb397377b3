"""The official Python client against the embedded API server: CRUD, errors, selectors,
pagination, finalizers, graceful deletion and watches."""

from __future__ import annotations

import threading
import time

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from test.apiserver import start
from test.apiserver.testing import api_client


@pytest.fixture(scope="module")
def srv():
    s = start(bookmark_interval=0.2, watch_cache_size=50)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def core(srv):
    return client.CoreV1Api(api_client(srv))


def pod(name: str, labels: dict[str, str] | None = None, node: str | None = None,
        **spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}],
                     **({"nodeName": node} if node else {}), **spec}}


def status_of(e: ApiException) -> tuple[int, str]:
    import json

    assert e.body is not None
    body = json.loads(e.body)
    assert body["kind"] == "Status"
    return body["code"], body["reason"]


def test_system_namespaces_exist(core):
    names = {ns.metadata.name for ns in core.list_namespace().items}
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= names
    ns = core.read_namespace("default")
    assert ns.status.phase == "Active"
    assert ns.metadata.labels["kubernetes.io/metadata.name"] == "default"


def test_create_sets_system_fields_and_defaults(core):
    p = core.create_namespaced_pod("default", pod("sys-fields"))
    assert p.metadata.uid and p.metadata.creation_timestamp
    assert int(p.metadata.resource_version) > 0
    assert p.status.phase == "Pending" and p.status.qos_class == "BestEffort"
    assert p.spec.scheduler_name == "default-scheduler"
    assert p.spec.containers[0].image_pull_policy == "Always"
    assert p.spec.termination_grace_period_seconds == 30


def test_errors_are_status_objects(core):
    with pytest.raises(ApiException) as e:
        core.read_namespaced_pod("missing", "default")
    assert status_of(e.value) == (404, "NotFound")
    core.create_namespaced_config_map("default", {"metadata": {"name": "dup"}})
    with pytest.raises(ApiException) as e:
        core.create_namespaced_config_map("default", {"metadata": {"name": "dup"}})
    assert status_of(e.value) == (409, "AlreadyExists")
    with pytest.raises(ApiException) as e:
        core.create_namespaced_pod("default", {"metadata": {"name": "nocontainers"},
                                               "spec": {"containers": []}})
    assert status_of(e.value) == (422, "Invalid")
    with pytest.raises(ApiException) as e:
        core.create_namespaced_config_map("no-such-ns", {"metadata": {"name": "x"}})
    assert status_of(e.value) == (404, "NotFound")
    with pytest.raises(ApiException) as e:
        core.create_namespaced_config_map("default", {"metadata": {"name": "Bad_Name"}})
    assert status_of(e.value) == (422, "Invalid")
    with pytest.raises(ApiException) as e:
        core.delete_namespace("kube-system")
    assert status_of(e.value) == (403, "Forbidden")


def test_stale_resource_version_conflicts(core):
    cm = core.create_namespaced_config_map("default", {"metadata": {"name": "rv"},
                                                       "data": {"a": "1"}})
    cm.data["a"] = "2"
    updated = core.replace_namespaced_config_map("rv", "default", cm)
    assert int(updated.metadata.resource_version) > int(cm.metadata.resource_version)
    cm.data["a"] = "3"  # still carries the old resourceVersion
    with pytest.raises(ApiException) as e:
        core.replace_namespaced_config_map("rv", "default", cm)
    assert status_of(e.value) == (409, "Conflict")


def test_generate_name(core):
    p = core.create_namespaced_config_map("default", {"metadata": {"generateName": "gen-"}})
    assert p.metadata.name.startswith("gen-") and len(p.metadata.name) == 9


def test_label_and_field_selectors(core):
    core.create_namespace({"metadata": {"name": "sel"}})
    for i, (app, tier) in enumerate([("a", "web"), ("a", "db"), ("b", "web"), ("c", None)]):
        labels = {"app": app, **({"tier": tier} if tier else {})}
        core.create_namespaced_pod("sel", pod(f"p{i}", labels, node="n1" if i < 2 else None))

    def names(**kw: object) -> list[str]:
        return [p.metadata.name for p in core.list_namespaced_pod("sel", **kw).items]

    assert names(label_selector="app=a") == ["p0", "p1"]
    assert names(label_selector="app==a,tier!=db") == ["p0"]
    assert names(label_selector="app in (a,b),tier=web") == ["p0", "p2"]
    assert names(label_selector="app notin (a)") == ["p2", "p3"]
    assert names(label_selector="tier") == ["p0", "p1", "p2"]
    assert names(label_selector="!tier") == ["p3"]
    assert names(field_selector="spec.nodeName=n1") == ["p0", "p1"]
    assert names(field_selector="spec.nodeName=") == ["p2", "p3"]
    assert names(field_selector="metadata.name=p2") == ["p2"]
    assert names(field_selector="status.phase=Pending,metadata.name!=p0") == ["p1", "p2", "p3"]
    assert names(field_selector="spec.schedulerName=default-scheduler") == \
        ["p0", "p1", "p2", "p3"]
    all_ns = [p.metadata.name for p in core.list_pod_for_all_namespaces(
        field_selector="metadata.namespace=sel").items]
    assert all_ns == ["p0", "p1", "p2", "p3"]
    with pytest.raises(ApiException) as e:
        core.list_namespaced_pod("sel", field_selector="spec.unknown=x")
    assert status_of(e.value) == (400, "BadRequest")


def test_pagination(core):
    core.create_namespace({"metadata": {"name": "pages"}})
    for i in range(25):
        core.create_namespaced_config_map("pages", {"metadata": {"name": f"cm-{i:02d}"}})
    first = core.list_namespaced_config_map("pages", limit=10)
    assert len(first.items) == 10 and first.metadata._continue
    assert first.metadata.remaining_item_count == 16  # 25 + kube-root-ca.crt - 10
    # Writes after the first page do not show up in later pages (a consistent snapshot).
    core.create_namespaced_config_map("pages", {"metadata": {"name": "cm-zz"}})
    seen = [c.metadata.name for c in first.items]
    token = first.metadata._continue
    while token:
        page = core.list_namespaced_config_map("pages", limit=10, _continue=token)
        assert page.metadata.resource_version == first.metadata.resource_version
        seen += [c.metadata.name for c in page.items]
        token = page.metadata._continue
    assert seen == sorted(seen) and len(seen) == 26 and "cm-zz" not in seen


def test_finalizers_delay_deletion(core):
    core.create_namespaced_config_map("default", {
        "metadata": {"name": "fin", "finalizers": ["example.com/hold"]}})
    core.delete_namespaced_config_map("fin", "default")
    cm = core.read_namespaced_config_map("fin", "default")
    assert cm.metadata.deletion_timestamp is not None
    with pytest.raises(ApiException) as e:
        core.patch_namespaced_config_map("fin", "default", {
            "metadata": {"finalizers": ["example.com/hold", "example.com/new"]}})
    assert status_of(e.value)[0] == 422
    core.patch_namespaced_config_map("fin", "default", {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as e:
        core.read_namespaced_config_map("fin", "default")
    assert e.value.status == 404


def test_graceful_pod_deletion(core):
    core.create_namespaced_pod("default", pod("unbound"))
    core.delete_namespaced_pod("unbound", "default")
    with pytest.raises(ApiException):
        core.read_namespaced_pod("unbound", "default")

    core.create_namespaced_pod("default", pod("bound", node="node-a"))
    core.delete_namespaced_pod("bound", "default", grace_period_seconds=30)
    p = core.read_namespaced_pod("bound", "default")
    assert p.metadata.deletion_timestamp is not None
    assert p.metadata.deletion_grace_period_seconds == 30
    # The kubelet (or a forced delete) finishes it.
    core.delete_namespaced_pod("bound", "default", grace_period_seconds=0)
    with pytest.raises(ApiException):
        core.read_namespaced_pod("bound", "default")


def test_status_subresource_and_main_resource_are_separate(core):
    core.create_namespaced_pod("default", pod("st"))
    core.patch_namespaced_pod_status("st", "default", {"status": {"phase": "Running"}})
    p = core.patch_namespaced_pod("st", "default", {"status": {"phase": "Failed"},
                                                    "metadata": {"labels": {"x": "1"}}})
    assert p.status.phase == "Running" and p.metadata.labels == {"x": "1"}
    p = core.read_namespaced_pod_status("st", "default")
    assert p.status.phase == "Running"


def test_strategic_merge_patch(srv, core):
    core.create_namespaced_pod("default", {
        "metadata": {"name": "smp", "finalizers": ["a/b"]},
        "spec": {"containers": [
            {"name": "c1", "image": "img:1", "env": [{"name": "A", "value": "1"}]},
            {"name": "c2", "image": "img:1"}]}})
    p = core.patch_namespaced_pod("smp", "default", {
        "metadata": {"finalizers": ["c/d"]},
        "spec": {"containers": [{"name": "c2", "image": "img:2"}]}})
    assert [(c.name, c.image) for c in p.spec.containers] == [("c1", "img:1"), ("c2", "img:2")]
    assert p.spec.containers[0].env[0].name == "A"
    assert p.metadata.finalizers == ["a/b", "c/d"]
    core.patch_namespaced_pod("smp", "default", {"metadata": {"finalizers": None}})
    # tolerations have no patch strategy upstream: the list is replaced.
    apps = client.AppsV1Api(api_client(srv))
    tmpl = {"metadata": {"labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "x"}],
                     "tolerations": [{"key": "k1", "operator": "Exists"}]}}
    apps.create_namespaced_daemon_set("default", {"metadata": {"name": "ds"}, "spec": {
        "selector": {"matchLabels": {"a": "b"}}, "template": tmpl}})
    ds = apps.patch_namespaced_daemon_set("ds", "default", {"spec": {"template": {"spec": {
        "tolerations": [{"key": "k2", "operator": "Exists"}]}}}})
    assert [t.key for t in ds.spec.template.spec.tolerations] == ["k2"]


def test_namespace_deletion_removes_contents(core):
    core.create_namespace({"metadata": {"name": "doomed"}})
    core.create_namespaced_config_map("doomed", {"metadata": {"name": "x"}})
    core.delete_namespace("doomed")
    with pytest.raises(ApiException) as e:
        core.create_namespaced_config_map("doomed", {"metadata": {"name": "y"}})
    assert e.value.status in (403, 404)
    deadline = time.time() + 30  # only bounds a failure
    while time.time() < deadline:
        try:
            core.read_namespace("doomed")
        except ApiException as ex:
            assert ex.status == 404
            break
        time.sleep(0.05)
    else:
        pytest.fail("namespace was not removed")


def test_watch_stream_from_resource_version(core):
    core.create_namespace({"metadata": {"name": "w"}})
    rv = core.list_namespaced_config_map("w").metadata.resource_version
    core.create_namespaced_config_map("w", {"metadata": {"name": "a", "labels": {"k": "v"}}})
    core.patch_namespaced_config_map("a", "w", {"data": {"x": "1"}})
    core.patch_namespaced_config_map("a", "w", {"metadata": {"labels": {"k": "other"}}})
    core.delete_namespaced_config_map("a", "w")
    w = watch.Watch()
    got = []
    for ev in w.stream(core.list_namespaced_config_map, "w", resource_version=rv,
                       label_selector="k=v", timeout_seconds=1):
        got.append((ev["type"], ev["object"].metadata.name))
    # Leaving the selector shows up as DELETED; the later delete is filtered out.
    assert got == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]


def test_watch_sees_live_events_and_bookmarks(srv, core):
    core.create_namespace({"metadata": {"name": "live"}})
    rv = core.list_namespaced_config_map("live").metadata.resource_version
    events = []

    def consume() -> None:
        w = watch.Watch()
        for ev in w.stream(core.list_namespaced_config_map, "live", resource_version=rv,
                           allow_watch_bookmarks=True, timeout_seconds=2,
                           _request_timeout=5):
            events.append(ev["type"])
            if ev["type"] == "DELETED":
                w.stop()

    t = threading.Thread(target=consume)
    t.start()
    time.sleep(0.5)
    core.create_namespaced_config_map("live", {"metadata": {"name": "b"}})
    core.delete_namespaced_config_map("b", "live")
    t.join(10)
    assert "BOOKMARK" in events
    assert [e for e in events if e != "BOOKMARK"] == ["ADDED", "DELETED"]


def test_watch_initial_state_with_resource_version_zero(core):
    core.create_namespace({"metadata": {"name": "init"}})
    core.create_namespaced_config_map("init", {"metadata": {"name": "c1"}})
    w = watch.Watch()
    names = [ev["object"].metadata.name for ev in w.stream(
        core.list_namespaced_config_map, "init", resource_version="0", timeout_seconds=1)
        if ev["type"] == "ADDED"]
    assert names == ["c1", "kube-root-ca.crt"]


def test_watch_too_old_resource_version_is_gone(core):
    core.create_namespace({"metadata": {"name": "old"}})
    rv = core.list_namespaced_config_map("old").metadata.resource_version
    for i in range(60):  # more than the watch cache keeps (50 in this fixture)
        core.create_namespaced_config_map("old", {"metadata": {"name": f"c{i}"}})
    resp = core.list_namespaced_config_map("old", watch=True, resource_version=rv,
                                           timeout_seconds=1, _preload_content=False)
    import json

    lines = [json.loads(line) for line in resp.read().splitlines() if line.strip()]
    assert lines[0]["type"] == "ERROR"
    assert lines[0]["object"]["code"] == 410 and lines[0]["object"]["reason"] == "Expired"


def test_watch_from_a_future_resource_version_asks_for_a_relist(core):
    """A reflector resuming against a restarted, emptier server gets 504 with cause
    ResourceVersionTooLarge, as from kube-apiserver, and relists instead of missing deletes."""
    rv = int(core.list_namespace().metadata.resource_version)
    with pytest.raises(ApiException) as err:
        core.list_namespace(watch=True, resource_version=str(rv + 1000), timeout_seconds=1,
                            _preload_content=False)
    code, _ = status_of(err.value)
    import json

    body = json.loads(err.value.body)
    assert code == 504
    assert body["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"


def test_binding(core):
    core.create_namespaced_pod("default", pod("tobind"))
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "tobind"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}}
    # The client's Binding model cannot decode the Status reply; read it raw.
    resp = core.create_namespaced_pod_binding("tobind", "default", body,
                                              _preload_content=False)
    assert resp.status == 201
    p = core.read_namespaced_pod("tobind", "default")
    assert p.spec.node_name == "node-1"
    assert any(c.type == "PodScheduled" and c.status == "True" for c in p.status.conditions)
    with pytest.raises(ApiException) as e:
        core.create_namespaced_pod_binding("tobind", "default", dict(
            body, target={"kind": "Node", "name": "node-2"}), _preload_content=False)
    assert status_of(e.value) == (409, "Conflict")


def test_send_initial_events_and_legacy_watch_path(srv, core):
    import json

    core.create_namespace({"metadata": {"name": "sie"}})
    core.create_namespaced_config_map("sie", {"metadata": {"name": "one"}})
    resp = core.list_namespaced_config_map(
        "sie", watch=True, send_initial_events=True, allow_watch_bookmarks=True,
        resource_version_match="NotOlderThan", resource_version="", timeout_seconds=1,
        _preload_content=False)
    events = [json.loads(x) for x in resp.read().splitlines() if x.strip()]
    assert [(e["type"], e["object"]["metadata"].get("name")) for e in events[:2]] == [
        ("ADDED", "kube-root-ca.crt"), ("ADDED", "one")]
    end = events[2]
    assert end["type"] == "BOOKMARK"
    assert end["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    from test.apiserver.testing import raw_request

    c = core.api_client
    rv = end["object"]["metadata"]["resourceVersion"]
    core.create_namespaced_config_map("sie", {"metadata": {"name": "two"}})
    code, body = raw_request(c, "GET", "/api/v1/watch/namespaces/sie/configmaps/two",
                             query={"resourceVersion": rv, "timeoutSeconds": "1"})
    assert code == 200
    body = body if isinstance(body, bytes) else json.dumps(body).encode()
    lines = [json.loads(x) for x in body.splitlines() if x.strip()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in lines] == [("ADDED", "two")]
    code, disc = raw_request(c, "GET", "/apis", accept=(
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
        "application/json"))
    assert code == 200 and disc["kind"] == "APIGroupDiscoveryList"
    apps = next(g for g in disc["items"] if g["metadata"]["name"] == "apps")
    deploy = next(r for r in apps["versions"][0]["resources"] if r["resource"] == "deployments")
    assert deploy["scope"] == "Namespaced" and deploy["shortNames"] == ["deploy"]
    assert {s["subresource"] for s in deploy["subresources"]} == {"status", "scale"}
