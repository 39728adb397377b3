"""Test helpers for the descheduler framework: listers over plain stores, a fake API client."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
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
