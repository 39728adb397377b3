"""Test helpers for the descheduler framework: nodes, pods and NodeMetrics as the informers
hold them, listers over plain stores, a fake API client."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from descheduler.framework.runtime import Listers
from descheduler.framework.types import Obj
from pkg.client.errors import ApiError
from pkg.client.informers.listers import Lister
from pkg.client.informers.store import NODE_NAME_INDEX, Indexer, pod_node_name_index


def listers(nodes: Sequence[Obj] = (), pods: Sequence[Obj] = (),
            node_metrics: Sequence[Obj] = ()) -> Listers:
    """Listers over stores holding ``nodes``, ``pods`` and ``node_metrics``."""
    node_store, metric_store = Indexer(), Indexer()
    pod_store = Indexer(indexers={NODE_NAME_INDEX: pod_node_name_index})
    for store, objs in ((node_store, nodes), (pod_store, pods), (metric_store, node_metrics)):
        for obj in objs:
            store.add(obj)
    return Listers(nodes=Lister(node_store, namespaced=False), pods=Lister(pod_store),
                   node_metrics=Lister(metric_store, namespaced=False))


@dataclass
class FakeClient:
    """Records every request; answers those whose path is in ``refuse`` with that ApiError."""

    requests: list[tuple[str, str, Any]] = field(default_factory=list)
    refuse: dict[str, ApiError] = field(default_factory=dict)

    def request(self, method: str, path: str, *, body: Any = None) -> Any:
        self.requests.append((method, path, body))
        if path in self.refuse:
            raise self.refuse[path]
        return {}

    def evicted(self) -> list[str]:
        """``namespace/name`` of each pod an Eviction was posted for."""
        return [f"{body['metadata']['namespace']}/{body['metadata']['name']}"
                for method, path, body in self.requests if path.endswith("/eviction")]


# The clock of the unit tests (NodeMetrics are stamped with it).
NOW = 1_700_000_000.0
RS = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-1"}]
DS = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": "ds-1"}]


def node(name: str, cpu: int = 4000, memory: int = 3000, pods: int = 9,
         unschedulable: bool = False, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels},
            "spec": {"unschedulable": unschedulable},
            "status": {"allocatable": {"cpu": f"{cpu}m", "memory": str(memory),
                                       "pods": str(pods)}}}


def pod(name: str, cpu: int, memory: int, node_name: str, owners: list[Any] | None = None,
        namespace: str = "default", **extra: Any) -> dict[str, Any]:
    requests = {"cpu": f"{cpu}m"} | ({"memory": str(memory)} if memory else {})
    obj: dict[str, Any] = {
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                     "ownerReferences": RS if owners is None else owners,
                     "annotations": extra.pop("annotations", {}),
                     "labels": extra.pop("labels", {}),
                     "creationTimestamp": extra.pop("created", "2024-01-01T00:00:00Z")},
        "spec": {"nodeName": node_name, "containers": [
            {"name": "c", "image": "nginx", "resources": {"requests": requests}}], **extra},
        "status": {"phase": "Running"}}
    return obj


def unevictable(node_name: str, memory: int = 0) -> list[dict[str, Any]]:
    """Upstream's p6–p8: a DaemonSet pod, a mirror pod with local storage, a critical pod."""
    return [pod("p6", 400, memory, node_name, DS),
            pod("p7", 400, memory, node_name, annotations={"kubernetes.io/config.mirror": "m"},
                volumes=[{"name": "s", "hostPath": {"path": "/p"}}]),
            pod("p8", 400, memory, node_name, [], namespace="kube-system",
                priority=2_000_000_000)]


def metrics(nodes: list[dict[str, Any]], pods: list[dict[str, Any]],
            usage: dict[str, dict[str, str]] | None = None,
            update_time: float = NOW) -> list[dict[str, Any]]:
    """One NodeMetric per node; each pod's usage is its requests unless ``usage`` says."""
    stamp = datetime.fromtimestamp(update_time, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    out = {n["metadata"]["name"]: {"metadata": {"name": n["metadata"]["name"]},
                                   "status": {"updateTime": stamp, "nodeMetric": {},
                                              "podsMetric": []}} for n in nodes}
    for p in pods:
        md = p["metadata"]
        key = f"{md['namespace']}/{md['name']}"
        used = (usage or {}).get(key, p["spec"]["containers"][0]["resources"]["requests"])
        out[p["spec"]["nodeName"]]["status"]["podsMetric"].append(
            {"namespace": md["namespace"], "name": md["name"], "podUsage": {"resources": used}})
    return list(out.values())
