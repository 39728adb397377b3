"""Listers read the cache with label selectors, per namespace."""

from __future__ import annotations

from api.meta import LabelSelector
from pkg.client.informers.listers import Lister
from pkg.client.informers.store import NAMESPACE_INDEX, Indexer, namespace_index
from pkg.util.labels import parse_selector


def obj(name: str, ns: str, **labels: str) -> dict:
    return {"metadata": {"name": name, "namespace": ns, "labels": labels}}


def names(objs: list[dict]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objs)


def test_list_with_every_selector_form() -> None:
    idx = Indexer(indexers={NAMESPACE_INDEX: namespace_index})
    for o in (obj("a", "n1", app="web"), obj("b", "n1", app="db"), obj("c", "n2", app="web")):
        idx.add(o)
    lister: Lister[dict] = Lister(idx)
    assert names(lister.list()) == ["a", "b", "c"]
    assert names(lister.list({"app": "web"})) == ["a", "c"]
    assert names(lister.list({"matchExpressions": [
        {"key": "app", "operator": "NotIn", "values": ["web"]}]})) == ["b"]
    assert names(lister.list(LabelSelector(match_labels={"app": "db"}))) == ["b"]
    assert names(lister.list(parse_selector({"matchLabels": {"app": "web"}}))) == ["a", "c"]
    got = lister.get("a", "n1")
    assert got is not None and got["metadata"]["name"] == "a"
    assert lister.get("a", "n2") is None
    n1 = lister.namespace("n1")
    assert names(n1.list()) == ["a", "b"]
    assert names(n1.list({"app": "web"})) == ["a"]
    assert n1.get("b") is not None and n1.get("c") is None


def test_namespace_lister_without_index_and_cluster_scoped_get() -> None:
    idx = Indexer()
    idx.add(obj("a", "n1"))
    idx.add({"metadata": {"name": "node-1"}})
    assert names(Lister(idx).namespace("n1").list()) == ["a"]
    assert Lister(idx, namespaced=False).get("node-1") is not None
