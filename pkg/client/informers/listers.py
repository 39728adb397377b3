"""Listers: read-only, indexed views of an informer's store.

Corresponds to client-go's generated listers (``listers/core/v1`` and friends) built on
``cache.ListAll`` / ``ListAllByNamespace``: ``list(selector)``, ``get(name)``, and a
namespace-scoped view that uses the namespace index. Reads never touch the API server.
A selector is a ``pkg.util.labels.Selector``, a ``metav1.LabelSelector`` (model or JSON), a plain
``{label: value}`` mapping (equality on each), or ``None`` for everything.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from api.meta import LabelSelector
from pkg.client.informers.store import NAMESPACE_INDEX, Indexer, labels_of
from pkg.util.labels import Selector, parse_selector

T = TypeVar("T")

SelectorLike = Selector | LabelSelector | Mapping[str, Any] | None


def as_selector(selector: SelectorLike) -> Selector:
    if selector is None:
        return Selector.everything()
    if isinstance(selector, Selector):
        return selector
    if isinstance(selector, LabelSelector):
        return parse_selector(selector)
    if "matchLabels" in selector or "matchExpressions" in selector:
        return parse_selector(selector)
    return parse_selector({"matchLabels": dict(selector)})


class Lister(Generic[T]):
    """Reads over one informer's store."""

    def __init__(self, indexer: Indexer, namespaced: bool = True) -> None:
        self.indexer = indexer
        self.namespaced = namespaced

    def list(self, selector: SelectorLike = None) -> list[T]:
        sel = as_selector(selector)
        objs = self.indexer.list()
        if not sel.requirements and sel.requirements is not None:
            return objs
        return [o for o in objs if sel.matches(labels_of(o))]

    def get(self, name: str, namespace: str | None = None) -> T | None:
        """The object, or None when the cache does not have it."""
        key = f"{namespace}/{name}" if namespace and self.namespaced else name
        return self.indexer.get_by_key(key)

    def namespace(self, namespace: str) -> NamespaceLister[T]:
        return NamespaceLister(self.indexer, namespace)

    def by_index(self, index_name: str, value: str) -> builtins.list[T]:
        return self.indexer.by_index(index_name, value)


class NamespaceLister(Generic[T]):
    """Reads limited to one namespace."""

    def __init__(self, indexer: Indexer, namespace: str) -> None:
        self.indexer = indexer
        self.ns = namespace

    def list(self, selector: SelectorLike = None) -> list[T]:
        sel = as_selector(selector)
        if NAMESPACE_INDEX in self.indexer.indexers():
            objs = self.indexer.by_index(NAMESPACE_INDEX, self.ns)
        else:
            prefix = self.ns + "/"
            objs = [o for k, o in self.indexer.items() if k.startswith(prefix)]
        return [o for o in objs if sel.matches(labels_of(o))]

    def get(self, name: str) -> T | None:
        return self.indexer.get_by_key(f"{self.ns}/{name}")


__all__ = ["Lister", "NamespaceLister", "SelectorLike", "as_selector"]
