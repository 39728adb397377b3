"""Fault e2e: the local cluster (``test.localcluster``: the API server, two replicas each of
koord-manager and koord-scheduler, koordlets, all real processes under the supervisor) recovers
from what a cluster does to its components, with no hand action.

* kill -9 of the leading koord-manager and the leading koord-scheduler in the middle of a burst
  of a few hundred online and batch pods: no pod lost (every pod the driver created ends up
  bound, the driver retries creates the webhook refused), none bound twice (a pod's nodeName
  never changes, one Scheduled event per pod), none admitted unmutated (every batch pod carries
  the ClusterColocationProfile's mutation: the webhook's failurePolicy is Fail), the killed
  replicas restarted by the supervisor and the Leases taken over.
* a 30 s API-server stall (SIGSTOP ... SIGCONT): the leaders lose their Leases and exit as
  upstream's do, the supervisor restarts them, and a new pod is scheduled afterwards.
* an API-server restart on the same workdir while the workload driver runs: the same
  kubeconfig keeps working, the objects are still there, the driver carries on and the
  components reconnect (a new pod is scheduled). This relies on the API
  server keeping objects, CA, token and port in its workdir across restarts.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from pkg.client import ApiError
from pkg.client.resources import CLUSTER_COLOCATION_PROFILES, EVENTS, NODES, PODS
from pkg.client.rest import Client
from test.e2e.cluster import wait_for
from test.localcluster.cluster import LocalCluster
from test.localcluster.components import APISERVER, MANAGER, SCHEDULER
from test.localcluster.scenario import Scenario
from test.localcluster.workload import BATCH, LABEL_KIND, online_pod

Obj = dict[str, Any]
NODE_COUNT = 3
ONLINE_PER_NODE = 20
BATCH_PER_NODE = 80  # one wave: 240 batch pods
# Generous: only a failure waits this long on a loaded 2-core machine.
RECOVERY_SECONDS = 150


def fault_scenario() -> Scenario:
    """Small pods that all fit: 60 online pods at the start, 240 batch pods in one wave."""
    return Scenario.model_validate({
        "name": "faults",
        "dayLengthSeconds": 60,
        "sampleIntervalSeconds": 5,
        "nodes": {"count": NODE_COUNT, "cpu": "16", "memory": "64Gi", "pods": 200},
        "sloControllerConfig": {"colocation-config": {
            "enable": True, "metricReportIntervalSeconds": 30,
            "metricAggregateDurationSeconds": 60, "cpuReclaimThresholdPercent": 70,
            "memoryReclaimThresholdPercent": 80}},
        "online": [{"name": "web", "replicasPerNode": ONLINE_PER_NODE,
                    "requests": {"cpu": "100m", "memory": "128Mi"},
                    "cpuUsage": {"base": "50m", "peak": "100m"},
                    "memoryUsage": {"base": "64Mi", "peak": "96Mi"}}],
        "batch": [{"name": "spark", "waves": 1, "podsPerNodePerWave": BATCH_PER_NODE,
                   "firstWaveAtFraction": 0.1, "requests": {"cpu": "10m", "memory": "32Mi"},
                   "usage": {"cpu": "5m", "memory": "16Mi"}, "runSeconds": 600}],
    })


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    c = LocalCluster(fault_scenario(), tmp_path / "local-up")
    try:
        c.up()
        yield c
    finally:
        c.down()


def _client(c: LocalCluster) -> Client:
    assert c.client is not None
    return c.client


def _kill(c: LocalCluster, name: str, sig: signal.Signals = signal.SIGKILL) -> int:
    pid = c.components.processes[name].pid
    os.kill(pid, sig)
    return pid


def _workload_pods(client: Client) -> list[Obj]:
    return [p for p in client.list(PODS)["items"]
            if LABEL_KIND in (p["metadata"].get("labels") or {})]


def _schedules_a_new_pod(c: LocalCluster, name: str) -> str:
    """Create an online pod (retrying while the webhook or API server is not back) and wait
    until it is bound; returns its node."""
    client = _client(c)
    svc = c.scenario.online[0]
    pod = online_pod(svc, name, c.scenario.day_length_seconds, time.time())

    def created() -> bool:
        try:
            client.create(PODS, pod, svc.namespace)
        except ApiError as e:
            return e.status == 409  # an earlier try went through
        except OSError:
            return False
        return True

    wait_for(created, timeout=RECOVERY_SECONDS, interval=1, what=f"pod {name} created")

    def bound() -> str:
        try:
            return str(client.get(PODS, name, svc.namespace)["spec"].get("nodeName") or "")
        except (ApiError, OSError):
            return ""

    return str(wait_for(bound, timeout=RECOVERY_SECONDS, interval=0.5,
                        what=f"pod {name} scheduled"))


class BindingWatch:
    """Polls the pods: the first nodeName of each, every change of it after that."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.first: dict[str, str] = {}
        self.changed: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="binding-watch", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(0.5):
            try:
                pods = _workload_pods(self.client)
            except (ApiError, OSError):
                continue
            for p in pods:
                key = f"{p['metadata']['namespace']}/{p['metadata']['name']}"
                node = p["spec"].get("nodeName") or ""
                if not node:
                    continue
                was = self.first.setdefault(key, node)
                if was != node:
                    self.changed.append(f"{key}: {was} -> {node}")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


def test_kill_9_of_the_leaders_mid_burst_loses_nothing(cluster: LocalCluster) -> None:
    client = _client(cluster)
    comps = cluster.components
    leaders = {comp: comps.lease(client, comp) for comp in (MANAGER, SCHEDULER)}
    assert all(replica for _, replica, _ in leaders.values()), leaders
    online = NODE_COUNT * ONLINE_PER_NODE
    killed: dict[str, float] = {}

    def kill_mid_burst() -> None:
        # Once the batch wave is under way: 40 of its 240 pods created, the rest to come.
        wait_for(lambda: cluster.workload is not None
                 and cluster.workload.created >= online + 40,
                 timeout=RECOVERY_SECONDS, interval=0.05, what="the batch wave under way")
        for _, replica, _ in leaders.values():
            _kill(cluster, replica)
            killed[replica] = time.monotonic()

    killer = threading.Thread(target=kill_mid_burst, name="killer", daemon=True)
    watch = BindingWatch(client)
    killer.start()
    try:
        cluster.run(cluster.scenario.day_length_seconds)
        killer.join(RECOVERY_SECONDS)
        assert len(killed) == 2, "the leaders were not killed mid-burst"
        wl = cluster.workload
        assert wl is not None
        # No pod lost: every slot of the workload has its pod, none was replaced ...
        assert [s.name for s in wl.slots if s.current is None] == []
        assert wl.replaced == 0
        total = online + NODE_COUNT * BATCH_PER_NODE
        assert wl.created == total
        # ... and every pod created ends up bound.
        wait_for(lambda: sum(1 for p in _workload_pods(client) if p["spec"].get("nodeName"))
                 == total, timeout=RECOVERY_SECONDS, interval=1, what=f"all {total} pods bound")
    finally:
        watch.stop()
    pods = _workload_pods(client)
    assert len(pods) == total
    # None bound twice: no nodeName ever changed, one Scheduled event per pod at most.
    assert watch.changed == []
    scheduled: dict[str, int] = {}
    for e in client.list(EVENTS)["items"]:
        obj = e.get("involvedObject") or {}
        if e.get("reason") == "Scheduled" and obj.get("kind") == "Pod":
            key = f"{obj.get('namespace')}/{obj.get('name')}"
            scheduled[key] = scheduled.get(key, 0) + (e.get("count") or 1)
    assert {k: n for k, n in scheduled.items() if n > 1} == {}
    # None admitted unmutated: the profile's mutation on every batch pod.
    batch = [p for p in pods if p["metadata"]["labels"][LABEL_KIND] == BATCH]
    assert len(batch) == NODE_COUNT * BATCH_PER_NODE
    unmutated = [p["metadata"]["name"] for p in batch
                 if p["metadata"]["labels"].get("koordinator.sh/qosClass") != "BE"
                 or p["spec"].get("priorityClassName") != "koord-batch"
                 or "kubernetes.io/batch-cpu" not in
                 p["spec"]["containers"][0]["resources"]["requests"]]
    assert unmutated == []
    # The supervisor restarted both killed replicas; the Leases changed hands.
    for name in killed:
        proc = comps.processes[name]
        assert proc.restarts >= 1 and proc.last_exit_code == -signal.SIGKILL, name
        wait_for(proc.alive, timeout=RECOVERY_SECONDS, what=f"{name} running again")
    for comp, (identity, _, transitions) in leaders.items():
        def taken_over(comp: str = comp, identity: str = identity) -> bool:
            holder, replica, _ = comps.lease(client, comp)
            return bool(replica) and holder != identity

        wait_for(taken_over, timeout=RECOVERY_SECONDS, what=f"a new {comp} leader")
        assert comps.lease(client, comp)[2] > transitions
    report = (cluster.workdir / "report.txt").read_text()
    assert "Restarts (the supervisor restarts what exits): 2;" in report


def test_a_30s_api_server_stall_recovers_without_a_hand(cluster: LocalCluster) -> None:
    client = _client(cluster)
    comps = cluster.components
    leaders = [comps.leader(client, comp) for comp in (MANAGER, SCHEDULER)]
    assert all(leaders), leaders
    _schedules_a_new_pod(cluster, "before-stall")
    apiserver = _kill(cluster, APISERVER, signal.SIGSTOP)
    stalled = time.monotonic()
    try:
        # The leaders cannot renew: they give up after the renew deadline and exit (1), as
        # upstream's do; the stall lasts 30 s in all.
        wait_for(lambda: time.monotonic() - stalled >= 30 and all(
            comps.processes[n].restarts or comps.processes[n].last_exit_code is not None
            for n in leaders), timeout=RECOVERY_SECONDS, interval=0.5,
            what="the leaders to exit during a 30 s stall")
    finally:
        os.kill(apiserver, signal.SIGCONT)
    for name in leaders:
        assert comps.processes[name].last_exit_code == 1, name
    assert comps.processes[APISERVER].restarts == 0
    _schedules_a_new_pod(cluster, "after-stall")
    for name in leaders:
        wait_for(comps.processes[name].alive, timeout=RECOVERY_SECONDS,
                 what=f"{name} restarted")
    for comp in (MANAGER, SCHEDULER):
        wait_for(partial(comps.leader, client, comp), timeout=RECOVERY_SECONDS,
                 what=f"a {comp} leader again")


def test_an_api_server_restart_keeps_objects_and_components_reconnect(
        cluster: LocalCluster) -> None:
    client = _client(cluster)
    comps = cluster.components
    node = _schedules_a_new_pod(cluster, "before-restart")
    kubeconfig = comps.kubeconfig.read_text()
    # A client of the kubeconfig written before the restart (server, CA, token) ...
    same = Client.from_kubeconfig(str(comps.kubeconfig))

    def restart_once(t: float) -> None:
        if t >= 3 and APISERVER not in restarted:
            restarted.add(APISERVER)
            _kill(cluster, APISERVER, signal.SIGTERM)

    restarted: set[str] = set()
    try:
        # The workload driver runs through the restart (its 300 pods from t=0 and t=6 s):
        # it retries what failed and reports at the end.
        cluster.run(40, restart_once)
        assert comps.processes[APISERVER].restarts == 1
        assert cluster.workload is not None
        assert [s.name for s in cluster.workload.slots if s.current is None] == []
        assert "kube-apiserver 1 (last exit 0)" in (cluster.workdir / "report.txt").read_text()
        assert comps.processes[APISERVER].last_exit_code == 0

        def answers() -> bool:
            try:
                same.list(NODES)
            except (ApiError, OSError):
                return False
            return True

        # ... reaches the restarted server ...
        wait_for(answers, timeout=RECOVERY_SECONDS, interval=0.5,
                 what="the restarted API server to answer the kubeconfig of before")
        assert comps.kubeconfig.read_text() == kubeconfig
        # ... which kept its objects.
        assert len(same.list(NODES)["items"]) == NODE_COUNT
        kept = same.get(PODS, "before-restart", cluster.scenario.online[0].namespace)
        assert kept["spec"]["nodeName"] == node
        assert same.list(CLUSTER_COLOCATION_PROFILES)["items"]
    finally:
        same.close()
    # The components reconnected: a new pod goes through the webhook and the scheduler.
    _schedules_a_new_pod(cluster, "after-restart")
    for comp in (MANAGER, SCHEDULER):
        wait_for(partial(comps.leader, client, comp), timeout=RECOVERY_SECONDS,
                 what=f"a {comp} leader")
