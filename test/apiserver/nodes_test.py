"""Simulated nodes: registration, Lease heartbeats, pod lifecycle and graceful deletion."""

from __future__ import annotations

import time

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from test.apiserver import start
from test.apiserver.nodes import RUN_DURATION, parse_duration
from test.apiserver.testing import Kubectl, api_client, kubectl_binary


@pytest.fixture(scope="module")
def srv():
    s = start(lease_interval=0.1)
    s.add_nodes(3, cpu="4", memory="8Gi", labels={"pool": "sim"},
                taints=[{"key": "dedicated", "value": "sim", "effect": "NoSchedule"}])
    yield s
    s.stop()


@pytest.fixture(scope="module")
def core(srv):
    return client.CoreV1Api(api_client(srv))


def wait_for(fn, timeout: float = 30.0):
    """Polls ``fn`` until it is true; the timeout only bounds a failure."""
    deadline = time.time() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.time() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


def pod(name: str, node: str, cpu: str = "100m", **annotations: str) -> dict:
    return {"metadata": {"name": name, "annotations": annotations},
            "spec": {"nodeName": node, "containers": [
                {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}}


def test_parse_duration():
    assert parse_duration("1.5") == 1.5
    assert parse_duration("1m30s") == 90
    assert parse_duration("250ms") == 0.25
    assert parse_duration("soon") is None


def test_nodes_registered_ready(core):
    nodes = core.list_node(label_selector="pool=sim").items
    assert [n.metadata.name for n in nodes] == ["node-0", "node-1", "node-2"]
    n = nodes[0]
    assert n.status.allocatable["cpu"] == "4" and n.status.capacity["memory"] == "8Gi"
    assert n.spec.taints[0].key == "dedicated"
    assert {c.type: c.status for c in n.status.conditions}["Ready"] == "True"
    assert n.metadata.labels["kubernetes.io/hostname"] == "node-0"


def test_lease_heartbeats(srv):
    coord = client.CoordinationV1Api(api_client(srv))
    first = coord.read_namespaced_lease("node-0", "kube-node-lease")
    assert first.spec.holder_identity == "node-0"
    wait_for(lambda: coord.read_namespaced_lease("node-0", "kube-node-lease").spec.renew_time
             > first.spec.renew_time)


def test_bound_pod_runs_and_completes(core):
    rv = core.list_namespaced_pod("default").metadata.resource_version
    core.create_namespaced_pod("default", pod("job", "node-1", **{RUN_DURATION: "0.3s"}))
    # Every state the pod goes through, from a watch: polling can miss the 0.3 s it runs
    # when a busy machine makes each GET slower than that.
    states = {}  # phase -> the pod as first seen in it
    w = watch.Watch()
    for ev in w.stream(core.list_namespaced_pod, "default", resource_version=rv,
                       field_selector="metadata.name=job", timeout_seconds=30):
        states.setdefault(ev["object"].status.phase, ev["object"])
        if "Succeeded" in states:
            w.stop()
    assert list(states)[-2:] == ["Running", "Succeeded"], list(states)
    p = states["Running"]
    assert p.status.pod_ip and p.status.host_ip
    assert p.status.container_statuses[0].ready is True
    assert {c.type for c in p.status.conditions} >= {"Ready", "PodScheduled", "Initialized"}
    p = states["Succeeded"]
    assert p.status.container_statuses[0].state.terminated.reason == "Completed"


def test_pod_that_does_not_fit_fails(core):
    core.create_namespaced_pod("default", pod("big-1", "node-2", cpu="3"))
    wait_for(lambda: core.read_namespaced_pod("big-1", "default").status.phase == "Running")
    core.create_namespaced_pod("default", pod("big-2", "node-2", cpu="2"))
    p = wait_for(lambda: (x := core.read_namespaced_pod("big-2", "default")).status.phase ==
                 "Failed" and x)
    assert p.status.reason == "OutOfcpu"


def test_graceful_deletion_is_finished_by_the_node(core):
    core.create_namespaced_pod("default", pod("web", "node-0"))
    wait_for(lambda: core.read_namespaced_pod("web", "default").status.phase == "Running")
    core.delete_namespaced_pod("web", "default")

    def gone() -> bool:
        try:
            core.read_namespaced_pod("web", "default")
            return False
        except ApiException as e:
            return e.status == 404

    wait_for(gone)


@pytest.mark.skipif(kubectl_binary() is None, reason="kubectl is not installed")
def test_kubectl_shows_running_pods(srv, core):
    core.create_namespaced_pod("default", pod("shown", "node-0"))
    wait_for(lambda: core.read_namespaced_pod("shown", "default").status.phase == "Running")
    k = Kubectl(srv)
    try:
        out = k.run("get", "pods", "shown", "--no-headers").stdout.split()
        assert out[:3] == ["shown", "1/1", "Running"]
        nodes = k.run("get", "nodes", "--no-headers").stdout.splitlines()
        assert len(nodes) == 3 and all(line.split()[1] == "Ready" for line in nodes)
        # kubectl delete waits until the node has finished the pod.
        k.run("delete", "pod", "shown", "--timeout=10s")
        # drain: cordon, then evict every pod on the node and wait for them to go.
        for i in range(2):
            core.create_namespaced_pod("default", pod(f"drained-{i}", "node-1"))
        wait_for(lambda: all(core.read_namespaced_pod(f"drained-{i}", "default").status.phase
                             == "Running" for i in range(2)))
        out = k.run("drain", "node-1", "--force", "--timeout=20s").stdout
        assert "node/node-1 drained" in out
        assert core.read_node("node-1").spec.unschedulable is True
        left = core.list_pod_for_all_namespaces(field_selector="spec.nodeName=node-1").items
        assert [p.metadata.name for p in left] == []
        k.run("uncordon", "node-1")
    finally:
        k.close()
