"""The namespaces the plugin reads: labels of one, and the names a selector picks.

Corresponds to kube-scheduler ``plugins/interpodaffinity/plugin.go``
(``mergeAffinityTermNamespacesIfNotEmpty``, ``GetNamespaceLabelsSnapshot``), reading the
shared informer factory's Namespace cache. Without a factory no namespace has labels, so a
``namespaceSelector`` with requirements picks none (an empty one still picks every namespace).
"""

from __future__ import annotations

from pkg.client.resources import NAMESPACES
from scheduler.framework.plugins.interpodaffinity.terms import AffinityTerm
from scheduler.frameworkext.interface import InformerFactory


class Namespaces:
    def __init__(self, informer_factory: InformerFactory | None) -> None:
        self._lister = (None if informer_factory is None
                        else informer_factory.informer_for(NAMESPACES, typed=False).lister)

    def labels(self, namespace: str) -> dict[str, str]:
        """A copy of the namespace's labels; empty when the cache does not have it."""
        obj = None if self._lister is None else self._lister.get(namespace)
        return dict(((obj or {}).get("metadata") or {}).get("labels") or {})

    def merge(self, term: AffinityTerm) -> AffinityTerm:
        """The incoming pod's term with its namespace selector replaced by the namespaces it
        selects now, unless the selector is empty (every namespace) or absent (none)."""
        requirements = term.namespace_selector.requirements
        if not requirements:
            return term
        picked = () if self._lister is None else self._lister.list(term.namespace_selector)
        return term.with_namespaces(frozenset((ns.get("metadata") or {}).get("name", "")
                                              for ns in picked))
