"""koord-descheduler's benchmark (no upstream counterpart; the targets come from issue 19): one
LowNodeLoad cycle with the MigrationController as filter and evict plugin over a large cluster,
then the arbitration of the PodMigrationJobs it created, in process.

The cluster: ``--nodes`` nodes of 32 cpus / 128 GiB, ``--pods-per-node`` pods each (every pod
one of ten replicas of a Deployment, scheduled by koord-scheduler, ``status.qosClass`` set as
the API server sets it), one NodeMetric per node; every tenth node is hot (its pods use ~92 %
of its cpu, above the shipped highThresholds of 75 %), the others use ~31 % (under the
lowThresholds of 45 %). The profile is the shipped one (``config/manager/descheduler-config``'s
args) with LowNodeLoad enabled. Objects sit in the stores the informers would hold; creating a
PodMigrationJob adds it to the job store and the arbitrator, as the job informer would; the
arbitrator's writes go to a client that keeps them. Rows:

* ``cycle, no hot node``: the same cluster with every node cold: reading every NodeMetric and
  classifying the nodes, the fixed cost of a cycle (the baseline of the run);
* ``cycle``: LowNodeLoad over the hot nodes: candidates through the MigrationController's
  filters (``maxMigratingPerNode`` 2 leaves two jobs per hot node), nodeFit against the cold
  nodes, one PodMigrationJob per eviction;
* ``arbitration``: one round over the jobs the cycle created (sorting, limits, the
  passed-arbitration annotation written per job).

Targets: ≤ 1 s per cycle and ≤ 300 MiB RSS for the process with 5,000 nodes and 50,000 pods;
arbitrating 1,000 pending jobs ≤ 1 s.

    python3 -m descheduler.bench [--nodes 5000] [--pods-per-node 10]
"""

from __future__ import annotations

import argparse
import copy
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from descheduler.apis.config.args import LowNodeLoadArgs, MigrationControllerArgs
from descheduler.apis.config.types import DeschedulerProfile
from descheduler.controllers.migration.arbitrator.arbitrator import Arbitrator
from descheduler.controllers.migration.arbitrator.filter import MigrationFilter
from descheduler.controllers.migration.controller import MigrationController
from descheduler.controllers.migration.controllerfinder import (
    POD_BY_OWNER_UID,
    ControllerFinder,
    WorkloadListers,
    pod_owner_uid_index,
)
from descheduler.controllers.migration.evictor import EvictorInterpreter
from descheduler.controllers.migration.objectlimiter import ObjectLimiters
from descheduler.controllers.migration.util import job_indexers
from descheduler.descheduler import caches_frozen
from descheduler.framework.limiter import EvictionLimiter
from descheduler.framework.plugins.loadaware import LowNodeLoad
from descheduler.framework.runtime import Framework, Listers
from descheduler.framework.types import Handle, Obj
from pkg.client.informers.listers import Lister
from pkg.client.informers.store import NODE_NAME_INDEX, Indexer, pod_node_name_index
from pkg.client.resources import Resource
from pkg.util.clock import FakeClock
from pkg.util.process import rss_mib

CYCLE_TARGET_S = 1.0
RSS_TARGET_MIB = 300.0
ARBITRATION_TARGET_S = 1.0
NOW = 1_700_000_000.0
REPLICAS = 10
NAMESPACE = "bench"
# The shipped configuration's args (config/manager/descheduler-config.yaml).
LOW_NODE_LOAD = {"lowThresholds": {"cpu": 45, "memory": 55},
                 "highThresholds": {"cpu": 75, "memory": 80},
                 "evictableNamespaces": {"exclude": ["kube-system", "koordinator-system"]},
                 "anomalyCondition": {"consecutiveAbnormalities": 1}}
MIGRATION = {"evictionPolicy": "Eviction", "evictQPS": "10", "evictBurst": 1,
             "namespaces": {"exclude": ["kube-system", "koordinator-system"]}}


def _stamp(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(slots=True)
class Cluster:
    nodes: list[Obj]
    pods: Indexer
    node_metrics: Indexer
    workloads: dict[str, Indexer]
    jobs: Indexer


def build_cluster(n_nodes: int, pods_per_node: int, hot_every: int) -> Cluster:
    """The nodes, pods (ten replicas per Deployment), their ReplicaSets and Deployments, and a
    NodeMetric per node; with ``hot_every`` 0 no node is hot."""
    nodes: list[Obj] = []
    pods = Indexer(indexers={NODE_NAME_INDEX: pod_node_name_index,
                             POD_BY_OWNER_UID: pod_owner_uid_index})
    metrics = Indexer()
    workloads = {kind: Indexer() for kind in ("ReplicaSet", "Deployment", "StatefulSet",
                                              "ReplicationController")}
    for d in range(n_nodes * pods_per_node // REPLICAS):
        deploy = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": f"app-{d}", "namespace": NAMESPACE, "uid": f"d-{d}"},
                  "spec": {"replicas": REPLICAS}}
        rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
              "metadata": {"name": f"app-{d}-5d9f", "namespace": NAMESPACE, "uid": f"rs-{d}",
                           "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                                "name": f"app-{d}", "uid": f"d-{d}",
                                                "controller": True}]},
              "spec": {"replicas": REPLICAS}}
        workloads["Deployment"].add(deploy)
        workloads["ReplicaSet"].add(rs)
    stamp = _stamp(NOW)
    for i in range(n_nodes):
        name = f"node-{i}"
        hot = hot_every > 0 and i % hot_every == 0
        nodes.append({"metadata": {"name": name, "labels": {}},
                      "spec": {},
                      "status": {"allocatable": {"cpu": "32", "memory": "128Gi",
                                                 "pods": "110"}}})
        pod_metrics = []
        for j in range(pods_per_node):
            k = i * pods_per_node + j
            d = k // REPLICAS
            pod_name = f"app-{d}-5d9f-{k % REPLICAS:05d}"
            pods.add({
                "metadata": {"name": pod_name, "namespace": NAMESPACE, "uid": f"pod-{k}",
                             "creationTimestamp": stamp, "labels": {"app": f"app-{d}"},
                             "ownerReferences": [{"apiVersion": "apps/v1",
                                                  "kind": "ReplicaSet",
                                                  "name": f"app-{d}-5d9f", "uid": f"rs-{d}",
                                                  "controller": True}]},
                "spec": {"nodeName": name, "schedulerName": "koord-scheduler",
                         "containers": [{"name": "main", "image": "app", "resources": {
                             "requests": {"cpu": "2", "memory": "4Gi"}}}]},
                "status": {"phase": "Running", "qosClass": "Burstable",
                           "conditions": [{"type": "Ready", "status": "True"}]}})
            cpu = 2900 + (k * 7919) % 100 if hot else 1000 + (k * 7919) % 100
            pod_metrics.append({"namespace": NAMESPACE, "name": pod_name, "podUsage": {
                "resources": {"cpu": f"{cpu}m", "memory": "8Gi" if hot else "4Gi"}}})
        metrics.add({"metadata": {"name": name}, "status": {
            "updateTime": stamp, "nodeMetric": {"nodeUsage": {"resources": {}}},
            "podsMetric": pod_metrics}})
    jobs = Indexer(key_func=lambda o: o["metadata"]["name"], indexers=job_indexers())
    return Cluster(nodes, pods, metrics, workloads, jobs)


class _Writes:
    """The API as the bench's jobs see it: a create lands in the job store (and, through
    ``on_create``, at the arbitrator), as the job informer would bring it; updates are kept."""

    def __init__(self, jobs: Indexer, on_create: Callable[[Obj], None]) -> None:
        self.jobs = jobs
        self.on_create = on_create
        self.updates = 0

    def create(self, resource: Resource, obj: Any, namespace: str | None = None,
               **_: Any) -> dict[str, Any]:
        job = copy.deepcopy(obj)
        job["metadata"].update(uid=str(uuid.uuid4()), creationTimestamp=_stamp(NOW),
                               resourceVersion="1")
        self.jobs.add(job)
        self.on_create(job)
        return dict(job)

    def update(self, resource: Resource, obj: Any, namespace: str | None = None,
               **_: Any) -> dict[str, Any]:
        self.updates += 1
        return dict(obj)

    def update_status(self, resource: Resource, obj: Any, namespace: str | None = None
                      ) -> dict[str, Any]:
        self.updates += 1
        return dict(obj)


@dataclass(slots=True)
class Result:
    cycle_s: float
    jobs: int
    arbitration_s: float
    passed: int


def run(cluster: Cluster) -> Result:
    """One LowNodeLoad cycle with the MigrationController, then one arbitration round."""
    clock = FakeClock(NOW)
    pods: Lister[Obj] = Lister(cluster.pods)
    node_store = Indexer()
    for node in cluster.nodes:
        node_store.add(node)
    nodes: Lister[Obj] = Lister(node_store, namespaced=False)
    listers = Listers(nodes=nodes, pods=pods,
                      node_metrics=Lister(cluster.node_metrics, namespaced=False))
    job_lister: Lister[Obj] = Lister(cluster.jobs, namespaced=False)
    args = MigrationControllerArgs.model_validate(MIGRATION)
    finder = ControllerFinder(WorkloadListers(
        pods, Lister(cluster.workloads["ReplicaSet"]), Lister(cluster.workloads["Deployment"]),
        Lister(cluster.workloads["StatefulSet"]),
        Lister(cluster.workloads["ReplicationController"])))
    migration_filter = MigrationFilter(args, job_lister, finder, nodes=nodes)
    holder: list[Arbitrator] = []
    writes = _Writes(cluster.jobs, lambda job: holder[0].add(job))
    arbitrator = Arbitrator(migration_filter, writes, pods, job_lister, None, clock)
    holder.append(arbitrator)
    controller = MigrationController(
        args, writes,  # type: ignore[arg-type]  # only create() is called on the plugin path
        migration_filter=migration_filter, limiter=ObjectLimiters(args, finder, clock),
        arbitrator=arbitrator,
        evictor=EvictorInterpreter.new(writes, "Eviction", 10.0, 1, None, clock),  # type: ignore[arg-type]
        clock=clock)
    profile = DeschedulerProfile.model_validate({
        "name": "koord-descheduler",
        "plugins": {"balance": {"enabled": [{"name": "LowNodeLoad"}]},
                    "evict": {"enabled": [{"name": "MigrationController"}]},
                    "filter": {"enabled": [{"name": "MigrationController"}]}},
        "pluginConfig": [{"name": "LowNodeLoad",
                          "args": LowNodeLoadArgs.model_validate(LOW_NODE_LOAD)}]})

    def low_node_load(a: Any, h: Handle) -> LowNodeLoad:
        return LowNodeLoad(a, h, clock)

    framework = Framework(profile, {"LowNodeLoad": low_node_load,
                                    "MigrationController": lambda a, h: controller},
                          listers, writes, EvictionLimiter())  # type: ignore[arg-type]
    started = time.perf_counter()
    with caches_frozen():  # as the descheduler runs each pass
        status = framework.run_balance_plugins(cluster.nodes)
    cycle = time.perf_counter() - started
    assert status.ok, status.errors
    jobs = len(cluster.jobs.list())
    started = time.perf_counter()
    arbitrator.run_once()
    arbitration = time.perf_counter() - started
    return Result(cycle, jobs, arbitration, writes.updates)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m descheduler.bench",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods-per-node", type=int, default=10)
    args = parser.parse_args(argv)
    # The cycle logs every eviction at info, as upstream does; the table is what counts here.
    logging.basicConfig(level=logging.WARNING)
    pods = args.nodes * args.pods_per_node
    cold = run(build_cluster(args.nodes, args.pods_per_node, hot_every=0))
    cluster = build_cluster(args.nodes, args.pods_per_node, hot_every=10)
    hot = run(cluster)
    rss = rss_mib()
    print(f"koord-descheduler bench: {args.nodes} nodes, {pods} pods "
          f"(every 10th node hot), shipped LowNodeLoad + MigrationController")
    rows = [
        ("cycle, no hot node (baseline)", f"{cold.cycle_s:.3f} s", "", f"{cold.jobs} jobs"),
        ("cycle", f"{hot.cycle_s:.3f} s", f"<= {CYCLE_TARGET_S:g} s",
         f"{hot.jobs} PodMigrationJobs created"),
        ("arbitration", f"{hot.arbitration_s:.3f} s", f"<= {ARBITRATION_TARGET_S:g} s",
         f"{hot.jobs} jobs, {hot.passed} passed"),
        ("process RSS", f"{rss:.0f} MiB", f"<= {RSS_TARGET_MIB:g} MiB", ""),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'row':<{width}}  {'measured':>10}  {'target':>12}  notes")
    for name, measured, target, notes in rows:
        print(f"{name:<{width}}  {measured:>10}  {target:>12}  {notes}")
    ok = (hot.cycle_s <= CYCLE_TARGET_S and hot.arbitration_s <= ARBITRATION_TARGET_S
          and rss <= RSS_TARGET_MIB)
    print("targets met" if ok else "targets NOT met")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
