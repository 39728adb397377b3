"""Indexer: keys, indexes kept up to date through updates and deletes, custom indexers."""

from __future__ import annotations

import pytest

from api.meta import ObjectMeta
from api.slo.v1alpha1 import NodeMetric
from pkg.client.informers.store import (
    NAMESPACE_INDEX,
    NODE_NAME_INDEX,
    DeletedFinalStateUnknown,
    Indexer,
    meta_namespace_key,
    namespace_index,
    pod_node_name_index,
    split_key,
)


def pod(name: str, ns: str = "default", node: str | None = None, rv: str = "1",
        **labels: str) -> dict:
    return {"metadata": {"name": name, "namespace": ns, "resourceVersion": rv,
                         "labels": labels},
            "spec": {"nodeName": node} if node else {}}


def test_keys() -> None:
    assert meta_namespace_key(pod("a", "ns")) == "ns/a"
    assert meta_namespace_key({"metadata": {"name": "n1"}}) == "n1"
    assert meta_namespace_key(NodeMetric(metadata=ObjectMeta(name="n1"))) == "n1"
    assert meta_namespace_key(DeletedFinalStateUnknown("ns/a", None)) == "ns/a"
    assert meta_namespace_key("ns/a") == "ns/a"
    assert split_key("ns/a") == ("ns", "a") and split_key("n1") == ("", "n1")
    with pytest.raises(ValueError):
        split_key("a/b/c")
    with pytest.raises(KeyError):
        meta_namespace_key({"metadata": {}})


def test_crud_and_builtin_indexes() -> None:
    idx = Indexer(indexers={NAMESPACE_INDEX: namespace_index,
                            NODE_NAME_INDEX: pod_node_name_index})
    idx.add(pod("a", "ns1", "n1"))
    idx.add(pod("b", "ns1"))
    idx.add(pod("c", "ns2", "n1"))
    assert len(idx) == 3 and "ns1/a" in idx
    assert [o["metadata"]["name"] for o in idx.by_index(NAMESPACE_INDEX, "ns1")] == ["a", "b"]
    assert idx.index_keys(NODE_NAME_INDEX, "n1") == ["ns1/a", "ns2/c"]
    # b gets scheduled, a moves: the node index follows.
    idx.update(pod("b", "ns1", "n2"))
    idx.update(pod("a", "ns1", "n2"))
    assert idx.index_keys(NODE_NAME_INDEX, "n1") == ["ns2/c"]
    assert idx.index_keys(NODE_NAME_INDEX, "n2") == ["ns1/a", "ns1/b"]
    idx.delete(pod("c", "ns2"))
    assert idx.list_index_func_values(NODE_NAME_INDEX) == ["n2"]
    assert idx.list_index_func_values(NAMESPACE_INDEX) == ["ns1"]
    assert idx.get_by_key("ns2/c") is None
    assert [o["metadata"]["name"] for o in idx.index(NAMESPACE_INDEX, pod("x", "ns1"))] == \
        ["a", "b"]
    with pytest.raises(KeyError):
        idx.by_index("nope", "x")


def test_custom_multi_value_index_added_later() -> None:
    idx = Indexer()
    idx.add(pod("a", team="x", tier="web"))
    idx.add(pod("b", team="y", tier="web"))

    def by_label_values(o: dict) -> list[str]:
        return list(o["metadata"]["labels"].values())

    idx.add_indexers({"labels": by_label_values})
    assert idx.index_keys("labels", "web") == ["default/a", "default/b"]
    idx.add_indexers({"labels": by_label_values})  # same function: fine
    with pytest.raises(ValueError):
        idx.add_indexers({"labels": lambda o: []})
    idx.replace([pod("c", tier="db")])
    assert idx.list_keys() == ["default/c"]
    assert idx.list_index_func_values("labels") == ["db"]


def test_failing_index_function_does_not_corrupt_the_store() -> None:
    def picky(o: dict) -> list[str]:
        return [o["spec"]["needed"]]

    idx = Indexer(indexers={"picky": picky})
    idx.add(pod("a"))
    idx.add({"metadata": {"name": "b", "namespace": "default"}, "spec": {"needed": "v"}})
    assert len(idx) == 2 and idx.index_keys("picky", "v") == ["default/b"]
