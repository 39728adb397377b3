"""Which of the Reservations a pod's owners match it may use: reservation affinity, taints,
exact match.

Corresponds to upstream ``pkg/util/reservation`` (``RequiredReservationAffinity``,
``MatchReservationAffinity``, ``ExactMatchReservation`` as used by the Reservation plugin's
transformer, scheduler.md §7.2). A pod may name one Reservation
(``reservation-affinity`` ``name``), or select Reservations by their labels merged over their
node's labels (their own alone with the ``OmitNodeLabelsForReservation`` feature gate)
(``reservationSelector`` and ``requiredDuringSchedulingIgnoredDuringExecution``
terms, whose ``matchFields`` see the Reservation's name). Without a name, an unschedulable
Reservation, or one with a NoSchedule/NoExecute taint, is only for pods whose affinity
tolerates it. ``exact-match-reservation`` lists resources whose request must equal the
Reservation's allocatable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from api.extension.reservation import (
    ExactMatchReservationSpec,
    ReservationAffinity,
    exact_match_reservation,
    parse_exact_match_reservation_spec,
    parse_reservation_affinity,
)
from pkg.util.nodeaffinity import (
    DO_NOT_SCHEDULE_EFFECTS,
    NO_SCHEDULE,
    NodeSelector,
    find_untolerated_taint,
    match_node_selector,
    tolerates,
)
from pkg.util.reservation import requests_as_quantities
from scheduler.framework.types import PodInfo
from scheduler.plugins.reservation.cache import ReservationInfo

TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
REASON_AFFINITY_UNMATCHED = "didn't match affinity rules"
REASON_UNSCHEDULABLE = "is unschedulable"
REASON_NOT_EXACT_MATCHED = "is not exact matched"
_UNSCHEDULABLE_TAINT = {"key": TAINT_NODE_UNSCHEDULABLE, "effect": NO_SCHEDULE}


def _dump(model: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = model.model_dump(by_alias=True, exclude_none=True)
    return dumped


@dataclass(frozen=True, slots=True)
class PodReservationAffinity:
    """What a pod asks of the Reservations it uses (all optional)."""

    affinity: ReservationAffinity | None
    terms: NodeSelector | None
    tolerations: tuple[dict[str, Any], ...]
    exact: ExactMatchReservationSpec | None
    requests: Mapping[str, str]

    @classmethod
    def of(cls, pod: PodInfo) -> PodReservationAffinity:
        """Raises MalformedValueError (or InvalidSelectorError) for annotations that do not
        parse."""
        affinity = parse_reservation_affinity(pod.annotations)
        terms = None
        tolerations: tuple[dict[str, Any], ...] = ()
        if affinity is not None:
            required = affinity.required_during_scheduling_ignored_during_execution
            if required is not None and required.reservation_selector_terms:
                terms = NodeSelector.parse({"nodeSelectorTerms": [
                    _dump(t) for t in required.reservation_selector_terms]})
            tolerations = tuple(_dump(t) for t in affinity.tolerations or ())
        exact = parse_exact_match_reservation_spec(pod.annotations)
        return cls(affinity, terms, tolerations,
                   exact if exact is not None and exact.resource_names else None,
                   requests_as_quantities(pod.requests))

    @property
    def required(self) -> bool:
        """The pod must use a Reservation (it has an affinity)."""
        return self.affinity is not None

    @property
    def name(self) -> str:
        return self.affinity.name if self.affinity is not None else ""

    def mismatch(self, r: ReservationInfo, node_labels: Mapping[str, str]) -> str | None:
        """Why the pod (whose owners ``r`` matches) may not use ``r`` on its node, as the
        PostFilter diagnosis words it ("N Reservation(s) <why>"); None when it may."""
        if self.exact is not None and not exact_match_reservation(
                self.requests, r.allocatable_quantities, self.exact):
            return REASON_NOT_EXACT_MATCHED
        if self.name:
            return None if r.name == self.name else REASON_AFFINITY_UNMATCHED
        spec = r.reservation.spec
        if spec.unschedulable and not tolerates(self.tolerations, _UNSCHEDULABLE_TAINT):
            return REASON_UNSCHEDULABLE
        if spec.taints:
            taint = find_untolerated_taint((_dump(t) for t in spec.taints), self.tolerations,
                                           DO_NOT_SCHEDULE_EFFECTS)
            if taint is not None:
                return f"had untolerated taint {taint.get('key')}"
        if self.affinity is None:
            return None
        labels = {**node_labels, **(r.reservation.metadata.labels or {})}
        if not match_node_selector(self.affinity.reservation_selector, labels) or (
                self.terms is not None and not self.terms.matches(labels, r.name)):
            return REASON_AFFINITY_UNMATCHED
        return None


# A pod without reservation affinity or exact match.
NO_AFFINITY = PodReservationAffinity(None, None, (), None, {})


__all__ = ["NO_AFFINITY", "REASON_AFFINITY_UNMATCHED", "REASON_NOT_EXACT_MATCHED",
           "REASON_UNSCHEDULABLE", "PodReservationAffinity", "TAINT_NODE_UNSCHEDULABLE"]
