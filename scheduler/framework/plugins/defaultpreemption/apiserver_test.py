"""Preemption against the embedded API server: PDBs come from the informer cache, the
victim is marked, deleted and told why, and the protected pod stays."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pkg.client.errors import is_not_found
from pkg.client.informers import SharedInformerFactory
from pkg.client.resources import (
    EVENTS,
    NAMESPACES,
    NODES,
    POD_DISRUPTION_BUDGETS,
    PODS,
    PRIORITY_CLASSES,
)
from pkg.client.rest import Client
from pkg.events.events import EventBroadcaster
from pkg.util.clock import REAL_CLOCK
from scheduler.framework.plugins.defaultpreemption.testing import attempt, build_framework
from scheduler.framework.types import NodeInfo, PodInfo
from test.apiserver import ServerHandle, start

NS = "preempt"


@pytest.fixture(scope="module")
def srv() -> Iterator[ServerHandle]:
    with start() as s:
        yield s


def wait_for(what: str, cond: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def pod(name: str, priority_class: str, app: str, node: str = "") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "labels": {"app": app}},
            "spec": {"priorityClassName": priority_class, "nodeName": node or None,
                     "containers": [{"name": "c", "image": "busybox", "resources": {
                         "requests": {"cpu": "1500m" if node else "1"}}}]}}


def gone(client: Client, name: str) -> bool:
    try:
        client.get(PODS, name, NS)
    except Exception as err:
        if is_not_found(err):
            return True
        raise
    return False


def test_the_victim_is_deleted_and_the_pdb_protected_pod_stays(srv: ServerHandle) -> None:
    client = Client.from_kubeconfig(srv.kubeconfig, qps=-1)
    srv.add_nodes(2, cpu="2", memory="4Gi")
    client.create(NAMESPACES, {"metadata": {"name": NS}})
    for name, value in (("low", 1), ("mid", 500), ("high", 1000)):
        client.create(PRIORITY_CLASSES, {"apiVersion": "scheduling.k8s.io/v1",
                                         "kind": "PriorityClass",
                                         "metadata": {"name": name}, "value": value})
    # Without its PDB, "guarded" (lowest priority) would be the cheaper victim.
    client.create(PODS, pod("guarded", "low", "guarded", node="node-0"), NS)
    client.create(PODS, pod("victim", "mid", "free", node="node-1"), NS)
    client.create(POD_DISRUPTION_BUDGETS, {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "guard", "namespace": NS},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}}}, NS)
    preemptor = client.create(PODS, pod("urgent", "high", "urgent"), NS)

    factory = SharedInformerFactory(client)
    broadcaster = EventBroadcaster(client)
    infos = {n["metadata"]["name"]: NodeInfo(n) for n in client.list(NODES)["items"]}
    for p in client.list(PODS, NS)["items"]:
        if p["spec"].get("nodeName"):
            infos[p["spec"]["nodeName"]].add_pod(PodInfo(p))
    fwk = build_framework(list(infos.values()), client=client, informer_factory=factory,
                          recorder_factory=broadcaster.new_recorder,
                          clock=REAL_CLOCK)
    factory.start()
    try:
        factory.wait_for_cache_sync(timeout=10)
        pdbs = factory.informer_for(POD_DISRUPTION_BUDGETS, typed=False).lister
        wait_for("the disruption controller to count the guarded pod", lambda: any(
            (p.get("status") or {}).get("currentHealthy") == 1 for p in pdbs.list()))

        a = attempt(fwk, preemptor)

        assert a.status.is_success(), a.status
        assert a.result is not None and a.result.nominated_node_name == "node-1"
        wait_for("the victim to be deleted", lambda: gone(client, "victim"))
        guarded = client.get(PODS, "guarded", NS)
        assert not guarded["metadata"].get("deletionTimestamp")
        broadcaster.flush()
        events = client.list(EVENTS, NS, field_selector="involvedObject.name=victim")["items"]
        assert [(e["type"], e["reason"], e["message"]) for e in events] == [
            ("Normal", "Preempted",
             f"Preempted by pod {preemptor['metadata']['uid']} on node node-1")]
    finally:
        factory.shutdown()
        broadcaster.shutdown()
