"""Which nodes and pods a Koordinator balance plugin works on: its ``nodeSelector``, and its
``evictableNamespaces`` and ``podSelectors`` over the framework's filter.

Corresponds to what koordinator's CustomPriority, FragmentationAware and ScaleDownBinPack
(``pkg/descheduler/framework/plugins/*``) each build in their constructor (``filterNodes``,
``filterPods`` and ``podutil.NewOptions().WithFilter(...).WithNamespaces(...)
.WithoutNamespaces(...)``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from api.meta import LabelSelector
from descheduler.apis.config.args import BalancePodSelector, Namespaces
from descheduler.framework.types import Evictor, Obj
from pkg.util.labels import Selector, parse_selector


def select_nodes(nodes: Sequence[Obj], selector: LabelSelector | None) -> list[Obj]:
    """The nodes whose labels ``selector`` matches (all when it is None)."""
    if selector is None:
        return list(nodes)
    parsed = parse_selector(selector)
    return [n for n in nodes if parsed.matches((n.get("metadata") or {}).get("labels") or {})]


class PodSelection:
    """Pods the plugin may evict: in an evictable namespace, matched by one of the pod
    selectors (any pod when none is set), and let through by the framework's filters."""

    def __init__(self, evictor: Evictor, namespaces: Namespaces | None,
                 pod_selectors: Iterable[BalancePodSelector]) -> None:
        self.evictor = evictor
        self.include = set(namespaces.include) if namespaces is not None else set()
        self.exclude = set(namespaces.exclude) if namespaces is not None else set()
        self.selectors: list[Selector] = [parse_selector(s.selector) for s in pod_selectors
                                          if s.selector is not None]

    def selected(self, pod: Obj) -> bool:
        """Matched by one of the pod selectors, whatever the namespace and filters say."""
        labels = (pod.get("metadata") or {}).get("labels") or {}
        return not self.selectors or any(s.matches(labels) for s in self.selectors)

    def __call__(self, pod: Obj) -> bool:
        namespace = (pod.get("metadata") or {}).get("namespace") or ""
        if namespace in self.exclude or self.include and namespace not in self.include:
            return False
        return self.selected(pod) and self.evictor.filter(pod)
