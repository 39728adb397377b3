"""Test helpers: nodes, pods and randomised snapshots for the noderesources tests."""

from __future__ import annotations

import random
from typing import Any

from scheduler.framework.snapshot import Snapshot
from scheduler.framework.types import NodeInfo, PodInfo

GPU = "example.com/gpu"
BATCH_CPU = "kubernetes.io/batch-cpu"


def make_node(name: str, **allocatable: Any) -> dict[str, Any]:
    """A node; ``allocatable`` keys use ``_`` for ``-`` (``ephemeral_storage``)."""
    alloc = {"pods": "110"}
    alloc.update({k.replace("_", "-"): str(v) for k, v in allocatable.items()})
    return {"metadata": {"name": name}, "status": {"allocatable": alloc}}


def make_pod(name: str, requests: dict[str, Any] | None = None,
             node: str = "") -> dict[str, Any]:
    """A pod with one container requesting ``requests`` (none: a best-effort container)."""
    main: dict[str, Any] = {"name": "c"}
    if requests is not None:
        main["resources"] = {"requests": {k: str(v) for k, v in requests.items()}}
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"nodeName": node, "containers": [main]}}


def node_info(node: dict[str, Any], *pods: dict[str, Any]) -> NodeInfo:
    ni = NodeInfo(node)
    for p in pods:
        ni.add_pod(PodInfo(p))
    return ni


def snapshot_of(*infos: NodeInfo) -> Snapshot:
    snap = Snapshot()
    snap.rebuild(list(infos))
    return snap


def random_requests(rng: random.Random, scalars: bool = True) -> dict[str, str] | None:
    """Random requests; sometimes none at all, sometimes without cpu or memory."""
    if rng.random() < 0.15:
        return None
    out: dict[str, str] = {}
    if rng.random() < 0.85:
        out["cpu"] = f"{rng.randrange(0, 6000, 50)}m"
    if rng.random() < 0.85:
        out["memory"] = str(rng.randrange(0, 12 * 2**30, 2**20))
    if rng.random() < 0.2:
        out["ephemeral-storage"] = str(rng.randrange(0, 20 * 2**30, 2**20))
    if scalars and rng.random() < 0.3:
        out[GPU] = str(rng.randrange(0, 4))
    if scalars and rng.random() < 0.3:
        out[BATCH_CPU] = str(rng.randrange(0, 8000, 100))
    return out


def random_snapshot(rng: random.Random, nodes: int = 60) -> Snapshot:
    """Nodes of random sizes (some without memory, gpus or batch-cpu), randomly loaded."""
    infos = []
    for i in range(nodes):
        alloc: dict[str, Any] = {"cpu": f"{rng.randrange(0, 16000, 500)}m",
                                 "pods": str(rng.randrange(1, 12))}
        if rng.random() < 0.95:
            alloc["memory"] = str(rng.randrange(0, 32 * 2**30, 2**28))
        if rng.random() < 0.5:
            alloc["ephemeral-storage"] = str(rng.randrange(0, 40 * 2**30, 2**28))
        if rng.random() < 0.4:
            alloc[GPU] = str(rng.randrange(0, 9))
        if rng.random() < 0.4:
            alloc[BATCH_CPU] = str(rng.randrange(0, 32000, 1000))
        node = {"metadata": {"name": f"n{i}"}, "status": {"allocatable": alloc}}
        pods = [make_pod(f"p{i}-{j}", random_requests(rng), f"n{i}")
                for j in range(rng.randrange(0, 10))]
        infos.append(node_info(node, *pods))
    return snapshot_of(*infos)
