"""Test helpers for the topology plugins: nodes, pods, snapshots and listers.

Shared by the InterPodAffinity and PodTopologySpread tests. Objects are the parsed JSON the
informers deliver.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from types import SimpleNamespace
from typing import Any

from pkg.client.informers.listers import Lister
from pkg.client.informers.store import NAMESPACE_INDEX, Indexer, namespace_index
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.types import NodeInfo, PodInfo

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"


def node(name: str, labels: Mapping[str, str] | None = None,
         taints: list[dict[str, Any]] | None = None, *, hostname: bool = True) -> dict[str, Any]:
    all_labels = {HOSTNAME: name} if hostname else {}
    all_labels.update(labels or {})
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Node",
                           "metadata": {"name": name, "labels": all_labels},
                           "spec": {},
                           "status": {"allocatable": {"cpu": "4", "memory": "8Gi",
                                                      "pods": "110"}}}
    if taints:
        obj["spec"]["taints"] = taints
    return obj


def pod(name: str, labels: Mapping[str, str] | None = None, *, node_name: str = "",
        namespace: str = "default", affinity: dict[str, Any] | None = None,
        spread: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "c"}], **spec}
    if node_name:
        body["nodeName"] = node_name
    if affinity:
        body["affinity"] = affinity
    if spread:
        body["topologySpreadConstraints"] = spread
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}",
                         "labels": dict(labels or {})},
            "spec": body, "status": {}}


def term(key: str, labels: Mapping[str, str] | None = None,
         **extra: Any) -> dict[str, Any]:
    """A PodAffinityTerm selecting ``labels`` (matchLabels) over ``key``."""
    t: dict[str, Any] = {"topologyKey": key, **extra}
    if labels is not None:
        t["labelSelector"] = {"matchLabels": dict(labels)}
    return t


def snapshot_of(nodes: Iterable[dict[str, Any]],
                pods: Iterable[dict[str, Any]] = ()) -> Snapshot:
    infos = {n["metadata"]["name"]: NodeInfo(n) for n in nodes}
    for p in pods:
        infos[p["spec"]["nodeName"]].add_pod(PodInfo(p))
    snap = Snapshot()
    snap.rebuild(list(infos.values()))
    return snap


class FakeInformers:
    """An informer factory whose listers hold fixed objects, by resource plural."""

    def __init__(self, objects: Mapping[str, Iterable[dict[str, Any]]] | None = None) -> None:
        self.objects = {k: list(v) for k, v in (objects or {}).items()}

    def informer_for(self, resource: Any, **kw: Any) -> Any:
        indexer = Indexer(indexers={NAMESPACE_INDEX: namespace_index}
                          if resource.namespaced else {})
        for obj in self.objects.get(resource.plural, ()):
            indexer.add(obj)
        return SimpleNamespace(lister=Lister(indexer, resource.namespaced))


def random_cluster(rng: random.Random, n_nodes: int, n_pods: int,
                   make_pod: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Nodes over 4 zones and 2 regions (some without zone or region) and pods on them;
    ``make_pod(name, node_name)`` builds each pod."""
    nodes = []
    for i in range(n_nodes):
        labels = {}
        if rng.random() < 0.9:
            labels[ZONE] = f"z{rng.randrange(4)}"
        if rng.random() < 0.8:
            labels[REGION] = f"r{rng.randrange(2)}"
        nodes.append(node(f"n{i}", labels, hostname=rng.random() < 0.95))
    pods = [make_pod(f"p{j}", f"n{rng.randrange(n_nodes)}") for j in range(n_pods)]
    return nodes, pods
