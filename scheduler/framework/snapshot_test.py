"""The snapshot's arrays follow the cache: rebuilds, incremental updates, new resources."""

from __future__ import annotations

from scheduler.framework.cache import Cache
from scheduler.framework.snapshot import Snapshot


def _node(name: str, **alloc: str) -> dict:
    return {"metadata": {"name": name}, "status": {"allocatable": {"cpu": "4", **alloc}}}


def _pod(name: str, node: str, cpu: str, **extra: str) -> dict:
    return {"metadata": {"name": name, "namespace": "ns", "uid": name},
            "spec": {"nodeName": node, "containers": [
                {"name": "c", "resources": {"requests": {"cpu": cpu, **extra}}}]}}


def test_extended_resources_appear_as_rows_on_rebuild_and_update() -> None:
    cache, snap = Cache(), Snapshot()
    cache.add_node(_node("a"))
    cache.update_snapshot(snap)
    cache.add_node(_node("b", **{"nvidia.com/gpu": "8"}))  # a new row while rebuilding
    cache.update_snapshot(snap)
    assert list(snap.allocatable_of("nvidia.com/gpu")) == [0, 8]
    cache.add_pod(_pod("p", "b", "1500m", **{"example.com/fpga": "1"}))  # a row added in place
    cache.update_snapshot(snap)
    assert list(snap.requested_of("cpu")) == [0, 1500]
    assert list(snap.requested_of("example.com/fpga")) == [0, 1]
    assert list(snap.requested_of("pods")) == [0, 1]
    assert snap["b"].requested["cpu"] == 1500


def test_only_changed_nodes_are_copied_and_node_changes_clear_the_memo() -> None:
    cache, snap = Cache(), Snapshot()
    for n in "abc":
        cache.add_node(_node(n))
    cache.update_snapshot(snap)
    before = list(snap.node_infos)
    snap.memo["k"] = 1
    cache.add_pod(_pod("p", "b", "1"))
    cache.update_snapshot(snap)
    assert snap.node_infos[0] is before[0] and snap.node_infos[1] is not before[1]
    assert snap.memo == {"k": 1}  # pod changes keep node-only results
    cache.update_node(None, _node("c", memory="1Gi"))
    cache.update_snapshot(snap)
    assert snap.memo == {}
    assert snap.allocatable_of("memory")[2] == 1024 ** 3
