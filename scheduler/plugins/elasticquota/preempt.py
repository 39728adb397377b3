"""Preemption within a quota: the ElasticQuota plugin's policy for the preemption evaluator.

Corresponds to upstream ``pkg/scheduler/plugins/elasticquota/preempt.go``. Differences from
DefaultPreemption (§8.6): every potential node is a candidate (no sampling, offset 0); a pod
may only evict pods of its own quota that are preemptible, of strictly lower priority, and
not in the default quota while ``disableDefaultQuotaPreemption``; a nominated node's
terminating lower-priority pod blocks a new preemption only when it is of the same quota; and
reprieving a victim keeps it a victim when its return would take the quota's used plus the
pod's request over the limit snapshotted at PreFilter.
"""

from __future__ import annotations

from collections.abc import Callable

from api.extension.elastic_quota import DEFAULT_QUOTA_NAME, is_pod_non_preemptible
from pkg.util.reservation import is_reserve_pod
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.plugins.defaultpreemption.candidate import (
    Candidate,
    ScoreFunc,
    Victims,
)
from scheduler.framework.plugins.defaultpreemption.default_preemption import (
    NOT_ELIGIBLE_NEVER,
    NOT_ELIGIBLE_TERMINATING,
)
from scheduler.framework.plugins.defaultpreemption.evaluator import reprieve_victims
from scheduler.framework.plugins.defaultpreemption.pdb import (
    DisruptionBudget,
)
from scheduler.framework.status import Code, Status, unresolvable
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.interface import ExtendedHandle
from scheduler.plugins.elasticquota.state import QuotaCycleState


class QuotaPreemption:
    """A ``PreemptionPolicy``; ``quota_of`` maps a pod to the quota it is charged to."""

    def __init__(self, handle: ExtendedHandle, quota_of: Callable[[PodInfo], str],
                 state_of: Callable[[CycleState], QuotaCycleState | None], *,
                 disable_default_quota_preemption: bool) -> None:
        self.handle = handle
        self._quota_of = quota_of
        self._state_of = state_of
        self._protect_default = disable_default_quota_preemption

    def can_preempt(self, pod: PodInfo, victim: PodInfo) -> bool:
        # A reserve pod (a Reservation, only in the scheduler) is never a victim.
        if (is_pod_non_preemptible(victim.pod) or victim.priority >= pod.priority
                or is_reserve_pod(victim.pod)):
            return False
        quota = self._quota_of(victim)
        if self._protect_default and quota == DEFAULT_QUOTA_NAME:
            return False
        return quota == self._quota_of(pod)

    # PreemptionPolicy --------------------------------------------------------------------

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        return 0, num_nodes

    def candidates_to_victims_map(self, candidates: list[Candidate]) -> dict[str, Victims]:
        return {c.name: c.victims for c in candidates}

    def ordered_score_funcs(self, nodes_to_victims: dict[str, Victims]
                            ) -> list[ScoreFunc] | None:
        return None

    def pod_eligible_to_preempt_others(self, pod: PodInfo,
                                       nominated_node_status: Status | None) -> tuple[bool, str]:
        if pod.spec.get("preemptionPolicy") == "Never":
            return False, NOT_ELIGIBLE_NEVER
        nominated = (pod.pod.get("status") or {}).get("nominatedNodeName")
        if not nominated:
            return True, ""
        if nominated_node_status is not None and \
                nominated_node_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return True, ""
        ni = self.handle.snapshot.get(nominated)
        if ni is None:
            return True, ""
        quota = self._quota_of(pod)
        for p in ni.pods.values():
            if (p.pod.get("metadata") or {}).get("deletionTimestamp") and \
                    p.priority < pod.priority and self._quota_of(p) == quota:
                return False, NOT_ELIGIBLE_TERMINATING
        return True, ""

    def select_victims_on_node(self, state: CycleState, pod: PodInfo, node_info: NodeInfo,
                               budgets: list[DisruptionBudget]
                               ) -> tuple[list[PodInfo], int, Status | None]:
        potential = [p for p in node_info.pods.values() if self.can_preempt(pod, p)]
        if not potential:
            return [], 0, unresolvable(f"No victims found on node {node_info.name} for "
                                       f"preemptor pod {pod.name}")
        quota_state = self._state_of(state)
        # A victim also stays one when putting it back would exceed the quota.
        return reprieve_victims(self.handle, state, pod, node_info, potential, budgets,
                                None if quota_state is None else quota_state.request_fits)




__all__ = ["QuotaPreemption"]
