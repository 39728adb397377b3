"""The workload behind a pod: Deployment over ReplicaSet, bare ReplicaSet, StatefulSet,
ReplicationController; unknown kinds, missing objects and UID mismatches know no replicas;
siblings come from the owner-UID index (upstream controllerfinder's GetPodsForRef cases)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from descheduler.controllers.migration.controllerfinder import (
    ApiWorkloadGetter,
    ControllerFinder,
    controller_of,
    pod_owner_uid_index,
)
from descheduler.controllers.migration.testing import Stores, owner, pod, workload
from pkg.client.errors import ApiError
from pkg.client.resources import REPLICATION_CONTROLLERS, Resource

DEPLOY = workload("Deployment", "web", 5)
RS = workload("ReplicaSet", "web-abc", 3, owners=[owner("Deployment", "web")])
BARE_RS = workload("ReplicaSet", "lone", 4)
STS = workload("StatefulSet", "db", None)
RC = workload("ReplicationController", "old", 7, api_version="v1")


def finder_with(*pods: dict) -> Stores:
    return Stores.of(pods=pods, workloads=[DEPLOY, RS, BARE_RS, STS, RC])


def test_expected_replicas_per_kind() -> None:
    finder = finder_with().finder
    cases = {
        # A Deployment's ReplicaSet answers with the Deployment's replicas.
        "ReplicaSet/web-abc": (owner("ReplicaSet", "web-abc"), 5),
        "ReplicaSet/lone": (owner("ReplicaSet", "lone"), 4),
        # spec.replicas unset means 1.
        "StatefulSet/db": (owner("StatefulSet", "db"), 1),
        "ReplicationController/old": (owner("ReplicationController", "old",
                                            api_version="v1"), 7),
    }
    for what, (ref, want) in cases.items():
        assert finder.expected_replicas(pod("p", owners=[ref])) == want, what


def test_no_known_replicas() -> None:
    finder = finder_with().finder
    assert finder.expected_replicas(pod("bare")) is None
    clone_set = owner("CloneSet", "c", api_version="apps.kruise.io/v1alpha1")
    assert finder.expected_replicas(pod("p", owners=[clone_set])) is None
    assert finder.expected_replicas(pod("p", owners=[owner("ReplicaSet", "gone")])) is None
    # The object by that name is another incarnation.
    assert finder.expected_replicas(pod("p", owners=[owner("StatefulSet", "db", uid="x")])) is None
    # A wrong group is another kind.
    assert finder.expected_replicas(pod("p", owners=[owner("StatefulSet", "db",
                                                           api_version="v1")])) is None
    # Not the controller: only an owner.
    ref = {**owner("StatefulSet", "db"), "controller": False}
    assert controller_of(pod("p", owners=[ref])) is None
    assert finder.expected_replicas(pod("p", owners=[ref])) is None


def test_workload_pods_by_owner_uid() -> None:
    ref = owner("ReplicaSet", "web-abc")
    siblings = [pod(f"web-{i}", owners=[ref]) for i in range(3)]
    other = pod("lone-0", owners=[owner("ReplicaSet", "lone")])
    stores = finder_with(*siblings, other, pod("bare"))
    got = stores.finder.workload_pods(siblings[0])
    assert sorted(p["metadata"]["name"] for p in got) == ["web-0", "web-1", "web-2"]
    assert stores.finder.workload_pods(pod("bare")) == []
    assert pod_owner_uid_index(other) == ["replicaset-lone"]
    assert pod_owner_uid_index(pod("bare")) == []


class Server:
    """The API client's GET over a few ReplicationControllers; ``forbidden`` answers 403."""

    def __init__(self, *objs: dict, forbidden: bool = False) -> None:
        self.objs = {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in objs}
        self.forbidden = forbidden
        self.gets: list[tuple[str, str, str | None]] = []

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Any:
        self.gets.append((resource.plural, name, namespace))
        if self.forbidden:
            raise ApiError(403, "Forbidden", "replicationcontrollers is forbidden")
        if (namespace, name) not in self.objs:
            raise ApiError(404, "NotFound", f"{name} not found")
        return self.objs[(namespace, name)]


def test_replication_controllers_are_read_from_the_server_when_a_pod_names_one() -> None:
    server = Server(RC)
    listers = replace(finder_with().listers,
                      replication_controllers=ApiWorkloadGetter(server, REPLICATION_CONTROLLERS))
    finder = ControllerFinder(listers)
    rc_pod = pod("p", owners=[owner("ReplicationController", "old", api_version="v1")])
    assert finder.expected_replicas(rc_pod) == 7
    assert server.gets == [("replicationcontrollers", "old", "default")]
    # Pods of other workloads never ask the server.
    assert finder.expected_replicas(pod("q", owners=[owner("ReplicaSet", "lone")])) == 4
    assert len(server.gets) == 1
    missing = pod("m", owners=[owner("ReplicationController", "gone", api_version="v1")])
    assert finder.expected_replicas(missing) is None


def test_an_unreadable_replication_controller_leaves_the_workload_unknown() -> None:
    getter = ApiWorkloadGetter(Server(RC, forbidden=True), REPLICATION_CONTROLLERS)
    finder = ControllerFinder(replace(finder_with().listers, replication_controllers=getter))
    rc_pod = pod("p", owners=[owner("ReplicationController", "old", api_version="v1")])
    assert finder.expected_replicas(rc_pod) is None
