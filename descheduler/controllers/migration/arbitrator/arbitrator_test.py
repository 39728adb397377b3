"""The arbitrator against the embedded API server: upstream arbitrator_test.go's rounds (a
passing job annotated and no longer waiting, a non-retryable one Failed with
ForbiddenMigratePod and an event, a retryable one waiting for a later round, a job whose pod
is gone passing, jobs passed earlier in a round counting in later ones, deleted jobs
forgotten) and the periodic loop; plus, over plain stores, the shape of a round of a thousand
jobs (the jobs listed once, not per job)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from descheduler.apis.config.args import MigrationControllerArgs
from descheduler.controllers.migration.arbitrator.arbitrator import Arbitrator
from descheduler.controllers.migration.arbitrator.filter import MigrationFilter
from descheduler.controllers.migration.controllerfinder import (
    POD_BY_OWNER_UID,
    ControllerFinder,
    WorkloadListers,
    pod_owner_uid_index,
)
from descheduler.controllers.migration.testing import Stores, job, owner, pod, workload
from descheduler.controllers.migration.util import ANNOTATION_PASSED_ARBITRATION, job_indexers
from descheduler.utils.sorter import ANNOTATION_POD_DELETION_COST
from pkg.client.informers import SharedInformerFactory
from pkg.client.informers.listers import Lister
from pkg.client.resources import (
    DEPLOYMENTS,
    EVENTS,
    NAMESPACES,
    POD_MIGRATION_JOBS,
    PODS,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    STATEFUL_SETS,
    Resource,
)
from pkg.client.rest import Client
from pkg.events.recorder import EventBroadcaster
from pkg.util.clock import RealClock
from test.apiserver import ServerHandle, start
from test.e2e.cluster import install_crds, wait_for

Dict = dict[str, Any]
STS = owner("StatefulSet", "web")
_namespaces = itertools.count(1)
COST = ANNOTATION_POD_DELETION_COST


@dataclass
class Env:
    client: Client
    factory: SharedInformerFactory
    events: EventBroadcaster

    def arbitrator(self, args: Dict | None = None, interval: float = 0.5) -> Arbitrator:
        def lister(resource: Resource, **kw: Any) -> Any:
            return self.factory.informer_for(resource, typed=False, **kw).lister

        pods = lister(PODS, indexers={POD_BY_OWNER_UID: pod_owner_uid_index})
        jobs = lister(POD_MIGRATION_JOBS, indexers=job_indexers())
        finder = ControllerFinder(WorkloadListers(
            pods=pods, replica_sets=lister(REPLICA_SETS), deployments=lister(DEPLOYMENTS),
            stateful_sets=lister(STATEFUL_SETS),
            replication_controllers=lister(REPLICATION_CONTROLLERS)))
        self.factory.start()
        assert self.factory.wait_for_cache_sync(10)
        flt = MigrationFilter(MigrationControllerArgs.model_validate(args or {}), jobs, finder)
        return Arbitrator(flt, self.client, pods, jobs,
                          self.events.new_recorder("koord-descheduler"), RealClock(), interval)

    def namespace(self) -> str:
        name = f"arb-{next(_namespaces)}"
        self.client.create(NAMESPACES, {"metadata": {"name": name}})
        self.client.create(STATEFUL_SETS, {
            **workload("StatefulSet", "web", 10, namespace=name),
            "spec": {"replicas": 10, "serviceName": "web",
                     "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
        return name

    def create_pod(self, p: Dict) -> Dict:
        namespace = p["metadata"]["namespace"]
        if p["metadata"]["ownerReferences"]:
            sts = self.client.get(STATEFUL_SETS, "web", namespace)
            p["metadata"]["ownerReferences"] = [{**STS, "uid": sts["metadata"]["uid"]}]
        body = {**p, "metadata": {k: v for k, v in p["metadata"].items()
                                  if k not in ("uid", "creationTimestamp")}}
        created = self.client.create(PODS, body)
        created["status"] = p["status"]
        return self.client.update_status(PODS, created)

    def create_job(self, of: Dict, arb: Arbitrator) -> Dict:
        body = job(of)
        body["metadata"] = {"name": body["metadata"]["name"]}
        created = self.client.create(POD_MIGRATION_JOBS, body)
        wait_for(lambda: arb.jobs.get(created["metadata"]["name"]) is not None, 10,
                 what="the job in the informer")
        arb.add(created)
        return created

    def job(self, created: Dict) -> Dict:
        return self.client.get(POD_MIGRATION_JOBS, created["metadata"]["name"])

    def passed(self, created: Dict) -> bool:
        annotations = self.job(created)["metadata"].get("annotations") or {}
        return annotations.get(ANNOTATION_PASSED_ARBITRATION) == "true"


@pytest.fixture(scope="module")
def server() -> Iterator[ServerHandle]:
    srv = start()
    client = Client.from_kubeconfig(srv.kubeconfig, qps=-1)
    install_crds(client)
    client.close()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def env(server: ServerHandle) -> Iterator[Env]:
    client = Client.from_kubeconfig(server.kubeconfig, qps=-1)
    factory = SharedInformerFactory(client)
    events = EventBroadcaster(client)
    try:
        yield Env(client, factory, events)
    finally:
        factory.shutdown()
        events.shutdown()
        for j in client.list(POD_MIGRATION_JOBS)["items"]:
            client.delete(POD_MIGRATION_JOBS, j["metadata"]["name"])
        client.close()


def test_passing_job_is_annotated(env: Env) -> None:
    arb = env.arbitrator()
    ns = env.namespace()
    p = env.create_pod(pod("web-0", ns, owners=[STS]))
    created = env.create_job(p, arb)
    assert arb.waiting() == [created["metadata"]["name"]]
    arb.run_once()
    assert env.passed(created)
    assert arb.waiting() == []
    assert env.job(created).get("status", {}).get("phase") in (None, "", "Pending")


def test_forbidden_job_fails(env: Env) -> None:
    arb = env.arbitrator()
    ns = env.namespace()
    bare = env.create_pod(pod("bare", ns))
    created = env.create_job(bare, arb)
    arb.run_once()
    status = env.job(created)["status"]
    assert status["phase"] == "Failed"
    assert status["reason"] == "ForbiddenMigratePod"
    assert status["message"] == (f'Pod "{ns}/bare" is forbidden to migrate because it does '
                                 "not meet the requirements")
    assert arb.waiting() == [] and not env.passed(created)

    def event() -> bool:
        return any(e["reason"] == "ForbiddenMigratePod" and e["type"] == "Warning"
                   and e["involvedObject"]["name"] == created["metadata"]["name"]
                   for e in env.client.list(EVENTS, "default")["items"])
    wait_for(event, 10, what="the ForbiddenMigratePod event")


def test_retryable_limit_waits_and_counts_jobs_passed_in_the_round(env: Env) -> None:
    arb = env.arbitrator({"maxMigratingPerNode": 1})
    ns = env.namespace()
    # The pod with the lower deletion cost is arbitrated first.
    low = env.create_pod(pod("web-low", ns, owners=[STS], annotations={COST: "1"}))
    high = env.create_pod(pod("web-high", ns, owners=[STS], annotations={COST: "100"}))
    job_high = env.create_job(high, arb)
    job_low = env.create_job(low, arb)
    arb.run_once()
    assert env.passed(job_low) and not env.passed(job_high)
    assert arb.waiting() == [job_high["metadata"]["name"]]
    # Still one migrating pod on the node: the next round keeps waiting.
    arb.run_once()
    assert not env.passed(job_high)
    # The first job ends: the second may go.
    done = env.job(job_low)
    done["status"] = {"phase": "Succeeded"}
    env.client.update_status(POD_MIGRATION_JOBS, done)
    wait_for(lambda: (arb.jobs.get(done["metadata"]["name"]).get("status") or {}).get("phase")
             == "Succeeded", 10, what="the finished job in the informer")
    arb.delete(done)
    arb.run_once()
    assert env.passed(job_high) and arb.waiting() == []


def test_job_of_a_missing_pod_passes(env: Env) -> None:
    arb = env.arbitrator()
    ns = env.namespace()
    created = env.create_job(pod("gone", ns), arb)
    arb.run_once()
    assert env.passed(created)


def test_deleted_job_is_forgotten(env: Env) -> None:
    arb = env.arbitrator()
    ns = env.namespace()
    p = env.create_pod(pod("web-0", ns, owners=[STS]))
    created = env.create_job(p, arb)
    arb.delete(created)
    assert arb.waiting() == []
    arb.run_once()
    assert not env.passed(created)


def test_run_arbitrates_periodically(env: Env) -> None:
    arb = env.arbitrator(interval=0.05)
    ns = env.namespace()
    stop = threading.Event()
    loop = threading.Thread(target=arb.run, args=(stop,), daemon=True)
    loop.start()
    try:
        p = env.create_pod(pod("web-0", ns, owners=[STS]))
        created = env.create_job(p, arb)
        wait_for(lambda: env.passed(created), 10, what="the job passing arbitration")
    finally:
        stop.set()
        loop.join(5)
    assert not loop.is_alive()


def test_deleted_passed_job_stops_counting_without_an_event(env: Env) -> None:
    arb = env.arbitrator({"maxMigratingPerNode": 1})
    ns = env.namespace()
    first = env.create_job(env.create_pod(pod("web-0", ns, owners=[STS])), arb)
    arb.run_once()
    assert env.passed(first)
    second = env.create_job(env.create_pod(pod("web-1", ns, owners=[STS])), arb)
    arb.run_once()
    assert not env.passed(second)
    env.client.delete(POD_MIGRATION_JOBS, first["metadata"]["name"])
    wait_for(lambda: arb.jobs.get(first["metadata"]["name"]) is None, 10,
             what="the deleted job gone from the informer")
    arb.run_once()
    assert env.passed(second)


class StoreClient:
    """Writes straight into the job store, counting them."""

    def __init__(self, stores: Stores) -> None:
        self.stores = stores
        self.writes = 0

    def update(self, resource: Resource, obj: Any, namespace: str | None = None) -> Dict:
        self.writes += 1
        self.stores.jobs.update(obj)
        return dict(obj)

    update_status = update


class CountingLister(Lister[Dict]):
    lists = 0

    def list(self, selector: Any = None) -> list[Dict]:
        self.lists += 1
        return super().list(selector)


def test_a_round_of_a_thousand_jobs_lists_the_jobs_once() -> None:
    # 1000 pods of 50 workloads on 100 nodes, each with a waiting job: 2 pass per node.
    workloads = [workload("StatefulSet", f"w{i}", 40, namespace=f"ns{i % 10}")
                 for i in range(50)]
    pods = [pod(f"p{i}", f"ns{i % 50 % 10}", node=f"n{i % 100}",
                owners=[owner("StatefulSet", f"w{i % 50}")]) for i in range(1000)]
    stores = Stores.of(pods, [job(p, created=i) for i, p in enumerate(pods)], workloads)
    jobs = CountingLister(stores.jobs, namespaced=False)
    flt = MigrationFilter(MigrationControllerArgs(), jobs, stores.finder)
    client = StoreClient(stores)
    arb = Arbitrator(flt, client, stores.listers.pods, jobs, None, RealClock())
    for j in stores.jobs.list():
        arb.add(j)
    arb.run_once()
    assert jobs.lists == 1
    assert client.writes == 200 and len(arb.waiting()) == 800
    arb.run_once()
    assert jobs.lists == 2 and client.writes == 200
