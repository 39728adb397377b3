"""Subresources and the remaining built-in groups with the official client: pods/eviction with
PodDisruptionBudgets, leases, events in both API groups, workloads, priority classes."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from test.apiserver import start
from test.apiserver.testing import api_client, raw_request


@pytest.fixture(scope="module")
def srv():
    s = start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def c(srv):
    return api_client(srv)


def running_pod(core: client.CoreV1Api, ns: str, name: str, labels: dict[str, str],
                ready: bool = True, owner: dict | None = None) -> None:
    md: dict[str, Any] = {"name": name, "labels": labels}
    if owner:
        md["ownerReferences"] = [owner]
    # The client sends a dict body as it is (its types ask for a V1Pod).
    core.create_namespaced_pod(ns, {"metadata": md,  # type: ignore[arg-type]
                                    "spec": {"nodeName": "n1", "containers": [
                                        {"name": "c", "image": "x"}]}})
    core.patch_namespaced_pod_status(name, ns, {"status": {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}})


def evict(c, ns: str, name: str, grace: int | None = None) -> tuple[int, dict]:
    body = {"apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": name, "namespace": ns}}
    if grace is not None:
        body["deleteOptions"] = {"gracePeriodSeconds": grace}
    return raw_request(c, "POST", f"/api/v1/namespaces/{ns}/pods/{name}/eviction", body)


def test_eviction_honours_pod_disruption_budget(c):
    core = client.CoreV1Api(c)
    policy = client.PolicyV1Api(c)
    core.create_namespace({"metadata": {"name": "evict"}})
    for i in range(3):
        running_pod(core, "evict", f"web-{i}", {"app": "web"})
    running_pod(core, "evict", "other", {"app": "other"})
    policy.create_namespaced_pod_disruption_budget("evict", {
        "metadata": {"name": "web-pdb"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}})
    # A pod no budget covers is evicted (gracefully: it is bound to a node).
    code, _ = evict(c, "evict", "other")
    assert code == 201
    assert core.read_namespaced_pod("other", "evict").metadata.deletion_timestamp is not None
    # 3 healthy, 2 required: one eviction is allowed, the next is refused with 429.
    code, _ = evict(c, "evict", "web-0", grace=0)
    assert code == 201
    code, body = evict(c, "evict", "web-1", grace=0)
    assert code == 429 and body["reason"] == "TooManyRequests"
    assert body["details"]["causes"][0]["reason"] == "DisruptionBudget"
    assert "needs 2 healthy pods and has 2 currently" in body["details"]["causes"][0]["message"]
    pdb = policy.read_namespaced_pod_disruption_budget("web-pdb", "evict")
    assert pdb.status.disruptions_allowed == 0 and pdb.status.desired_healthy == 2
    # An unready pod does not count as healthy and may be evicted when the budget is met.
    running_pod(core, "evict", "web-3", {"app": "web"}, ready=False)
    code, _ = evict(c, "evict", "web-3", grace=0)
    assert code == 201
    with pytest.raises(ApiException):
        core.read_namespaced_pod("web-3", "evict")


def test_eviction_with_max_unavailable_percentage(c):
    core = client.CoreV1Api(c)
    core.create_namespace({"metadata": {"name": "evict2"}})
    # A StatefulSet owns the pods: the server runs no controller for those, so the pods
    # are the test's alone (a ReplicaSet would make and remove pods of its own).
    sts = client.AppsV1Api(c).create_namespaced_stateful_set("evict2", {
        "metadata": {"name": "db"},
        "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "db"}},
                 "serviceName": "db",
                 "template": {"metadata": {"labels": {"app": "db"}},
                              "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
    owner = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db",
             "uid": sts.metadata.uid, "controller": True}
    for i in range(4):
        running_pod(core, "evict2", f"p{i}", {"app": "db"}, owner=owner)
    client.PolicyV1Api(c).create_namespaced_pod_disruption_budget("evict2", {
        "metadata": {"name": "db"},
        "spec": {"maxUnavailable": "25%", "selector": {"matchLabels": {"app": "db"}}}})
    assert evict(c, "evict2", "p0", grace=0)[0] == 201
    assert evict(c, "evict2", "p1", grace=0)[0] == 429
    # The disruption controller keeps the status current as pods come and go.
    running_pod(core, "evict2", "p4", {"app": "db"}, owner=owner)
    deadline = time.time() + 30  # only bounds a failure
    while time.time() < deadline:
        pdb = client.PolicyV1Api(c).read_namespaced_pod_disruption_budget("db", "evict2")
        # p1-p4 healthy, 3 required of the 4 the StatefulSet asks for: one may go again.
        if pdb.status and pdb.status.expected_pods == 4 and \
                pdb.status.current_healthy == 4 and pdb.status.disruptions_allowed == 1:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"PDB status not refreshed: {pdb.status}")


def test_leases(c):
    coord = client.CoordinationV1Api(c)
    lease = coord.create_namespaced_lease("kube-node-lease", {
        "metadata": {"name": "n1"},
        "spec": {"holderIdentity": "n1", "leaseDurationSeconds": 40,
                 "renewTime": "2026-01-01T00:00:00.000000Z"}})
    assert lease.spec.holder_identity == "n1"
    lease.spec.renew_time = None
    lease.spec.lease_transitions = 1
    updated = coord.replace_namespaced_lease("n1", "kube-node-lease", lease)
    assert updated.spec.lease_transitions == 1
    with pytest.raises(ApiException) as e:
        coord.replace_namespaced_lease("n1", "kube-node-lease", lease)  # stale
    assert e.value.status == 409


def test_events_share_storage_across_groups(c):
    core = client.CoreV1Api(c)
    ev = client.EventsV1Api(c)
    ev.create_namespaced_event("default", {
        "metadata": {"name": "e1"}, "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "koord-scheduler", "reportingInstance": "s-1",
        "action": "Scheduling", "reason": "Scheduled", "type": "Normal",
        "note": "placed", "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}})
    e = core.read_namespaced_event("e1", "default")
    assert e.message == "placed" and e.involved_object.name == "p"
    assert e.reporting_component == "koord-scheduler"
    listed = core.list_namespaced_event("default", field_selector="involvedObject.name=p")
    assert [x.metadata.name for x in listed.items] == ["e1"]
    back = ev.read_namespaced_event("e1", "default")
    assert back.note == "placed" and back.regarding.kind == "Pod"


def test_workload_generation_and_defaults(c):
    apps = client.AppsV1Api(c)
    d = apps.create_namespaced_deployment("default", {
        "metadata": {"name": "d1"},
        "spec": {"selector": {"matchLabels": {"a": "b"}},
                 "template": {"metadata": {"labels": {"a": "b"}},
                              "spec": {"containers": [{"name": "c", "image": "x:1"}]}}}})
    assert d.metadata.generation == 1 and d.spec.replicas == 1
    assert d.spec.strategy.type == "RollingUpdate"
    d = apps.patch_namespaced_deployment("d1", "default", {"metadata": {"labels": {"x": "y"}}})
    assert d.metadata.generation == 1
    d = apps.patch_namespaced_deployment("d1", "default", {"spec": {"replicas": 2}})
    assert d.metadata.generation == 2
    s = apps.read_namespaced_deployment_scale("d1", "default")
    assert s.spec.replicas == 2 and s.status.selector == "a=b"
    apps.patch_namespaced_deployment_scale("d1", "default", {"spec": {"replicas": 4}})
    assert apps.read_namespaced_deployment("d1", "default").spec.replicas == 4


def test_priority_classes(c):
    sched = client.SchedulingV1Api(c)
    names = {p.metadata.name for p in sched.list_priority_class().items}
    assert {"system-node-critical", "system-cluster-critical"} <= names
    pc = sched.create_priority_class({"metadata": {"name": "koord-prod"}, "value": 9000})
    assert pc.preemption_policy == "PreemptLowerPriority"
    with pytest.raises(ApiException) as e:
        sched.patch_priority_class("koord-prod", {"value": 1})
    assert json.loads(e.value.body)["reason"] == "Invalid"


def test_table_output(c):
    code, t = raw_request(c, "GET", "/api/v1/namespaces")
    assert code == 200 and t["kind"] == "NamespaceList"
    code, table = raw_request(c, "GET", "/api/v1/namespaces",
                              accept="application/json;as=Table;v=v1;g=meta.k8s.io")
    assert code == 200 and table["kind"] == "Table"
    assert [col["name"] for col in table["columnDefinitions"]] == ["Name", "Status", "Age"]
    assert table["rows"][0]["cells"][:2] == ["default", "Active"]
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
