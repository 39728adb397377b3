"""Topology spread constraints as the plugin reads them from a pod, and the system defaults.

Corresponds to kube-scheduler ``plugins/podtopologyspread/common.go`` (v1.35, with
NodeInclusionPolicyInPodTopologySpread and MatchLabelKeysInPodTopologySpread on): a
constraint's selector is parsed once, ``matchLabelKeys`` merged into it from the pod's labels;
``minDomains`` defaults to 1, ``nodeAffinityPolicy`` to Honor, ``nodeTaintsPolicy`` to Ignore.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pkg.util.labels import IN, Requirement, Selector, parse_selector

NAME = "PodTopologySpread"

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"

LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"

SYSTEM_DEFAULT_CONSTRAINTS: tuple[Mapping[str, Any], ...] = (
    {"topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
    {"topologyKey": LABEL_TOPOLOGY_ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5},
)


@dataclass(frozen=True, slots=True)
class Constraint:
    """One constraint with its selector parsed (upstream ``topologySpreadConstraint``)."""

    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE

    def with_selector(self, selector: Selector) -> Constraint:
        return replace(self, selector=selector)


def _set_requirements(labels: Mapping[str, str]) -> tuple[Requirement, ...]:
    return tuple(Requirement(k, IN, frozenset((v,))) for k, v in sorted(labels.items()))


def selector_from_set(labels: Mapping[str, str]) -> Selector:
    """``labels.SelectorFromSet``: every pair must hold."""
    return Selector(_set_requirements(labels))


def _merge_label_set(labels: Mapping[str, str], selector: Selector) -> Selector:
    # A selector that matches nothing stays so (upstream mergeLabelSetWithSelector).
    if selector.requirements is None:
        return selector
    return Selector(_set_requirements(labels) + selector.requirements)


def filter_constraints(constraints: Sequence[Mapping[str, Any]], pod_labels: Mapping[str, str],
                       action: str) -> tuple[Constraint, ...]:
    """The constraints with ``whenUnsatisfiable == action``, parsed (upstream
    ``filterTopologySpreadConstraints``); raises InvalidSelectorError for a bad selector."""
    out = []
    for c in constraints:
        if c.get("whenUnsatisfiable") != action:
            continue
        selector = parse_selector(c.get("labelSelector"))
        match = {k: pod_labels[k] for k in c.get("matchLabelKeys") or () if k in pod_labels}
        if match:
            selector = _merge_label_set(match, selector)
        min_domains = c.get("minDomains")
        out.append(Constraint(
            max_skew=int(c.get("maxSkew") or 0), topology_key=c.get("topologyKey") or "",
            selector=selector, min_domains=1 if min_domains is None else int(min_domains),
            node_affinity_policy=c.get("nodeAffinityPolicy") or HONOR,
            node_taints_policy=c.get("nodeTaintsPolicy") or IGNORE))
    return tuple(out)


def node_labels_match(labels: Mapping[str, str], constraints: Sequence[Constraint]) -> bool:
    """Whether the node has every constraint's topology key (nodeLabelsMatchSpreadConstraints)."""
    return all(c.topology_key in labels for c in constraints)


def pod_labels_match(constraints: Sequence[Constraint], labels: Mapping[str, str]) -> bool:
    """Whether any constraint's selector matches the labels (podLabelsMatchSpreadConstraints)."""
    return any(c.selector.matches(labels) for c in constraints)


def is_terminating(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))
