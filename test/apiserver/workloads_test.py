"""The in-server ReplicaSet and Deployment controllers, with the official client: pods created
from the template and owned by their set, replacement of evicted and deleted pods, scaling,
adoption, rollouts (RollingUpdate and Recreate) and the status fields clients read."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from test.apiserver import start
from test.apiserver.testing import Kubectl, api_client, kubectl_binary, raw_request, wait_for
from test.apiserver.workloads import POD_TEMPLATE_HASH, REVISION, deletion_order


@pytest.fixture(scope="module")
def srv():
    s = start()
    s.add_nodes(2, cpu="64", memory="256Gi")
    yield s
    s.stop()


def template(app: str, image: str = "nginx:1.27", node: str | None = "node-0") -> dict:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": image}]}
    if node:
        spec["nodeName"] = node  # no scheduler here: the template binds its pods
    return {"metadata": {"labels": {"app": app}}, "spec": spec}


def workload(name: str, replicas: int, **spec: Any) -> dict:
    return {"metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": template(name), **spec}}


def active_pods(core, ns: str, selector: str) -> list:
    return [p for p in core.list_namespaced_pod(ns, label_selector=selector).items
            if p.metadata.deletion_timestamp is None]


def running(core, ns: str, selector: str, n: int) -> list | None:
    pods = active_pods(core, ns, selector)
    ok = len(pods) == n and all(p.status.phase == "Running" for p in pods)
    return pods if ok else None


def test_replicaset_creates_owned_pods_and_reports_status(core, apps, ns):
    rs = apps.create_namespaced_replica_set(ns, workload("web", 3))
    pods = wait_for("3 running pods", lambda: running(core, ns, "app=web", 3))
    for p in pods:
        assert p.metadata.name.startswith("web-") and len(p.metadata.name) == len("web-") + 5
        (ref,) = p.metadata.owner_references
        assert (ref.kind, ref.name, ref.uid, ref.controller, ref.block_owner_deletion) == \
            ("ReplicaSet", "web", rs.metadata.uid, True, True)
        assert p.spec.containers[0].image == "nginx:1.27"
    st = wait_for("status", lambda: (s := apps.read_namespaced_replica_set(
        "web", ns).status).available_replicas == 3 and s)
    assert (st.replicas, st.fully_labeled_replicas, st.ready_replicas,
            st.observed_generation) == (3, 3, 3, 1)
    events = core.list_namespaced_event(ns, field_selector="involvedObject.name=web").items
    assert sorted(e.message for e in events if e.reason == "SuccessfulCreate") == \
        sorted(f"Created pod: {p.metadata.name}" for p in pods)
    assert {(e.source.component, e.involved_object.kind) for e in events} == \
        {("replicaset-controller", "ReplicaSet")}


def test_evicted_or_deleted_pods_are_replaced_at_once(core, apps, ns):
    apps.create_namespaced_replica_set(ns, workload("db", 2))
    before = {p.metadata.name for p in wait_for("2 running", lambda: running(
        core, ns, "app=db", 2))}
    victim = sorted(before)[0]
    code, _ = raw_request(core.api_client, "POST",
                          f"/api/v1/namespaces/{ns}/pods/{victim}/eviction",
                          {"apiVersion": "policy/v1", "kind": "Eviction",
                           "metadata": {"name": victim, "namespace": ns}})
    assert code == 201
    # The evicted pod still terminates, its replacement is already there.
    after = wait_for("a replacement", lambda: running(core, ns, "app=db", 2))
    names = {p.metadata.name for p in after}
    assert victim not in names and len(names - before) == 1
    other = sorted(names)[0]
    core.delete_namespaced_pod(other, ns, grace_period_seconds=0)
    wait_for("another replacement", lambda: (r := running(core, ns, "app=db", 2)) and
             other not in {p.metadata.name for p in r})


def test_scaling_deletes_pending_pods_first(core, apps, ns):
    apps.create_namespaced_replica_set(ns, workload("s", 2))
    wait_for("2 running", lambda: running(core, ns, "app=s", 2))
    # Two more that cannot start (no such node): scaling back down removes those.
    apps.patch_namespaced_replica_set("s", ns, {"spec": {
        "replicas": 4, "template": template("s", node="nowhere")}})
    wait_for("4 pods", lambda: len(active_pods(core, ns, "app=s")) == 4)
    apps.patch_namespaced_replica_set_scale("s", ns, {"spec": {"replicas": 2}})
    left = wait_for("2 pods", lambda: (p := active_pods(core, ns, "app=s")) and len(p) == 2
                    and p)
    assert {p.spec.node_name for p in left} == {"node-0"}
    assert all(p.status.phase == "Running" for p in left)


def test_deletion_order_prefers_unscheduled_pending_unready_newest():
    def pod(name: str, node: str = "", phase: str = "Running", ready: bool = True,
            created: str = "2026-01-01T00:00:00Z") -> dict:
        conds = [{"type": "Ready", "status": "True" if ready else "False",
                  "lastTransitionTime": created}]
        return {"metadata": {"name": name, "creationTimestamp": created},
                "spec": {"nodeName": node} if node else {},
                "status": {"phase": phase, "conditions": conds}}

    pods = [pod("old", "n"), pod("new", "n", created="2026-01-02T00:00:00Z"),
            pod("unready", "n", ready=False), pod("pending", "n", phase="Pending", ready=False),
            pod("unbound", phase="Pending", ready=False)]
    assert [p["metadata"]["name"] for p in sorted(pods, key=deletion_order)] == \
        ["unbound", "pending", "unready", "new", "old"]


def test_replicaset_adopts_matching_orphans(core, apps, ns):
    core.create_namespaced_pod(ns, {"metadata": {"name": "stray", "labels": {"app": "a"}},
                                    "spec": template("a")["spec"]})
    rs = apps.create_namespaced_replica_set(ns, workload("a", 2))
    pods = wait_for("2 running", lambda: running(core, ns, "app=a", 2))
    assert "stray" in {p.metadata.name for p in pods}
    stray = core.read_namespaced_pod("stray", ns)
    assert stray.metadata.owner_references[0].uid == rs.metadata.uid


def test_deployment_rolls_out_through_replicasets(core, apps, ns):
    d = apps.create_namespaced_deployment(ns, workload("api", 4))
    pods = wait_for("4 running", lambda: running(core, ns, "app=api", 4))
    (rs,) = apps.list_namespaced_replica_set(ns).items
    h = rs.metadata.labels[POD_TEMPLATE_HASH]
    assert rs.metadata.name == f"api-{h}"
    assert rs.spec.selector.match_labels == {"app": "api", POD_TEMPLATE_HASH: h}
    assert rs.spec.template.metadata.labels == {"app": "api", POD_TEMPLATE_HASH: h}
    assert rs.metadata.owner_references[0].uid == d.metadata.uid
    assert rs.metadata.annotations[REVISION] == "1"
    assert {p.metadata.labels[POD_TEMPLATE_HASH] for p in pods} == {h}

    def complete() -> Any:
        s = apps.read_namespaced_deployment("api", ns).status
        conds = {c.type: (c.status, c.reason) for c in s.conditions or ()}
        return (s.updated_replicas == s.replicas == s.available_replicas == 4 and
                s.ready_replicas == 4 and
                conds.get("Progressing") == ("True", "NewReplicaSetAvailable") and
                conds.get("Available") == ("True", "MinimumReplicasAvailable")) and s

    s = wait_for("a complete rollout", complete)
    assert s.observed_generation == 1
    # A new template: a new set takes over, the old one goes to zero and stays as history.
    apps.patch_namespaced_deployment("api", ns, {"spec": {"template": {"spec": {
        "containers": [{"name": "c", "image": "nginx:1.28"}]}}}})
    wait_for("the new image everywhere", lambda: (p := running(core, ns, "app=api", 4)) and
             {x.spec.containers[0].image for x in p} == {"nginx:1.28"})
    wait_for("the second rollout", lambda: complete() and complete().observed_generation == 2)
    sets = {x.metadata.name: x for x in apps.list_namespaced_replica_set(ns).items}
    assert len(sets) == 2 and sets[rs.metadata.name].spec.replicas == 0
    new = next(x for x in sets.values() if x.metadata.name != rs.metadata.name)
    assert new.metadata.annotations[REVISION] == "2" and new.spec.replicas == 4
    d = apps.read_namespaced_deployment("api", ns)
    assert d.metadata.annotations[REVISION] == "2"
    scaling = [e.message for e in sorted(core.list_namespaced_event(
        ns, field_selector="involvedObject.name=api").items, key=lambda e: e.metadata.name)
        if e.reason == "ScalingReplicaSet"]
    assert scaling[0] == f"Scaled up replica set {rs.metadata.name} from 0 to 4"
    assert f"Scaled up replica set {new.metadata.name} from 0 to 1" in scaling
    assert any(m.startswith(f"Scaled down replica set {rs.metadata.name} from ") and
               m.endswith(" to 0") for m in scaling)
    # Scaling goes to the current set.
    apps.patch_namespaced_deployment_scale("api", ns, {"spec": {"replicas": 2}})
    wait_for("2 pods", lambda: running(core, ns, "app=api", 2))
    assert apps.read_namespaced_replica_set(new.metadata.name, ns).spec.replicas == 2


def test_rolling_update_keeps_within_max_unavailable(core, apps, ns):
    dep = workload("ru", 4, strategy={"type": "RollingUpdate", "rollingUpdate": {
        "maxSurge": 0, "maxUnavailable": 1}})
    apps.create_namespaced_deployment(ns, dep)
    wait_for("4 running", lambda: running(core, ns, "app=ru", 4))
    # The new pods cannot start: with maxSurge 0 and maxUnavailable 1, one old pod goes and
    # one new pod is made, and the rollout stops there.
    apps.patch_namespaced_deployment("ru", ns, {"spec": {"template": template(
        "ru", node="nowhere")}})
    wait_for("one new pod", lambda: len([p for p in active_pods(core, ns, "app=ru")
                                         if p.spec.node_name == "nowhere"]) == 1)
    s = wait_for("status", lambda: (x := apps.read_namespaced_deployment(
        "ru", ns).status).observed_generation == 2 and x.updated_replicas == 1 and x)
    assert (s.replicas, s.available_replicas, s.unavailable_replicas) == (4, 3, 1)
    conds = {c.type: (c.status, c.reason) for c in s.conditions}
    assert conds["Available"] == ("True", "MinimumReplicasAvailable")
    assert conds["Progressing"] == ("True", "ReplicaSetUpdated")
    assert len([p for p in active_pods(core, ns, "app=ru") if p.status.phase == "Running"]) == 3


def test_recreate_replaces_all_pods(core, apps, ns):
    apps.create_namespaced_deployment(ns, workload("rc", 2, strategy={"type": "Recreate"}))
    old = {p.metadata.name for p in wait_for("2 running", lambda: running(
        core, ns, "app=rc", 2))}
    apps.patch_namespaced_deployment("rc", ns, {"spec": {"template": template(
        "rc", image="nginx:1.28")}})
    new = wait_for("2 new pods", lambda: (p := running(core, ns, "app=rc", 2)) and
                   not old & {x.metadata.name for x in p} and p)
    assert {p.spec.containers[0].image for p in new} == {"nginx:1.28"}


def bind_pending(core, ns: str, node: str) -> None:
    """What a scheduler would do: bind the namespace's unbound pods to ``node``."""
    for p in core.list_namespaced_pod(ns).items:
        if not p.spec.node_name and p.metadata.deletion_timestamp is None:
            raw_request(core.api_client, "POST",
                        f"/api/v1/namespaces/{ns}/pods/{p.metadata.name}/binding",
                        {"apiVersion": "v1", "kind": "Binding",
                         "metadata": {"name": p.metadata.name},
                         "target": {"kind": "Node", "name": node}})


@pytest.mark.skipif(kubectl_binary() is None, reason="kubectl is not installed")
def test_kubectl_create_scale_and_delete_a_deployment(srv, core, ns):
    kubectl = Kubectl(srv)
    try:
        def scheduled(n: int) -> list | None:
            bind_pending(core, ns, "node-1")
            return running(core, ns, "app=web", n)

        kubectl.run("create", "deployment", "web", "--image=nginx", "--replicas=3", "-n", ns)
        wait_for("3 running pods", lambda: scheduled(3))

        def table() -> list[list[str]] | None:
            out = kubectl.run("get", "rs,deploy", "-n", ns).stdout
            rows = [line.split() for line in out.splitlines() if line.strip()]
            ok = any(r[0] == "deployment.apps/web" and r[1:4] == ["3/3", "3", "3"]
                     for r in rows)
            return rows if ok else None

        rows = wait_for("kubectl get rs,deploy", table)
        assert rows[0][:5] == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
        rs = next(r for r in rows if r[0].startswith("replicaset.apps/web-"))
        assert rs[1:4] == ["3", "3", "3"]
        assert next(r for r in rows if r[0] == "NAME" and r is not rows[0])[:5] == \
            ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
        kubectl.run("rollout", "status", "deployment/web", "-n", ns, "--timeout=30s")
        wide = kubectl.run("get", "rs", "-n", ns, "-o", "wide").stdout.split("\n")
        assert wide[0].split()[5:] == ["CONTAINERS", "IMAGES", "SELECTOR"]
        assert wide[1].split()[5:7] == ["nginx", "nginx"]
        assert wide[1].split()[7] == f"app=web,pod-template-hash={rs[0].rsplit('-', 1)[1]}"

        kubectl.run("scale", "deployment", "web", "--replicas=5", "-n", ns)
        pods = wait_for("5 running pods", lambda: scheduled(5))
        victim = pods[0].metadata.name
        kubectl.run("delete", "pod", victim, "-n", ns)
        wait_for("a replacement", lambda: (p := scheduled(5)) and
                 victim not in {x.metadata.name for x in p})

        kubectl.run("delete", "deployment", "web", "-n", ns)
        wait_for("the replicaset and pods gone", lambda: not kubectl.run(
            "get", "rs,pods", "-n", ns, "-o", "name").stdout.strip())
    finally:
        kubectl.close()


def test_controllers_carry_on_after_a_restart(tmp_path):
    with start(workdir=str(tmp_path)) as first:
        core = client.CoreV1Api(api_client(first))
        apps = client.AppsV1Api(api_client(first))
        rs = workload("kept", 2)
        rs["spec"]["template"] = template("kept", node=None)  # pending: no scheduler here
        apps.create_namespaced_replica_set("default", rs)
        wait_for("2 pods", lambda: len(active_pods(core, "default", "app=kept")) == 2)
        owner = core.create_namespaced_config_map("default", {"metadata": {"name": "owner"}})
        core.create_namespaced_config_map("default", {"metadata": {
            "name": "dependent", "ownerReferences": [{
                "apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                "uid": owner.metadata.uid}]}})
    with start(workdir=str(tmp_path)) as second:
        core = client.CoreV1Api(api_client(second))
        apps = client.AppsV1Api(api_client(second))
        # The restored set is reconciled, and the restored dependents are known by owner.
        apps.patch_namespaced_replica_set_scale("kept", "default", {"spec": {"replicas": 3}})
        wait_for("3 pods", lambda: len(active_pods(core, "default", "app=kept")) == 3)
        core.delete_namespaced_config_map("owner", "default")
        wait_for("the dependent collected", lambda: "dependent" not in {
            c.metadata.name for c in core.list_namespaced_config_map("default").items})


def test_a_paused_deployment_scales_but_does_not_roll_out(core, apps, ns):
    apps.create_namespaced_deployment(ns, workload("p", 2))
    wait_for("2 running", lambda: running(core, ns, "app=p", 2))
    apps.patch_namespaced_deployment("p", ns, {"spec": {"paused": True, "replicas": 3,
                                                        "template": template("p", "nginx:2")}})
    pods = wait_for("3 running", lambda: running(core, ns, "app=p", 3))
    assert {p.spec.containers[0].image for p in pods} == {"nginx:1.27"}
    assert len(apps.list_namespaced_replica_set(ns).items) == 1
    s = wait_for("paused", lambda: (x := apps.read_namespaced_deployment("p", ns).status)
                 .observed_generation == 2 and x)
    progressing = next(c for c in s.conditions if c.type == "Progressing")
    assert (progressing.status, progressing.reason, progressing.message) == \
        ("Unknown", "DeploymentPaused", "Deployment is paused")
    apps.patch_namespaced_deployment("p", ns, {"spec": {"paused": False}})
    wait_for("the rollout", lambda: (p := running(core, ns, "app=p", 3)) and
             {x.spec.containers[0].image for x in p} == {"nginx:2"})
