"""MigrationFilter: upstream filter_test.go's tables (existing job, migrations per node, per
namespace, per workload, unavailable per workload, expected replicas) plus the checks of
§10.4 around them: globally, the ReservationFirst scheduler, the non-retryable evictor
constraints, skipEvictionGates, the evict annotation and the arbitration-time counting."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from api.extension.eviction import ANNOTATION_EVICTION_COST
from descheduler.apis.config.args import MigrationControllerArgs
from descheduler.controllers.migration.arbitrator.filter import MigrationFilter
from descheduler.controllers.migration.testing import NODE, Stores, job, owner, pod, workload
from descheduler.controllers.migration.util import ANNOTATION_EVICT
from pkg.client.informers.listers import Lister
from pkg.client.informers.store import Indexer

Dict = dict[str, Any]
STS = owner("StatefulSet", "test-1")
OTHER_STS = owner("StatefulSet", "test-2")
STS_10 = workload("StatefulSet", "test-1", 10)
OTHER_STS_10 = workload("StatefulSet", "test-2", 10)


def make(args: Dict | None = None, pods: Sequence[Dict] = (), jobs: Sequence[Dict] = (),
         workloads: Sequence[Dict] = ()) -> MigrationFilter:
    stores = Stores.of(pods, jobs, workloads)
    return MigrationFilter(MigrationControllerArgs.model_validate(args or {}),
                           stores.job_lister, stores.finder)


def test_existing_job_blocks_the_pod() -> None:
    p = pod("test-pod", owners=[STS])
    assert make(pods=[p], workloads=[STS_10]).filter(p)
    assert not make(pods=[p], jobs=[job(p)], workloads=[STS_10]).filter(p)
    by_name = job(p)
    by_name["spec"]["podRef"].pop("uid")
    assert not make(pods=[p], jobs=[by_name], workloads=[STS_10]).filter(p)
    running = job(p, phase="Running")
    assert not make(pods=[p], jobs=[running], workloads=[STS_10]).filter(p)
    # Finished jobs no longer hold the pod.
    for phase in ("Succeeded", "Failed", "Aborted"):
        assert make(pods=[p], jobs=[job(p, phase=phase)], workloads=[STS_10]).filter(p)


def test_reservation_first_needs_the_koord_scheduler() -> None:
    p = pod("p", scheduler="default-scheduler", owners=[STS])
    assert not make(pods=[p], workloads=[STS_10]).filter(p)
    assert make({"schedulerNames": ["default-scheduler"]}, [p], [], [STS_10]).filter(p)
    assert make({"defaultJobMode": "EvictDirectly"}, [p], [], [STS_10]).filter(p)


def migrating(n: int, **kw: Any) -> tuple[list[Dict], list[Dict]]:
    pods = [pod(f"test-migrating-pod-{i}", **kw) for i in range(n)]
    return pods, [job(p, passed=True) for p in pods]


@pytest.mark.parametrize(("n", "same_pod", "same_node", "limit", "want"), [
    (0, False, True, 0, True),
    (0, False, True, 1, True),
    (1, True, True, 1, True),
    (1, False, True, 1, False),
    (1, False, False, 1, True),
    (2, True, True, 2, True),
    (2, False, False, 2, True),
    (2, False, True, 2, False),
])
def test_max_migrating_per_node(n: int, same_pod: bool, same_node: bool, limit: int,
                                want: bool) -> None:
    pods, jobs = migrating(n)
    target = pods[0] if same_pod else pod("test-pod")
    target["spec"]["nodeName"] = NODE if same_node else "other-node"
    f = make({"maxMigratingPerNode": limit}, pods=[*pods, target], jobs=jobs)
    assert f.retryable(target) is want
    assert f.retryable(target, arbitrating=True) is want


def test_max_migrating_per_node_ignores_unscheduled_pods_and_gate() -> None:
    pods, jobs = migrating(2)
    assert make({}, pods, jobs).retryable(pod("pending", node=""))
    assert not make({}, pods, jobs).retryable(pod("p"))  # default: 2 per node
    assert make({"skipEvictionGates": ["MaxMigratingPerNode"]}, pods, jobs).retryable(pod("p"))


@pytest.mark.parametrize(("n", "same_pod", "same_namespace", "limit", "want"), [
    (0, False, True, 0, True),
    (0, False, True, 1, True),
    (1, True, True, 1, True),
    (1, False, True, 1, False),
    (1, False, False, 1, True),
    (2, True, True, 2, True),
    (2, False, False, 2, True),
    (2, False, True, 2, False),
])
def test_max_migrating_per_namespace(n: int, same_pod: bool, same_namespace: bool, limit: int,
                                     want: bool) -> None:
    pods, jobs = migrating(n)
    target = pods[0] if same_pod else pod("test-pod", node="")
    if not same_namespace:
        target["metadata"]["namespace"] = "other-namespace"
    args = {"maxMigratingPerNamespace": limit, "maxMigratingPerNode": 0}
    assert make(args, pods=[*pods, target], jobs=jobs).retryable(target) is want
    gated = {**args, "skipEvictionGates": ["MaxMigratingPerNamespace"]}
    assert make(gated, pods=[*pods, target], jobs=jobs).retryable(target)


def test_max_migrating_globally() -> None:
    pods, jobs = migrating(2, node="")
    pods += [pod("other-ns", namespace="other", node="")]
    jobs += [job(pods[-1], phase="Running")]
    target = pod("test-pod", node="")
    assert make({"maxMigratingGlobally": 4}, pods, jobs).retryable(target)
    assert not make({"maxMigratingGlobally": 3}, pods, jobs).retryable(target)
    # The pod's own job does not count; 0 is unlimited.
    assert make({"maxMigratingGlobally": 3}, pods, jobs).retryable(pods[0])
    assert make({"maxMigratingGlobally": 0}, pods, jobs).retryable(target)
    gated = {"maxMigratingGlobally": 1, "skipEvictionGates": ["MaxMigratingGlobally"]}
    assert make(gated, pods, jobs).retryable(target)


@pytest.mark.parametrize(("n", "same_pod", "same_workload", "limit", "want"), [
    (0, False, False, 1, True),
    (1, True, True, 1, True),
    (1, False, True, 1, False),
    (1, False, False, 1, True),
    (2, True, True, 2, True),
    (2, False, True, 2, False),
    (2, False, False, 2, True),
])
def test_max_migrating_per_workload(n: int, same_pod: bool, same_workload: bool, limit: int,
                                    want: bool) -> None:
    pods, jobs = migrating(n, owners=[STS], node="")
    target = pods[0] if same_pod else pod("test-pod", owners=[STS], node="")
    if not same_workload:
        target["metadata"]["ownerReferences"] = [OTHER_STS]
    args = {"maxMigratingPerWorkload": limit, "maxUnavailablePerWorkload": 9}
    f = make(args, [*pods, target], jobs, [STS_10, OTHER_STS_10])
    assert f.retryable(target) is want
    gated = {**args, "skipEvictionGates": ["MaxMigratingPerWorkload"]}
    assert make(gated, [*pods, target], jobs, [STS_10, OTHER_STS_10]).retryable(target)


@pytest.mark.parametrize(("unavailable", "migrating_n", "same_workload", "limit", "want"), [
    (0, 0, True, 1, True),
    (1, 0, True, 1, False),
    (1, 0, False, 1, True),
    (1, 0, True, 2, True),
    (2, 0, True, 2, False),
    # Migrating pods count as unavailable.
    (1, 1, True, 2, False),
    (0, 1, True, 2, True),
])
def test_max_unavailable_per_workload(unavailable: int, migrating_n: int, same_workload: bool,
                                      limit: int, want: bool) -> None:
    down = [pod(f"down-{i}", owners=[STS], ready=False, node="") for i in range(unavailable)]
    pods, jobs = migrating(migrating_n, owners=[STS], node="")
    target = pod("test-pod", owners=[STS if same_workload else OTHER_STS], node="")
    args = {"maxMigratingPerWorkload": 5, "maxUnavailablePerWorkload": limit}
    f = make(args, [*down, *pods, target], jobs, [STS_10, OTHER_STS_10])
    assert f.retryable(target) is want
    gated = {**args, "skipEvictionGates": ["MaxUnavailablePerWorkload"]}
    assert make(gated, [*down, *pods, target], jobs, [STS_10, OTHER_STS_10]).retryable(target)


def test_arbitration_counts_only_passed_pending_jobs() -> None:
    pods = [pod(f"p{i}") for i in range(3)]
    pending, passed, running = job(pods[0]), job(pods[1], passed=True), job(pods[2],
                                                                            phase="Running")
    f = make({"maxMigratingPerNode": 2}, [*pods, pod("target")], [pending, passed, running])
    target = pod("target")
    # Outside arbitration every Pending job counts: 3 others on the node.
    assert not f.retryable(target)
    # Arbitrating: only the passed one and the Running one: 2 others.
    assert not f.retryable(target, arbitrating=True)
    f = make({"maxMigratingPerNode": 3}, [*pods, target], [pending, passed, running])
    assert not f.retryable(target)
    assert f.retryable(target, arbitrating=True)
    # A job passed earlier in this round counts although the informer has not seen it yet.
    assert not f.retryable(target, arbitrating=True, passed=[pending])


def test_evict_annotation_passes_both_groups() -> None:
    pods, jobs = migrating(3)
    marked = pod("bare-marked", annotations={ANNOTATION_EVICT: ""},
                 volumes=[{"name": "v", "emptyDir": {}}])
    f = make({"maxMigratingPerNode": 1, "namespaces": {"exclude": ["default"]}}, pods, jobs)
    assert f.non_retryable(marked) and f.retryable(marked)


RS = owner("ReplicaSet", "rs")


@pytest.mark.parametrize(("case", "args", "p", "want"), [
    ("bare pod", {}, pod("bare"), False),
    ("bare pod, evictAllBarePods", {"evictAllBarePods": True}, pod("bare"), True),
    ("bare pod, gate", {"skipEvictionGates": ["BarePods"]}, pod("bare"), True),
    ("failed bare pod", {"evictFailedBarePods": True}, pod("bare", phase="Failed"), True),
    ("DaemonSet pod", {}, pod("ds", owners=[owner("DaemonSet", "ds")]), False),
    ("mirror pod", {}, pod("m", owners=[RS], annotations={"kubernetes.io/config.mirror": "x"}),
     False),
    ("terminating", {}, {**pod("t", owners=[RS]),
                         "metadata": {**pod("t", owners=[RS])["metadata"],
                                      "deletionTimestamp": "2024-01-01T00:00:00Z"}}, False),
    ("system critical", {}, pod("c", owners=[RS], priority=2_000_000_000), False),
    ("system critical, gate", {"skipEvictionGates": ["SystemCritical"]},
     pod("c", owners=[RS], priority=2_000_000_000), True),
    ("priority threshold", {"priorityThreshold": {"value": 100}},
     pod("c", owners=[RS], priority=100), False),
    ("priority threshold, gate",
     {"priorityThreshold": {"value": 100}, "skipEvictionGates": ["PriorityThreshold"]},
     pod("c", owners=[RS], priority=100), True),
    ("local storage", {}, pod("l", owners=[RS], volumes=[{"name": "v", "emptyDir": {}}]), False),
    ("local storage, gate", {"skipEvictionGates": ["LocalStorage"]},
     pod("l", owners=[RS], volumes=[{"name": "v", "emptyDir": {}}]), True),
    ("pvc", {"ignorePvcPods": True},
     pod("v", owners=[RS], volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]),
     False),
    ("pvc, gate", {"ignorePvcPods": True, "skipEvictionGates": ["PVC"]},
     pod("v", owners=[RS], volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]),
     True),
    ("label selector", {"labelSelector": {"matchLabels": {"app": "x"}}}, pod("s", owners=[RS]),
     False),
    ("label selector matches", {"labelSelector": {"matchLabels": {"app": "x"}}},
     pod("s", owners=[RS], labels={"app": "x"}), True),
    ("label selector, gate",
     {"labelSelector": {"matchLabels": {"app": "x"}}, "skipEvictionGates": ["LabelSelector"]},
     pod("s", owners=[RS]), True),
    ("namespace excluded", {"namespaces": {"exclude": ["default"]}}, pod("n", owners=[RS]),
     False),
    ("namespace not included", {"namespaces": {"include": ["other"]}}, pod("n", owners=[RS]),
     False),
    ("namespaces, gate", {"namespaces": {"include": ["other"]}, "skipEvictionGates":
                          ["Namespaces"]}, pod("n", owners=[RS]), True),
    ("max eviction cost", {}, pod("e", owners=[RS],
                                  annotations={ANNOTATION_EVICTION_COST: "2147483647"}), False),
    ("lower eviction cost", {}, pod("e", owners=[RS],
                                    annotations={ANNOTATION_EVICTION_COST: "100"}), True),
])
def test_non_retryable(case: str, args: Dict, p: Dict, want: bool) -> None:
    rs = workload("ReplicaSet", "rs", 10)
    assert make(args, workloads=[rs]).non_retryable(p) is want, case


@pytest.mark.parametrize(("replicas", "args", "want"), [
    (1, {}, False),
    (10, {}, True),
    # maxMigrating or maxUnavailable equal to the replicas.
    (10, {"maxMigratingPerWorkload": 10}, False),
    (10, {"maxUnavailablePerWorkload": "100%"}, False),
    # 3 replicas: both default to 1.
    (3, {}, True),
    (1, {"skipCheckExpectedReplicas": True}, True),
    (1, {"skipEvictionGates": ["ExpectedReplicas"]}, True),
    # An unknown workload has no replicas to spare.
    (None, {}, False),
])
def test_expected_replicas(replicas: int | None, args: Dict, want: bool) -> None:
    workloads = [] if replicas is None else [workload("StatefulSet", "test-1", replicas)]
    assert make(args, workloads=workloads).non_retryable(pod("p", owners=[STS])) is want


def test_filter_is_all_of_it() -> None:
    target = pod("test-pod", owners=[STS])
    f = make({}, [target], [], [STS_10])
    assert f.filter(target) and f.pre_eviction_filter(target)
    assert not make({}, [target], [], [workload("StatefulSet", "test-1", 1)]).filter(target)
    pods, jobs = migrating(2)
    assert not make({}, [*pods, target], jobs, [STS_10]).filter(target)


def test_pre_eviction_filter_node_fit() -> None:
    def node(name: str, labels: dict[str, str] | None = None) -> Dict:
        return {"metadata": {"name": name, "labels": labels or {}},
                "status": {"allocatable": {"cpu": "4", "memory": "4Gi", "pods": "10"}}}

    target = pod("test-pod", owners=[STS])
    stores = Stores.of([target], [], [STS_10])
    nodes = Indexer()
    for n in (node(NODE), node("other", {"pool": "b"})):
        nodes.add(n)

    def flt(args: Dict) -> MigrationFilter:
        return MigrationFilter(MigrationControllerArgs.model_validate(args), stores.job_lister,
                               stores.finder, nodes=Lister(nodes, namespaced=False))

    assert flt({"nodeFit": True}).pre_eviction_filter(target)
    assert not flt({"nodeFit": True, "nodeSelector": "pool=a"}).pre_eviction_filter(target)
    assert flt({"nodeFit": True, "nodeSelector": "pool=a",
                "skipEvictionGates": ["NodeFit"]}).pre_eviction_filter(target)
    assert flt({"nodeSelector": "pool=a"}).pre_eviction_filter(target)
