"""Garbage collection by ownerReferences: background, foreground and orphan deletion of
owners, dependents whose owners are gone, for built-in and custom resources."""

from __future__ import annotations

import uuid

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from test.apiserver import start
from test.apiserver.gc import FOREGROUND_FINALIZER
from test.apiserver.testing import api_client, open_crd, raw_request, wait_for


@pytest.fixture(scope="module")
def srv():
    s = start()
    s.add_nodes(1)
    yield s
    s.stop()


def deployment(name: str, replicas: int) -> dict:
    return {"metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"nodeName": "node-0",
                                           "containers": [{"name": "c", "image": "x"}]}}}}


def owned_by(obj: client.V1ConfigMap, name: str = "owner") -> dict:
    """An ownerReference to the ConfigMap ``obj``."""
    assert obj.metadata is not None
    return {"apiVersion": "v1", "kind": "ConfigMap", "name": name, "uid": obj.metadata.uid}


def gone(read) -> bool:
    try:
        read()
    except ApiException as e:
        return e.status == 404
    return False


def names(items) -> set[str]:
    return {x.metadata.name for x in items}


def test_deleting_a_deployment_deletes_its_replicasets_and_pods(core, apps, ns):
    apps.create_namespaced_deployment(ns, deployment("web", 3))
    wait_for("3 pods", lambda: len(core.list_namespaced_pod(ns).items) == 3)
    apps.delete_namespaced_deployment("web", ns)  # background, the default
    wait_for("no replicasets", lambda: not apps.list_namespaced_replica_set(ns).items)
    wait_for("no pods", lambda: not core.list_namespaced_pod(ns).items)


def test_foreground_deletion_waits_for_the_dependents(core, apps, ns):
    apps.create_namespaced_deployment(ns, deployment("fg", 2))
    wait_for("2 pods", lambda: len(core.list_namespaced_pod(ns).items) == 2)
    d = apps.delete_namespaced_deployment("fg", ns, propagation_policy="Foreground")
    # The response is the deployment as it waits, with the garbage collector's finalizer
    # (the client hands it back as a dict: it expects a Status).
    assert d["metadata"]["deletionTimestamp"]
    assert FOREGROUND_FINALIZER in d["metadata"]["finalizers"]
    wait_for("the deployment gone", lambda: gone(
        lambda: apps.read_namespaced_deployment("fg", ns)))
    assert not core.list_namespaced_pod(ns).items
    assert not apps.list_namespaced_replica_set(ns).items


def test_orphan_deletion_keeps_the_dependents(core, apps, ns):
    rs = apps.create_namespaced_replica_set(ns, deployment("keep", 2))
    wait_for("2 pods", lambda: len(core.list_namespaced_pod(ns).items) == 2)
    apps.delete_namespaced_replica_set("keep", ns, propagation_policy="Orphan")
    wait_for("the replicaset gone", lambda: gone(
        lambda: apps.read_namespaced_replica_set("keep", ns)))
    pods = core.list_namespaced_pod(ns).items
    assert len(pods) == 2 and all(not p.metadata.owner_references for p in pods)
    # A new set with the same selector adopts them instead of making more.
    new = apps.create_namespaced_replica_set(ns, deployment("keep", 2))
    wait_for("adopted", lambda: all(
        p.metadata.owner_references and p.metadata.owner_references[0].uid == new.metadata.uid
        for p in core.list_namespaced_pod(ns).items))
    assert names(core.list_namespaced_pod(ns).items) == names(pods)
    assert rs.metadata.uid != new.metadata.uid


def test_dependents_naming_owners_that_never_existed_are_kept(core, ns):
    """Unlike upstream's collector (see gc.py): tests create pods naming controllers the
    server does not hold; only an owner's deletion collects its dependents."""
    owner = core.create_namespaced_config_map(ns, {"metadata": {"name": "owner"}})
    ghost = {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost",
             "uid": str(uuid.uuid4())}
    core.create_namespaced_config_map(ns, {"metadata": {
        "name": "orphaned", "ownerReferences": [ghost]}})
    core.create_namespaced_config_map(ns, {"metadata": {
        "name": "half", "ownerReferences": [ghost, owned_by(owner)]}})
    core.create_namespaced_config_map(ns, {"metadata": {
        "name": "kept", "ownerReferences": [owned_by(owner)]}})
    # Deleting the one live owner: every reference of both dependents is dead now.
    core.delete_namespaced_config_map("owner", ns)
    wait_for("dependents collected", lambda: names(core.list_namespaced_config_map(ns).items)
             == {"orphaned", "kube-root-ca.crt"})


def test_custom_resources_are_collected_with_their_owners(srv, core, ns):
    c = api_client(srv)
    crd = open_crd("gc.example.com", "Widget", "widgets")
    code, body = raw_request(c, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                             crd)
    assert code == 201, body
    owner = core.create_namespaced_config_map(ns, {"metadata": {"name": "owner"}})
    path = f"/apis/gc.example.com/v1/namespaces/{ns}/widgets"

    def create() -> bool:
        code, _ = raw_request(c, "POST", path, {
            "apiVersion": "gc.example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "ownerReferences": [owned_by(owner)]}})
        return code == 201

    wait_for("the CRD served", create)
    core.delete_namespaced_config_map("owner", ns)
    wait_for("the widget collected", lambda: raw_request(c, "GET", f"{path}/w")[0] == 404)


def test_pods_without_owners_are_left_alone(core, ns):
    core.create_namespaced_pod(ns, {"metadata": {"name": "solo"}, "spec": {
        "nodeName": "node-0", "containers": [{"name": "c", "image": "x"}]}})
    wait_for("running", lambda: core.read_namespaced_pod("solo", ns).status.phase == "Running")
    core.create_namespaced_config_map(ns, {"metadata": {"name": "marker"}})
    assert core.read_namespaced_pod("solo", ns).metadata.deletion_timestamp is None
