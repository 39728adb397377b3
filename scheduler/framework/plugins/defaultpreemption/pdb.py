"""PodDisruptionBudgets as preemption sees them: which victims would violate one.

Corresponds to kube-scheduler ``pkg/scheduler/framework/preemption`` (``getPodDisruptionBudgets``)
and ``plugins/defaultpreemption`` (``filterPodsWithPDBViolation``). PDBs are policy/v1 objects
(parsed JSON) read from the shared informer factory's cache; a PDB budgets the pods of its
namespace that its selector matches, and ``status.disruptionsAllowed`` says how many of them
may go. A nil, empty or invalid selector matches nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pkg.client.informers.listers import Lister
from pkg.client.resources import POD_DISRUPTION_BUDGETS
from pkg.util.labels import InvalidSelectorError, Selector, parse_selector
from scheduler.framework.types import PodInfo
from scheduler.frameworkext.interface import InformerFactory


@dataclass(frozen=True, slots=True)
class DisruptionBudget:
    namespace: str
    selector: Selector
    disruptions_allowed: int
    # Pods the API server already counted as disrupted (evictions it admitted).
    disrupted_pods: frozenset[str]


def pdb_lister(informer_factory: InformerFactory | None) -> Lister[Any] | None:
    """The PDB lister of ``informer_factory`` (registering the informer), or None."""
    if informer_factory is None:
        return None
    return informer_factory.informer_for(POD_DISRUPTION_BUDGETS, typed=False).lister


def budgets_of(pdbs: Iterable[dict[str, Any]]) -> list[DisruptionBudget]:
    """The PDBs that can match a pod, with their selectors parsed once."""
    out = []
    for pdb in pdbs:
        try:
            selector = parse_selector((pdb.get("spec") or {}).get("selector"))
        except InvalidSelectorError:
            continue
        if not selector.requirements:
            continue
        status = pdb.get("status") or {}
        out.append(DisruptionBudget(
            namespace=(pdb.get("metadata") or {}).get("namespace", ""),
            selector=selector,
            disruptions_allowed=int(status.get("disruptionsAllowed") or 0),
            disrupted_pods=frozenset(status.get("disruptedPods") or ())))
    return out


def filter_pods_with_pdb_violation(
        pods: Sequence[PodInfo],
        budgets: Sequence[DisruptionBudget]) -> tuple[list[PodInfo], list[PodInfo]]:
    """Split ``pods`` into (violating, non-violating), keeping their order.

    Each pod uses up one disruption of every budget that matches it, in order; a pod that
    drives a budget below zero violates it.
    """
    allowed = [b.disruptions_allowed for b in budgets]
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pod in pods:
        violated = False
        # A pod without labels matches no selector.
        if pod.labels:
            for i, b in enumerate(budgets):
                if b.namespace != pod.namespace or not b.selector.matches(pod.labels):
                    continue
                if pod.name in b.disrupted_pods:
                    # Already processed by the API server: counting it again would
                    # over-decrement the budget.
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(pod)
    return violating, non_violating
