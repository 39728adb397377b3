"""A pod's (anti-)affinity terms, parsed once per pod.

Corresponds to kube-scheduler ``pkg/scheduler/framework/types.go`` (``AffinityTerm``,
``WeightedAffinityTerm``, ``getAffinityTerms``, ``getNamespacesFromPodAffinityTerm``) as the
InterPodAffinity plugin reads them from ``PodInfo``. A term without ``namespaces`` and without
``namespaceSelector`` means the pod's own namespace; a missing selector matches nothing, an
empty one everything. ``matchLabelKeys``/``mismatchLabelKeys`` are not read: since v1.33 the
API server merges them into ``labelSelector`` when the pod is created.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pkg.util.labels import InvalidSelectorError, Selector, parse_selector
from scheduler.framework.types import PodInfo

NAME = "InterPodAffinity"
_NOTHING = Selector.nothing()


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    namespaces: frozenset[str]
    selector: Selector
    topology_key: str
    namespace_selector: Selector

    def matches(self, namespace: str, labels: Mapping[str, str] | None,
                namespace_labels: Mapping[str, str] | None) -> bool:
        """Whether a pod of ``namespace`` with ``labels`` matches (upstream ``Matches``);
        ``namespace_labels`` are that namespace's labels, for the namespace selector."""
        if namespace in self.namespaces or self.namespace_selector.matches(namespace_labels):
            return self.selector.matches(labels)
        return False

    def matches_pod(self, pod: PodInfo, namespace_labels: Mapping[str, str] | None) -> bool:
        return self.matches(pod.namespace, pod.labels, namespace_labels)

    def matches_merged(self, pod: PodInfo) -> bool:
        """``matches_pod`` for the incoming pod's terms, whose namespace selector was merged
        into ``namespaces`` (``Namespaces.merge``): no namespace labels needed."""
        return self.matches(pod.namespace, pod.labels, None)

    @property
    def match_key(self) -> tuple[frozenset[str], Selector, Selector]:
        """What decides which pods match (the topology key does not)."""
        return self.namespaces, self.namespace_selector, self.selector

    def with_namespaces(self, names: frozenset[str]) -> AffinityTerm:
        """The term with the namespaces its selector picked merged in, and no selector."""
        return replace(self, namespaces=self.namespaces | names, namespace_selector=_NOTHING)


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    term: AffinityTerm
    weight: int


@dataclass(frozen=True, slots=True)
class PodAffinityTerms:
    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedAffinityTerm, ...] = ()
    # Why some terms did not parse (their group is left empty, as upstream's PodInfo does).
    error: str = ""


def _term(namespace: str, raw: Mapping[str, Any]) -> AffinityTerm:
    names = raw.get("namespaces") or []
    ns_selector = raw.get("namespaceSelector")
    namespaces = frozenset((namespace,) if not names and ns_selector is None else names)
    return AffinityTerm(namespaces, parse_selector(raw.get("labelSelector")),
                        raw.get("topologyKey") or "", parse_selector(ns_selector))


def _group(namespace: str, raw: Sequence[Mapping[str, Any]] | None, weighted: bool,
           errors: list[str]) -> tuple[Any, ...]:
    try:
        if weighted:
            return tuple(WeightedAffinityTerm(_term(namespace, t.get("podAffinityTerm") or {}),
                                              int(t.get("weight") or 0)) for t in raw or ())
        return tuple(_term(namespace, t) for t in raw or ())
    except InvalidSelectorError as err:
        errors.append(str(err))
        return ()


def parse_terms(namespace: str, affinity: Mapping[str, Any] | None) -> PodAffinityTerms:
    """The terms of ``spec.affinity`` of a pod in ``namespace``."""
    affinity = affinity or {}
    pa = affinity.get("podAffinity") or {}
    paa = affinity.get("podAntiAffinity") or {}
    if not pa and not paa:
        return _NONE
    errors: list[str] = []
    required, preferred = ("requiredDuringSchedulingIgnoredDuringExecution",
                           "preferredDuringSchedulingIgnoredDuringExecution")
    return PodAffinityTerms(
        _group(namespace, pa.get(required), False, errors),
        _group(namespace, paa.get(required), False, errors),
        _group(namespace, pa.get(preferred), True, errors),
        _group(namespace, paa.get(preferred), True, errors),
        "; ".join(errors))


def pod_terms(pod: PodInfo) -> PodAffinityTerms:
    """The pod's terms, parsed on first use and memoised in the PodInfo."""
    terms = pod.memo.get(NAME)
    if terms is None:
        terms = pod.memo[NAME] = (parse_terms(pod.namespace, pod.affinity)
                                  if pod.has_affinity else _NONE)
    return terms


def pod_dict_terms(pod: Mapping[str, Any]) -> PodAffinityTerms:
    """The terms of a pod given as its object (queueing hints)."""
    meta = pod.get("metadata") or {}
    return parse_terms(meta.get("namespace", ""), (pod.get("spec") or {}).get("affinity"))


def matches_all(terms: Sequence[AffinityTerm], namespace: str,
                labels: Mapping[str, str] | None) -> bool:
    """Upstream ``podMatchesAllAffinityTerms``: False without terms; the namespace selectors of
    the incoming pod's terms are already merged, so no namespace labels are needed."""
    if not terms:
        return False
    return all(t.matches(namespace, labels, None) for t in terms)


_NONE = PodAffinityTerms()
