"""koord-descheduler end to end: ``python -m descheduler.main`` as the chart's
``koord-descheduler`` ServiceAccount against the embedded API server with RBAC on, on real time,
with upstream's shipped DeschedulerConfiguration (``config/manager/descheduler-config.yaml``)
and LowNodeLoad enabled in ``balance``.

A ReplicaSet's pods fill node-0 above LowNodeLoad's highThresholds (cpu 75 %) while node-1 is
idle. The NodeMetrics are written by the test (``Koordlets``) from the pods each node runs, as
koordlet's reporter would; it stands in for koordlet, whose own e2e suite covers reporting.

* node-0 loses pods, through PodMigrationJobs, to node-1 (under lowThresholds): with
  koord-scheduler running, each job (ReservationFirst, the default) creates a Reservation the
  scheduler places on node-1, evicts the pod (``Descheduled`` on the pod, ``Evicting`` on the
  job), and the ReplicaSet's replacement lands in the Reservation (reservation-allocated); the
  job ends Succeeded with upstream's message, and ``kubectl get pmj`` prints upstream's
  columns;
* a PodDisruptionBudget holds: while it allows no disruption the Eviction API answers 429 (a
  Warning ``Evicting`` event on the job) and no pod goes; once it allows one, the workload never
  has fewer healthy pods than it asks for;
* ``maxMigratingPerNode: 1``: never two pods of node-0 with an active job at once (a job
  stops counting once its pod has left the node, as upstream counts the node's pods);
* ``dryRun``: no job, no eviction, the log says what it would evict;
* two replicas: only the Lease holder runs passes and creates jobs (``job-created-by``);
  stopping it lets the other take over.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from api.extension.reservation import ANNOTATION_RESERVATION_ALLOCATED, parse_reservation_allocated
from descheduler.controllers.migration.util import (
    ANNOTATION_JOB_CREATED_BY,
    ANNOTATION_PASSED_ARBITRATION,
)
from descheduler.framework.testing import metrics
from pkg.client.errors import ApiError, is_not_found
from pkg.client.informers import SharedInformerFactory
from pkg.client.informers.handlers import EventHandlerFuncs, deleted_object
from pkg.client.resources import (
    EVENTS,
    LEASES,
    NODE_METRICS,
    NODES,
    POD_DISRUPTION_BUDGETS,
    POD_MIGRATION_JOBS,
    PODS,
    REPLICA_SETS,
    RESERVATIONS,
)
from pkg.client.rest import Client
from pkg.util.testdata import upstream_data_dir
from scheduler.plugins.reservation.testing import reservation_config
from test.apiserver import ServerHandle
from test.apiserver.testing import Kubectl
from test.e2e.cluster import (
    CHART_NAMESPACE,
    ComponentProcess,
    guaranteed_pod,
    http_ok,
    running_scheduler,
    start_descheduler,
    wait_for,
)
from test.e2e.conftest import KubeconfigOf

pytestmark = pytest.mark.without_webhooks

DESCHEDULER = "koord-descheduler"
DEADLINE = 45.0
HOT, COLD = "node-0", "node-1"
# Seven pods of 550m on a 4-cpu node: 96 % cpu; LowNodeLoad moves two of them (96 -> 82.5 ->
# 68.75 %, under the 75 % highThreshold).
REPLICAS, POD_CPU = 7, "550m"
MOVED = 2

Obj = dict[str, Any]


# -- configuration ----------------------------------------------------------------------------

def shipped_config() -> Obj:
    """Upstream's ``config/manager/descheduler-config.yaml`` (the ConfigMap's document)."""
    cm = yaml.safe_load((upstream_data_dir() / "config" / "manager" /
                         "descheduler-config.yaml").read_text())
    config: Obj = yaml.safe_load(cm["data"]["koord-descheduler-config"])
    return config


def descheduler_config(*, dry_run: bool = False, **migration: Any) -> Obj:
    """The shipped configuration with LowNodeLoad in ``balance``, a pass every second, short
    leader-election periods and ``migration`` added to the MigrationController's args.

    Two settings differ from the shipped ones for time's sake: LowNodeLoad acts on a hot node
    at its first pass (``consecutiveAbnormalities: 1``, not the sixth), and the per-workload
    object limiter lets two pods of the workload go at once (burst 2; its default allows one
    every 150 s for seven replicas)."""
    config = shipped_config()
    config["deschedulingInterval"] = "1s"
    config["dryRun"] = dry_run
    # Short enough for a quick takeover when a leader dies, long enough that a leader on a
    # busy 2-core machine renews in time (a stopped leader releases the Lease at once).
    config["leaderElection"].update(leaseDuration="8s", renewDeadline="6s",
                                    retryPeriod="500ms")
    [profile] = config["profiles"]
    profile["plugins"]["balance"] = {"enabled": [{"name": "LowNodeLoad"}]}
    for plugin in profile["pluginConfig"]:
        if plugin["name"] == "MigrationController":
            plugin["args"]["objectLimiters"] = {"workload": {"duration": "5m", "burst": MOVED}}
            plugin["args"].update(migration)
        elif plugin["name"] == "LowNodeLoad":
            plugin["args"]["anomalyCondition"] = {"consecutiveAbnormalities": 1}
    return config


@contextmanager
def running_descheduler(kubeconfig: str, config: Obj, workdir: Path,
                        name: str = "desched") -> Iterator[ComponentProcess]:
    """``start_descheduler``, healthy before the block runs and stopped after it."""
    proc, url = start_descheduler(kubeconfig, config, workdir, name=name)
    try:
        wait_for(lambda: http_ok(url + "/healthz"), DEADLINE,
                 what=f"koord-descheduler {name} healthy; log:\n{proc.log()}")
        yield proc
    finally:
        proc.stop()


# -- the cluster ------------------------------------------------------------------------------

class Koordlets:
    """Stands in for koordlet's NodeMetric reporter on every node: twice a second, each node's
    NodeMetric reports the pods bound to it (not being deleted) using their requests."""

    def __init__(self, client: Client, interval: float = 0.5) -> None:
        self.client = client
        self.interval = interval
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True, name="koordlets")
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            self.report()
            self.stop.wait(self.interval)

    def report(self) -> None:
        nodes = self.client.list(NODES)["items"]
        pods = [p for p in self.client.list(PODS, "default")["items"]
                if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")]
        for metric in metrics(nodes, pods, update_time=time.time()):
            name = metric["metadata"]["name"]
            try:
                current = self.client.get(NODE_METRICS, name)
            except ApiError as err:
                if not is_not_found(err):
                    raise
                current = self.client.create(NODE_METRICS, {"metadata": {"name": name}})
            self.client.update_status(NODE_METRICS, current | {"status": metric["status"]})

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)


@pytest.fixture
def koordlets(client: Client) -> Iterator[Koordlets]:
    k = Koordlets(client)
    yield k
    k.close()


@pytest.fixture
def scheduler(kubeconfig_of: KubeconfigOf, client: Client, tmp_path: Path) -> Iterator[str]:
    with running_scheduler(kubeconfig_of("koord-scheduler"), reservation_config(),
                           tmp_path) as url:
        yield url


def replica_set(name: str = "web", *, node: str = "") -> Obj:
    """``REPLICAS`` guaranteed pods of ``POD_CPU`` for koord-scheduler (bound to ``node``
    directly when given, for tests without a scheduler)."""
    template = guaranteed_pod(name, cpu=POD_CPU, memory="256Mi", labels={"app": name})
    if node:
        template["spec"]["nodeName"] = node
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": REPLICAS, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": template["spec"]}}}


def pods_on(client: Client, node: str, app: str = "web") -> list[str]:
    """The workload's pods bound to ``node`` and not being deleted."""
    return sorted(p["metadata"]["name"] for p in client.list(
        PODS, "default", label_selector=f"app={app}")["items"]
        if p["spec"].get("nodeName") == node and not p["metadata"].get("deletionTimestamp"))


def hot_node(srv: ServerHandle, client: Client, *, scheduled: bool = True) -> list[str]:
    """node-0 running the ReplicaSet's pods (placed by koord-scheduler before node-1 joins, or
    bound by the template when ``scheduled`` is False), then node-1 idle; returns the pods."""
    srv.add_nodes(1, cpu="4", memory="8Gi")
    client.create(REPLICA_SETS, replica_set(node="" if scheduled else HOT))
    pods = wait_for(lambda: len(pods_on(client, HOT)) == REPLICAS and pods_on(client, HOT),
                    DEADLINE, what=f"{REPLICAS} pods on {HOT}")
    srv.add_nodes(1, start=1, cpu="4", memory="8Gi")
    return list(pods)


def jobs(client: Client) -> list[Obj]:
    items: list[Obj] = client.list(POD_MIGRATION_JOBS)["items"]
    return items


def phase(job: Obj) -> str:
    return str((job.get("status") or {}).get("phase") or "")


def events_of(client: Client, name: str, reason: str) -> list[Obj]:
    return [e for e in client.list(EVENTS)["items"]
            if e["involvedObject"].get("name") == name and e["reason"] == reason]


class Watch:
    """Every state of the workload's pods and of the PodMigrationJobs from the moment it
    starts, from informers of the test's own, checked at each change (a poll could miss a
    short dip or overlap): the fewest healthy pods, and the most active jobs for pods on node-0,
at any moment."""

    def __init__(self, client: Client, app: str = "web") -> None:
        self.app = app
        self.lock = threading.Lock()
        self.pods: dict[str, Obj] = {}
        self.jobs: dict[str, Obj] = {}
        self.synced = False
        self.min_healthy = REPLICAS
        self.max_active = 0
        self.factory = SharedInformerFactory(client)
        for resource, store in ((PODS, self.pods), (POD_MIGRATION_JOBS, self.jobs)):
            self.factory.informer_for(resource, typed=False).add_event_handler(EventHandlerFuncs(
                add=partial(self._seen, store), update=partial(self._updated, store),
                delete=partial(self._gone, store)))
        self.factory.start()
        assert all(self.factory.wait_for_cache_sync(timeout=DEADLINE).values())
        with self.lock:
            self.synced = True
            self.min_healthy = self.healthy()
            self._check()

    def _seen(self, store: dict[str, Obj], obj: Obj) -> None:
        with self.lock:
            store[obj["metadata"]["name"]] = obj
            self._check()

    def _updated(self, store: dict[str, Obj], _old: Obj, new: Obj) -> None:
        self._seen(store, new)

    def _gone(self, store: dict[str, Obj], obj: Any) -> None:
        with self.lock:
            store.pop(deleted_object(obj)["metadata"]["name"], None)
            self._check()

    def healthy(self) -> int:
        """The workload's pods a PodDisruptionBudget counts: Ready and not being deleted."""
        return sum(1 for p in self.pods.values()
                   if (p["metadata"].get("labels") or {}).get("app") == self.app
                   and not p["metadata"].get("deletionTimestamp")
                   and any(c.get("type") == "Ready" and c.get("status") == "True"
                           for c in (p.get("status") or {}).get("conditions") or ()))

    def _check(self) -> None:
        if not self.synced:  # the initial list arrives one object at a time
            return
        self.min_healthy = min(self.min_healthy, self.healthy())
        self.max_active = max(self.max_active, sum(
            1 for j in self.jobs.values() if _active(j) and self._on_hot_node(j)))

    def _on_hot_node(self, job: Obj) -> bool:
        """Whether the job's pod is still on node-0: maxMigratingPerNode counts the node's
        pods that have an active job (upstream lists the node's pods), so a job stops counting
        once its pod was evicted, while it waits for the replacement."""
        ref = job["spec"].get("podRef") or {}
        pod = self.pods.get(ref.get("name") or "")
        return pod is not None and pod["spec"].get("nodeName") == HOT

    def close(self) -> None:
        self.factory.shutdown()


def _active(job: Obj) -> bool:
    """A job migrating its pod: Running, or Pending once it passed arbitration."""
    passed = (job["metadata"].get("annotations") or {}).get(ANNOTATION_PASSED_ARBITRATION)
    return phase(job) == "Running" or (phase(job) in ("", "Pending") and passed == "true")


@contextmanager
def watching(client: Client) -> Iterator[Watch]:
    w = Watch(client)
    try:
        yield w
    finally:
        w.close()


def succeeded(client: Client, count: int) -> list[Obj] | None:
    """The Succeeded jobs once there are ``count``; fails at once when a job failed."""
    current = jobs(client)
    failed = [j["status"] for j in current if phase(j) == "Failed"]
    assert not failed, f"jobs failed: {failed}"
    done = [j for j in current if phase(j) == "Succeeded"]
    return done if len(done) >= count else None


# -- tests ------------------------------------------------------------------------------------

def test_a_hot_node_loses_pods_through_reservations_to_the_cold_node(
        srv: ServerHandle, client: Client, kubeconfig_of: KubeconfigOf, tmp_path: Path,
        scheduler: str, koordlets: Koordlets) -> None:
    before = hot_node(srv, client)
    with running_descheduler(kubeconfig_of(DESCHEDULER), descheduler_config(), tmp_path):
        done = wait_for(partial(succeeded, client, MOVED), 60.0,
                        what=f"{MOVED} PodMigrationJobs Succeeded")
        assert len(jobs(client)) == MOVED
    # One pass evicts the pods one by one, each taking its usage off node-0's.
    assert sorted(j["metadata"]["annotations"]["koordinator.sh/evict-reason"] for j in done) == [
        f"node is overutilized, node cpu usage({pct})>threshold(75.00%)"
        for pct in ("82.50%", "96.25%")]
    for job in done:
        old, new = job["spec"]["podRef"]["name"], job["status"]["podRef"]["name"]
        reservation = job["spec"]["reservationOptions"]["reservationRef"]["name"]
        assert old in before and new not in before
        assert job["spec"]["mode"] == "ReservationFirst" and job["spec"]["ttl"] == "5m0s"
        assert job["metadata"]["annotations"]["koordinator.sh/evict-trigger"] == "LowNodeLoad"
        assert job["status"]["nodeName"] == COLD
        assert job["status"]["status"] == "Complete"
        assert job["status"]["message"] == (
            f'Bind Pod "default/{new}" in Reservation "{reservation}"')
        # The replacement runs on node-1 inside the Reservation the job made for it.
        pod = client.get(PODS, new, "default")
        assert pod["spec"]["nodeName"] == COLD
        assert pod["metadata"]["annotations"][ANNOTATION_RESERVATION_ALLOCATED]
        allocated = parse_reservation_allocated(pod["metadata"]["annotations"])
        assert allocated is not None and allocated.name == reservation
        assert client.get(RESERVATIONS, reservation)["status"]["phase"] == "Succeeded"
        # What kubectl describe shows: the pod's Descheduled event, the job's Evicting one.
        [descheduled] = events_of(client, old, "Descheduled")
        assert descheduled["message"].startswith(
            f'Pod evicted from node "{HOT}" by the reason "node is overutilized, ')
        # (A Warning "Evicting" may precede it: evictBurst 1 refuses a second eviction in
        # the same instant with TooManyEvictions, and the job tries again.)
        [evicting] = [e for e in events_of(client, job["metadata"]["name"], "Evicting")
                      if e["type"] == "Normal"]
        assert evicting["message"].startswith(
            f'Pod "default/{old}" evicted from node "{HOT}" by the reason ')
    assert len(pods_on(client, HOT)) == REPLICAS - MOVED
    assert len(pods_on(client, COLD)) == MOVED

    kubectl = Kubectl(srv)
    try:
        out = kubectl.run("get", "pmj").stdout.splitlines()
    finally:
        kubectl.close()
    assert out[0].split() == ["NAME", "PHASE", "STATUS", "AGE", "NODE", "RESERVATION",
                              "PODNAMESPACE", "POD", "NEWPOD", "TTL"]
    rows = {line.split()[0]: line.split() for line in out[1:]}
    for job in done:
        _name, ph, status, _age, node, reservation, ns, old, new, ttl = rows[
            job["metadata"]["name"]]
        assert (ph, status, node, ns, ttl) == ("Succeeded", "Complete", COLD, "default", "5m0s")
        assert reservation == job["spec"]["reservationOptions"]["reservationRef"]["name"]
        assert (old, new) == (job["spec"]["podRef"]["name"], job["status"]["podRef"]["name"])


def _refused_by_pdb(client: Client) -> list[Obj]:
    return [e for j in jobs(client) for e in events_of(client, j["metadata"]["name"], "Evicting")
            if e["type"] == "Warning" and "disruption budget" in e["message"]]


def test_a_pod_disruption_budget_holds_while_pods_move(
        srv: ServerHandle, client: Client, kubeconfig_of: KubeconfigOf, tmp_path: Path,
        scheduler: str, koordlets: Koordlets) -> None:
    before = hot_node(srv, client)
    client.create(POD_DISRUPTION_BUDGETS, {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"minAvailable": REPLICAS, "selector": {"matchLabels": {"app": "web"}}}})
    wait_for(lambda: (client.get(POD_DISRUPTION_BUDGETS, "web", "default").get("status") or {})
             .get("currentHealthy") == REPLICAS, DEADLINE, what="the PDB counting the pods")
    with watching(client) as watch, running_descheduler(
            kubeconfig_of(DESCHEDULER), descheduler_config(), tmp_path):
        # No disruption allowed: the Eviction API answers 429 and the jobs keep their pods.
        [refused, *_] = wait_for(partial(_refused_by_pdb, client), DEADLINE,
                                 what="an eviction refused by the PDB")
        assert refused["message"].endswith(
            "caused by 429 TooManyRequests: Cannot evict pod as it would violate the pod's "
            "disruption budget.")
        assert pods_on(client, HOT) == sorted(before)
        assert not [j for j in jobs(client) if phase(j) == "Succeeded"]
        assert watch.min_healthy == REPLICAS

        # One disruption at a time: the pods move, the workload never below six healthy.
        client.patch(POD_DISRUPTION_BUDGETS, "web", {"spec": {"minAvailable": REPLICAS - 1}},
                     "default")
        done = wait_for(partial(succeeded, client, MOVED), 60.0,
                        what=f"{MOVED} PodMigrationJobs Succeeded")
        assert watch.min_healthy == REPLICAS - 1
    for job in done:
        assert job["spec"]["podRef"]["name"] in before
        assert client.get(PODS, job["status"]["podRef"]["name"], "default")["spec"][
            "nodeName"] == COLD


def test_max_migrating_per_node_lets_one_pod_of_the_node_move_at_a_time(
        srv: ServerHandle, client: Client, kubeconfig_of: KubeconfigOf, tmp_path: Path,
        scheduler: str, koordlets: Koordlets) -> None:
    hot_node(srv, client)
    config = descheduler_config(maxMigratingPerNode=1)
    with watching(client) as watch, running_descheduler(kubeconfig_of(DESCHEDULER), config,
                                                        tmp_path):
        done = wait_for(partial(succeeded, client, MOVED), 60.0,
                        what=f"{MOVED} PodMigrationJobs Succeeded")
        assert watch.max_active == 1
    # The second pod went only once the first had moved.
    first, second = sorted(done, key=lambda j: j["metadata"]["creationTimestamp"])
    assert first["status"]["phase"] == second["status"]["phase"] == "Succeeded"
    assert len(pods_on(client, COLD)) == MOVED


def _passes(proc: ComponentProcess) -> int:
    return proc.log().count("descheduling pass took")


def test_dry_run_changes_nothing(srv: ServerHandle, client: Client,
                                 kubeconfig_of: KubeconfigOf, tmp_path: Path,
                                 koordlets: Koordlets) -> None:
    before = hot_node(srv, client, scheduled=False)
    with running_descheduler(kubeconfig_of(DESCHEDULER), descheduler_config(dry_run=True),
                             tmp_path) as proc:
        wait_for(lambda: "dry run: would evict pod default/web-" in proc.log(), DEADLINE,
                 what="the log saying what it would evict")
        # Passes go on; none changes anything.
        passes = _passes(proc)
        wait_for(lambda: _passes(proc) >= passes + 2, DEADLINE, what="two more passes")
        log = proc.log()
    assert f"on node {HOT} (profile koord-descheduler, plugin LowNodeLoad): node is " \
           "overutilized, node cpu usage(96.25%)>threshold(75.00%)" in log
    assert jobs(client) == []
    assert client.list(RESERVATIONS)["items"] == []
    assert pods_on(client, HOT) == sorted(before)
    assert not [e for e in client.list(EVENTS)["items"] if e["reason"] == "Descheduled"]


def _identity(proc: ComponentProcess) -> str:
    """The Lease holder identity the process runs for (its start-up log line)."""
    marker = "(identity "
    line = next(line for line in proc.log().splitlines() if marker in line)
    return line.split(marker, 1)[1].rstrip(")")


def _holder(client: Client) -> str:
    lease = client.get(LEASES, DESCHEDULER, CHART_NAMESPACE)
    return str(lease["spec"].get("holderIdentity") or "")


def _creators(client: Client) -> set[str]:
    return {j["metadata"]["annotations"][ANNOTATION_JOB_CREATED_BY] for j in jobs(client)}


def test_only_the_leader_deschedules_and_the_other_takes_over(
        srv: ServerHandle, client: Client, kubeconfig_of: KubeconfigOf, tmp_path: Path,
        koordlets: Koordlets) -> None:
    """Without koord-scheduler the jobs' Reservations stay pending, so each job stays
    Running. A job created by a replica that is gone is left alone by its successor (upstream:
    until the scavenger removes it, ttl + 5 min later); the test deletes them as an operator
    would, so the new leader may migrate those pods again."""
    hot_node(srv, client, scheduled=False)
    kubeconfig, config = kubeconfig_of(DESCHEDULER), descheduler_config()
    with running_descheduler(kubeconfig, config, tmp_path, name="first") as first:
        wait_for(lambda: _holder(client) == _identity(first), DEADLINE,
                 what="the first replica holding the Lease")
        with running_descheduler(kubeconfig, config, tmp_path, name="second") as second:
            wait_for(lambda: len(jobs(client)) >= MOVED and _passes(first) >= 3, DEADLINE,
                     what=f"{MOVED} PodMigrationJobs and three passes of the leader")
            assert _passes(second) == 0 and "successfully acquired lease" not in second.log()
            leader_jobs = _creators(client)
            assert len(leader_jobs) == 1
            first.stop()
            wait_for(lambda: _holder(client) == _identity(second), DEADLINE,
                     what="the second replica holding the Lease")
            for job in jobs(client):
                client.delete(POD_MIGRATION_JOBS, job["metadata"]["name"])
            wait_for(lambda: _creators(client) - leader_jobs, DEADLINE,
                     what="PodMigrationJobs of the new leader")
            assert _passes(second) > 0
            assert not _creators(client) & leader_jobs
            assert "released lease koordinator-system/koord-descheduler" in first.log()
    assert len(_creators(client)) == 1
